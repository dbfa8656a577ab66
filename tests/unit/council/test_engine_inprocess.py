"""The deliberation engine on in-process fake providers: no HTTP, no SDK, milliseconds a run.

What these check is the engine's own logic - resolution from scripted votes, re-asks and
dropped seats, timeouts, the phases a protocol runs, resume from the ledger - through the
call log of `tests.support.fake_provider`. The SDKs and the wire are `test_engine.py`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest

from bot.council.advisory import Advisory, Resolution, SeatState
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import EventKind, InMemoryLedger, Ledger
from bot.council.personas import load_catalog
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import (
    DEFAULT_MODELS,
    Answer,
    FakeProviders,
    ProviderFault,
    ReplySpec,
    engine_request,
)

ASSESS = "submit_assessment"
DISCUSS = "submit_discussion"
VOTE = "submit_vote"
SYNTH = "submit_synthesis"
SEATS = [f"seat-{i}" for i in range(1, 6)]
CATALOG = load_catalog()


def request(protocol: str = "board", *, did: str = "d-1", **kw: Any) -> DeliberationRequest:
    return engine_request(protocol, did=did, **kw)


async def deliberate(
    fake: FakeProviders, req: DeliberationRequest | None = None, ledger: Ledger | None = None
) -> Advisory:
    return await Engine(fake, CATALOG, ledger or InMemoryLedger()).deliberate(req or request())


def votes_by_seat(advisory: Advisory) -> dict[str, str | None]:
    return {s.seat_id: s.vote.vote if s.vote else None for s in advisory.seats}


def reject(fake: FakeProviders, seats: Iterable[str]) -> None:
    fake.on(seat=seats, tool=VOTE, reply=Answer(update={"vote": "REJECT"}))


# --- board: resolution from the scripted votes ----------------------------------------------


async def test_five_approvals_without_conditions_approve() -> None:
    fake = FakeProviders(CouncilScript(vote="APPROVE"))
    fake.on(tool=VOTE, reply=Answer(update={"conditions": []}))
    advisory = await deliberate(fake)
    assert advisory.resolution == Resolution.APPROVED
    assert advisory.conditions == [] and not advisory.partial
    assert sorted(s.seat_id for s in advisory.seats) == SEATS
    assert all(s.state == SeatState.OK for s in advisory.seats)
    assert set(votes_by_seat(advisory).values()) == {"APPROVE"}
    tools = fake.tools()
    assert (tools.count(ASSESS), tools.count(DISCUSS), tools.count(VOTE)) == (5, 5, 5)
    assert tools.count(SYNTH) == 1 and len(tools) == 16
    assert [c.seat for c in fake.calls_for(tool=SYNTH)] == ["chair"]
    assert advisory.synthesis is not None
    assert {s.model for s in advisory.seats} == set(DEFAULT_MODELS)


async def test_three_rejections_of_five_reject() -> None:
    fake = FakeProviders(CouncilScript(vote="APPROVE"))
    reject(fake, SEATS[:3])
    advisory = await deliberate(fake)
    assert advisory.resolution == Resolution.REJECTED
    assert votes_by_seat(advisory) == {s: "REJECT" if s in SEATS[:3] else "APPROVE" for s in SEATS}
    assert advisory.conditions == []


async def test_a_bare_majority_approves_with_the_approvers_conditions() -> None:
    fake = FakeProviders(CouncilScript(vote="APPROVE"))
    reject(fake, SEATS[:2])
    fake.on(tool=VOTE, reply=Answer(update={"conditions": ["Add the regression test."]}))
    advisory = await deliberate(fake)
    assert advisory.resolution == Resolution.APPROVED_WITH_CONDITIONS
    assert advisory.conditions == ["Add the regression test."]


async def test_usage_is_what_the_providers_charged() -> None:
    fake = FakeProviders()
    advisory = await deliberate(fake)
    assert advisory.usage.calls == len(fake.calls) == 16
    assert advisory.usage.input_tokens == fake.usage.input_tokens > 0
    assert advisory.usage.output_tokens == fake.usage.output_tokens > 0
    assert advisory.usage.cost_usd == pytest.approx(fake.cost_usd)
    # Later phases send the transcript so far: a vote reads more than an assessment.
    first_assess = fake.calls_for(seat="seat-1", tool=ASSESS)[0]
    vote = fake.calls_for(seat="seat-1", tool=VOTE)[0]
    assert vote.usage.input_tokens > first_assess.usage.input_tokens


# --- assessments that fail -------------------------------------------------------------------

# Valid, but no answer: no summary, concern, finding or lens analysis. (An answer that only
# leaves lenses unscored is kept after the re-asks: test_engine_lens_names.py.)
EMPTY = Answer(
    update={"summary": "", "lens_scores": [], "concerns": [], "red_flags": [], "findings": []}
)


@pytest.mark.parametrize(
    "bad",
    [ProviderFault.invalid(), ProviderFault.off_topic(), EMPTY],
    ids=["schema", "prose", "gate"],
)
async def test_an_invalid_assessment_is_reasked_then_the_seat_dropped(bad: Answer) -> None:
    fake = FakeProviders()
    fake.on(seat="seat-2", tool=ASSESS, reply=bad)
    advisory = await deliberate(fake)
    asked = fake.calls_for(seat="seat-2", tool=ASSESS)
    assert [c.reask for c in asked] == [False, True, True]  # two re-asks, then it is dropped
    assert all("Your previous answer was incomplete" in c.text for c in asked[1:])
    seat = next(s for s in advisory.seats if s.seat_id == "seat-2")
    assert seat.state == SeatState.INVALID and seat.assessment is None
    assert seat.error is not None and "re-asks" in seat.error
    assert fake.calls_for(seat="seat-2", tool=DISCUSS) == []
    assert fake.calls_for(seat="seat-2", tool=VOTE) == []
    assert advisory.partial and any("(invalid)" in m for m in advisory.missing_perspectives)
    assert advisory.resolution == Resolution.APPROVED  # four valid approvals still carry it
    # Every answer was charged, the refused ones included.
    assert advisory.usage.calls == len(fake.calls)
    assert advisory.usage.input_tokens == fake.usage.input_tokens


async def test_an_answer_valid_on_the_reask_keeps_the_seat() -> None:
    fake = FakeProviders()
    fake.on(seat="seat-2", tool=ASSESS, reply=ProviderFault.invalid(), times=1)
    advisory = await deliberate(fake)
    asked = fake.calls_for(seat="seat-2", tool=ASSESS)
    assert [(c.reask, c.status) for c in asked] == [(False, "invalid_output"), (True, "ok")]
    assert "did not match the schema" in asked[1].text
    seat = next(s for s in advisory.seats if s.seat_id == "seat-2")
    assert seat.state == SeatState.OK and seat.vote is not None


@pytest.mark.parametrize(
    ("fault", "state", "status"),
    [
        (ProviderFault.timeout(), SeatState.TIMED_OUT, "timeout"),
        (ProviderFault.hang(), SeatState.TIMED_OUT, "timeout"),
        (ProviderFault.rate_limited(), SeatState.ERROR, "rate_limited"),
    ],
    ids=["timeout", "hang", "rate-limited"],
)
async def test_a_seat_whose_call_fails_is_recorded_without_a_reask(
    fault: ReplySpec, state: SeatState, status: str
) -> None:
    fake = FakeProviders()
    fake.on(seat="seat-3", tool=ASSESS, reply=fault)
    # A hang runs into the call's own deadline, the assessment timeout.
    advisory = await deliberate(fake, request(assessment_timeout_s=0.2))
    asked = fake.calls_for(seat="seat-3", tool=ASSESS)
    assert [(c.reask, c.status) for c in asked] == [(False, status)]
    seat = next(s for s in advisory.seats if s.seat_id == "seat-3")
    assert seat.state == state and seat.error
    assert f"{seat.persona_name} ({state.value})" in advisory.missing_perspectives
    assert len(fake.calls_for(tool=VOTE)) == 4
    assert advisory.resolution == Resolution.APPROVED


async def test_no_quorum_when_only_one_seat_answers() -> None:
    fake = FakeProviders()
    fake.on(seat=SEATS[1:], tool=ASSESS, reply=ProviderFault.server_error())
    advisory = await deliberate(fake)
    assert advisory.resolution == Resolution.NO_QUORUM
    assert advisory.reason and "fewer than 2 valid assessments" in advisory.reason.lower()
    assert set(fake.tools()) == {ASSESS}  # no discussion, vote or synthesis is paid for


# --- protocols ----------------------------------------------------------------------------


async def test_quick_runs_three_assessments_and_a_synthesis_and_no_vote() -> None:
    fake = FakeProviders(CouncilScript(verdict="APPROVE"))
    advisory = await deliberate(fake, request("quick", did="q-1"))
    assert Counter(fake.tools()) == {ASSESS: 3, SYNTH: 1}
    assert fake.tools()[-1] == SYNTH
    assert len(advisory.seats) == 3 and all(s.vote is None for s in advisory.seats)
    assert advisory.resolution == Resolution.APPROVED and advisory.rounds == []


async def test_quick_with_concerns_but_no_merge_conditions_approves() -> None:
    # Concerns are not conditions (issue 11): only merge_conditions are.
    fake = FakeProviders(CouncilScript(verdict="APPROVE"))
    fake.on(seat="seat-1", tool=ASSESS, reply=Answer(update={"verdict": "CONCERNS"}))
    advisory = await deliberate(fake, request("quick", did="q-2"))
    assert advisory.resolution == Resolution.APPROVED
    assert advisory.conditions == []


async def test_quick_with_merge_conditions_approves_with_conditions() -> None:
    fake = FakeProviders(CouncilScript(verdict="APPROVE"))
    fake.on(
        seat="seat-1",
        tool=ASSESS,
        reply=Answer(update={"verdict": "CONCERNS", "merge_conditions": ["Bound the retry loop."]}),
    )
    advisory = await deliberate(fake, request("quick", did="q-3"))
    assert advisory.resolution == Resolution.APPROVED_WITH_CONDITIONS
    assert advisory.conditions == ["Bound the retry loop."]


# --- resume -------------------------------------------------------------------------------


async def test_a_second_run_on_the_same_ledger_makes_no_new_calls() -> None:
    fake = FakeProviders()
    reject(fake, ["seat-4"])
    ledger = InMemoryLedger()
    first = await deliberate(fake, ledger=ledger)
    made = len(fake.calls)
    second = await deliberate(fake, ledger=ledger)
    assert len(fake.calls) == made
    assert second.resolution == first.resolution == Resolution.APPROVED
    assert votes_by_seat(second) == votes_by_seat(first)
    assert [s.persona_id for s in second.seats] == [s.persona_id for s in first.seats]
    # Replayed steps still count in the usage, so the advisory says what the review cost.
    assert second.usage.calls == first.usage.calls == made
    assert second.usage.cost_usd == pytest.approx(first.usage.cost_usd)
    kinds = [e.kind for e in await ledger.events("d-1")]
    assert kinds.count(EventKind.SEAT_CALLED) == made
    assert kinds.count(EventKind.SYNTHESIZED) == 1


async def test_a_call_cancelled_before_its_response_begins_is_cancelled_too() -> None:
    """A deliberation stopped while a streamed call waits for its first token leaves no call
    running with nobody to read it (asyncio would log "Task exception was never retrieved"
    when it failed later)."""
    import asyncio

    from bot.council.calls import _streamed
    from bot.providers import StartedCall

    release = asyncio.Event()

    async def slow() -> None:
        await release.wait()
        raise RuntimeError("the provider failed after the deliberation stopped")

    task = asyncio.create_task(slow())
    started: StartedCall[Any] = StartedCall(task=task)  # type: ignore[arg-type]
    waiter = asyncio.create_task(_streamed(started, asyncio.Event()))
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.sleep(0)
    assert task.cancelled()
