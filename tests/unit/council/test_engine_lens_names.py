"""Lens scores as real models write them: paraphrased names, lenses left out, "not applicable".

A seat whose answer names its lenses in other words is complete (no re-ask) and is shown with
the brief's names; one that still leaves lenses out after the re-asks is kept, those lenses
"not scored"; only a non-answer is dropped. In-process fakes (`tests.support.fake_provider`).
"""

from __future__ import annotations

from typing import Any

from bot.cli.report import advisory_json
from bot.council.advisory import Advisory, Resolution, SeatReport, SeatState
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.render import render_comment
from bot.render.terminal import render_text
from tests.support.council_answers import CouncilScript, lenses_of
from tests.support.fake_provider import (
    Answer,
    FakeCall,
    FakeProviders,
    ProviderFault,
    engine_request,
)

ASSESS = "submit_assessment"
DISCUSS = "submit_discussion"
CATALOG = load_catalog()
FINDING = {
    "severity": "major",
    "path": "app/retry.py",
    "start_line": 2,
    "end_line": None,
    "title": "Retry loop has no bound",
    "detail": "retry(request) spins on every 429.",
    "suggestion": "Cap the attempts.",
}


async def deliberate(fake: FakeProviders, req: DeliberationRequest | None = None) -> Advisory:
    return await Engine(fake, CATALOG, InMemoryLedger()).deliberate(req or engine_request())


def lens_rows(seat: SeatReport) -> list[tuple[str, int | None]]:
    assert seat.assessment is not None
    return [(s.lens, s.score) for s in seat.assessment.lens_scores]


async def test_a_board_that_paraphrases_every_lens_name_convenes_without_a_reask() -> None:
    fake = FakeProviders(CouncilScript(lens_names="paraphrase"))
    advisory = await deliberate(fake)
    assert advisory.resolution == Resolution.APPROVED
    assert len(advisory.valid_seats()) == 5 and not advisory.partial
    asked = fake.calls_for(tool=ASSESS)
    assert len(asked) == 5 and not any(c.reask for c in asked)
    comment = render_comment(advisory)
    for seat in advisory.seats:
        assert seat.state == SeatState.OK and seat.unscored_lenses == []
        # The answers named no lens as the brief does ...
        call = next(c for c in asked if c.seat == seat.seat_id)
        written = [e["lens"] for e in fake.script.answer(ASSESS, call.text)["lens_scores"]]  # type: ignore[index]
        assert not set(written) & set(seat.lenses)
        # ... and the advisory shows the brief's names, each on its own lens's analysis.
        assert [lens for lens, _ in lens_rows(seat)] == seat.lenses
        assert seat.assessment is not None
        for entry in seat.assessment.lens_scores:
            assert entry.analysis == f"Checked {entry.lens} in the diff."
            assert f"| {entry.lens} | 7/10 |" in comment
    assert "not scored" not in comment


async def test_seats_that_score_one_lens_are_kept_after_the_reasks_the_rest_not_scored() -> None:
    fake = FakeProviders(CouncilScript(verdict="CONCERNS", lens_limit=1))
    fake.on(tool=ASSESS, reply=Answer(update={"findings": [FINDING]}))
    advisory = await deliberate(fake)
    assert advisory.resolution.is_verdict  # not NO_QUORUM
    assert len(advisory.valid_seats()) == 5 and not advisory.partial
    for seat in advisory.seats:
        asked = fake.calls_for(seat=seat.seat_id, tool=ASSESS)
        # Re-asked once; the re-ask scored no lens more, so it is not asked a third time.
        assert [c.reask for c in asked] == [False, True]
        missing = seat.lenses[1:]
        assert all(f'"{lens}"' in asked[1].text for lens in missing)  # the re-ask names them
        assert seat.state == SeatState.OK and seat.error is None
        assert seat.unscored_lenses == missing
        assert lens_rows(seat) == [(seat.lenses[0], 7)]
        assert seat.assessment is not None and seat.assessment.verdict == "CONCERNS"
        assert seat.assessment.concerns and seat.vote is not None
    # Every seat's finding and concern reach the advisory.
    assert [f.title for f in advisory.findings] == ["Retry loop has no bound"]
    assert advisory.findings[0].consensus == 5
    comment = render_comment(advisory)
    assert "Retry loop has no bound" in comment
    for seat in advisory.seats:
        assert f"{seat.persona_name}: error handling in the new path" in comment
        assert f"| {seat.lenses[0]} | 7/10 |" in comment
        assert all(f"| {lens} | not scored |" in comment for lens in seat.unscored_lenses)
    text = render_text(advisory, width=400)
    assert text.count("Not scored: ") == 5
    assert f"Not scored: {', '.join(advisory.seats[0].unscored_lenses)}" in text
    seats = advisory_json(advisory, comment)["seats"]
    assert [s["unscored_lenses"] for s in seats] == [s.unscored_lenses for s in advisory.seats]
    assert all(s["state"] == "ok" and s["unscored_lenses"] for s in seats)


async def test_an_answer_completed_on_the_reask_scores_every_lens() -> None:
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-2", tool=ASSESS, reply=ProviderFault.incomplete(), times=1)
    advisory = await deliberate(fake)
    seat = next(s for s in advisory.seats if s.seat_id == "seat-2")
    assert [c.reask for c in fake.calls_for(seat="seat-2", tool=ASSESS)] == [False, True]
    assert seat.state == SeatState.OK and seat.unscored_lenses == []
    assert [lens for lens, _ in lens_rows(seat)] == seat.lenses


async def test_a_reask_that_fails_keeps_the_earlier_answer() -> None:
    fake = FakeProviders(CouncilScript(lens_limit=2))
    fake.on(lambda c: c.reask, seat="seat-3", tool=ASSESS, reply=ProviderFault.timeout())
    advisory = await deliberate(fake)
    seat = next(s for s in advisory.seats if s.seat_id == "seat-3")
    assert [(c.reask, c.status) for c in fake.calls_for(seat="seat-3", tool=ASSESS)] == [
        (False, "ok"),
        (True, "timeout"),
    ]
    assert seat.state == SeatState.OK and seat.unscored_lenses == seat.lenses[2:]
    assert len(advisory.valid_seats()) == 5


async def test_a_deferral_is_still_dropped() -> None:
    fake = FakeProviders(CouncilScript(lens_limit=1))
    deferral = Answer(
        update={
            "summary": "Please provide the full repository; I will review it once you share it.",
            "lens_scores": [],
            "concerns": [],
            "red_flags": [],
            "findings": [],
        }
    )
    fake.on(seat="seat-2", tool=ASSESS, reply=deferral)
    advisory = await deliberate(fake)
    assert len(fake.calls_for(seat="seat-2", tool=ASSESS)) == 3
    dropped = next(s for s in advisory.seats if s.seat_id == "seat-2")
    assert dropped.state == SeatState.INVALID and dropped.assessment is None
    assert dropped.error is not None and "review it now" in dropped.error
    assert advisory.partial and f"{dropped.persona_name} (invalid)" in advisory.missing_perspectives
    assert len(advisory.valid_seats()) == 4 and advisory.resolution == Resolution.APPROVED


def not_applicable(fake: FakeProviders) -> Any:
    """The script's answer with its first lens marked not applicable (score null)."""

    def reply(call: FakeCall) -> Answer:
        data = fake.script.answer(ASSESS, call.text)
        assert data is not None
        data["lens_scores"][0].update(score=None, analysis="No such code in this change.")
        return Answer(json=data)

    return reply


async def test_a_not_applicable_lens_renders_as_na() -> None:
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-1", tool=ASSESS, reply=not_applicable(fake))
    advisory = await deliberate(fake)
    seat = next(s for s in advisory.seats if s.seat_id == "seat-1")
    assert len(fake.calls_for(seat="seat-1", tool=ASSESS)) == 1  # n/a is an answer
    lens = lenses_of(fake.calls_for(seat="seat-1", tool=ASSESS)[0].text)[0]
    assert seat.state == SeatState.OK and seat.unscored_lenses == []
    assert lens_rows(seat)[0] == (lens, None)
    comment = render_comment(advisory)
    assert f"| {lens} | n/a | No such code in this change. |" in comment
    # The other members read it as n/a too.
    assert f"{lens}: n/a" in fake.calls_for(tool=DISCUSS)[0].text
