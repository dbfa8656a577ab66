"""Diversity that works on every model: a single-model council's samples differ by their
reviewing strategies always, and by temperature only where the model accepts one; a seat's
temperature is None where its model takes none, and no text claims a temperature that was
not sent (the advisory's notes, the comment, the terminal, the check run)."""

from __future__ import annotations

import re
from typing import Any

from bot.council.advisory import Advisory
from bot.council.convene import samples_note
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.prompts import seat_brief
from bot.council.seats import SAMPLE_STRATEGIES, SAMPLE_TEMPERATURES, neutral_seat
from bot.render import render_check_run, render_comment
from bot.render.terminal import render_text, summary_line
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import FAKE_CAPABILITIES, FakeProviders, engine_request

ASSESS = "submit_assessment"
CATALOG = load_catalog()
SOLO = "fake:solo"
WARM = "fake:warm"  # takes a temperature
COLD = "fake:cold"  # takes none (as claude-sonnet-5-5 and gpt-5.4)
NO_TEMPERATURE = FAKE_CAPABILITIES.model_copy(update={"accepts_temperature": False})
TEMPERATURE = FAKE_CAPABILITIES.model_copy(update={"accepts_temperature": True})


def request(protocol: str = "council", **kw: Any) -> DeliberationRequest:
    return engine_request(protocol, **kw)


async def deliberate(fake: FakeProviders, req: DeliberationRequest) -> Advisory:
    return await Engine(fake, CATALOG, InMemoryLedger()).deliberate(req)


def first_asks(fake: FakeProviders) -> list[Any]:
    return [c for c in fake.calls_for(tool=ASSESS) if not c.reask]


def temperature_claims(text: str) -> list[str]:
    """Every mention of a temperature in `text`, with the words around it."""
    return [
        text[max(0, m.start() - 40) : m.end() + 40]
        for m in re.finditer("temperature", text, flags=re.IGNORECASE)
    ]


def everything_said(advisory: Advisory) -> str:
    check = render_check_run(advisory)
    return "\n".join(
        [
            *advisory.notes,
            render_comment(advisory),
            render_text(advisory),
            summary_line(advisory),
            check.title,
            check.summary,
            check.text or "",
        ]
    )


async def test_samples_of_a_model_without_temperature_differ_by_their_reviewing_strategies() -> (
    None
):
    fake = FakeProviders(CouncilScript(), model_capabilities={SOLO: NO_TEMPERATURE})
    advisory = await deliberate(fake, request(models=[SOLO]))
    asks = first_asks(fake)
    assert len(asks) == 3 and {c.model for c in asks} == {SOLO}
    # Three different requests: each sample's prompt carries its own strategy, and only it.
    assert len({c.text for c in asks}) == 3
    for strategy in SAMPLE_STRATEGIES:
        assert sum(strategy.text in c.text for c in asks) == 1
    assert len({next(s.name for s in SAMPLE_STRATEGIES if s.text in c.text) for c in asks}) == 3
    # No temperature is sent, to any call of the deliberation.
    assert fake.calls and all(c.request.temperature is None for c in fake.calls)
    assert (
        f"Single-model council: 3 samples of {SOLO}, each with a distinct reviewing strategy "
        "(the model takes no temperature)."
    ) in advisory.notes


async def test_samples_of_a_model_that_takes_a_temperature_get_both() -> None:
    fake = FakeProviders(CouncilScript(), model_capabilities={SOLO: TEMPERATURE})
    advisory = await deliberate(fake, request(models=[SOLO]))
    asks = first_asks(fake)
    assert sorted(c.request.temperature for c in asks) == list(SAMPLE_TEMPERATURES)
    for strategy in SAMPLE_STRATEGIES:
        assert sum(strategy.text in c.text for c in asks) == 1
    # A sample keeps its temperature in every phase (the ranking too).
    by_seat: dict[str, set[float | None]] = {}
    for call in fake.calls:
        if call.seat.startswith("seat-"):
            by_seat.setdefault(call.seat, set()).add(call.request.temperature)
    assert sorted(t for temps in by_seat.values() for t in temps if t is not None) == sorted(
        SAMPLE_TEMPERATURES
    )
    assert (
        f"Single-model council: 3 samples of {SOLO} at temperatures 0.3/0.7/1.0 and with "
        "distinct reviewing strategies."
    ) in advisory.notes


async def test_a_persona_temperature_is_sent_only_to_a_model_that_takes_one() -> None:
    fake = FakeProviders(
        CouncilScript(), model_capabilities={WARM: TEMPERATURE, COLD: NO_TEMPERATURE}
    )
    advisory = await deliberate(fake, request("board", models=[WARM, COLD]))
    persona = {s.seat_id: CATALOG.personas[s.persona_id] for s in advisory.seats}
    model = {s.seat_id: s.model for s in advisory.seats}
    assert set(model.values()) == {WARM, COLD}
    seat_calls = [c for c in fake.calls if c.seat in model]
    assert seat_calls
    for call in seat_calls:
        if model[call.seat] == COLD:
            assert call.request.temperature is None
        else:
            assert call.request.temperature == persona[call.seat].temperature
    assert any(c.request.temperature is not None for c in seat_calls)  # WARM's were sent
    # The officers never get one.
    assert all(c.request.temperature is None for c in fake.calls if c.seat not in model)


async def test_a_multi_model_council_claims_no_temperature() -> None:
    fake = FakeProviders(CouncilScript(), model_capabilities={WARM: TEMPERATURE})
    advisory = await deliberate(fake, request(models=[WARM, COLD]))
    assert all(c.request.temperature is None for c in fake.calls)
    assert temperature_claims(everything_said(advisory)) == []


async def test_nothing_said_claims_a_temperature_that_was_not_sent() -> None:
    """Where the model takes no temperature, the only mention of one says so; where it
    takes one, every temperature the advisory names is one that was sent."""
    cold = FakeProviders(CouncilScript(), model_capabilities={SOLO: NO_TEMPERATURE})
    said = everything_said(await deliberate(cold, request(models=[SOLO])))
    claims = temperature_claims(said)
    assert claims, "the note says what varied"
    assert all("takes no temperature" in claim for claim in claims), claims

    warm = FakeProviders(CouncilScript(), model_capabilities={SOLO: TEMPERATURE})
    said = everything_said(await deliberate(warm, request(models=[SOLO])))
    sent = {c.request.temperature for c in warm.calls} - {None}
    named = {float(t) for t in re.findall(r"\b(\d\.\d)\b", " ".join(temperature_claims(said)))}
    assert named and named <= sent


def test_the_note_names_temperatures_only_when_every_sample_has_one() -> None:
    strategies = SAMPLE_STRATEGIES
    cold = [neutral_seat(i + 1, SOLO, None, s) for i, s in enumerate(strategies)]
    warm = [
        neutral_seat(i + 1, SOLO, t, s)
        for i, (t, s) in enumerate(zip(SAMPLE_TEMPERATURES, strategies, strict=True))
    ]
    assert samples_note(SOLO, cold).endswith("(the model takes no temperature).")
    assert "at temperatures 0.3/0.7/1.0" in samples_note(SOLO, warm)


def test_a_seat_brief_carries_its_strategy() -> None:
    seat = neutral_seat(1, SOLO, None, SAMPLE_STRATEGIES[1]).model_copy(
        update={"label": "Member A"}
    )
    brief = seat_brief(seat)
    assert SAMPLE_STRATEGIES[1].text in brief and SAMPLE_STRATEGIES[1].name in brief
    assert "reviewing strategy" not in seat_brief(neutral_seat(1, SOLO))
