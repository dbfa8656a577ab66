"""Output budgets follow the phase and the model: an answer asks for its phase's budget, at
most 8,192 tokens (clipped to what the model allows, in the request and in the reservation
alike); an answer cut off at that limit is asked again for a shorter one, and counted;
reasoning tokens are carried to the usage, and both survive a replay from the ledger."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot.council import prompts
from bot.council.advisory import Advisory, Resolution, SeatState
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import EventKind, InMemoryLedger, Ledger
from bot.council.personas import load_catalog
from bot.tokens import TokenEstimator
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import (
    FAKE_CAPABILITIES,
    Answer,
    FakeProviders,
    ProviderFault,
    engine_request,
)

ASSESS = "submit_assessment"
VOTE = "submit_vote"
CATALOG = load_catalog()
SHORTER = prompts.reask_shorter()


def request(protocol: str = "board", **kw: Any) -> DeliberationRequest:
    return engine_request(protocol, **kw)


async def deliberate(
    fake: FakeProviders, req: DeliberationRequest | None = None, ledger: Ledger | None = None
) -> Advisory:
    engine = Engine(fake, CATALOG, ledger or InMemoryLedger(), estimator=TokenEstimator())
    return await engine.deliberate(req or request())


def test_an_answer_may_run_to_8192_tokens_by_default() -> None:
    assert request().max_tokens == 8192


async def test_every_call_asks_for_its_phase_budget_under_the_8192_ceiling() -> None:
    fake = FakeProviders(CouncilScript())
    await deliberate(fake)
    asked = {c.tool: c.request.max_tokens for c in fake.calls}
    assert asked == {
        ASSESS: prompts.ASSESS_TOOL.max_tokens,
        "submit_discussion": prompts.DISCUSS_TOOL.max_tokens,
        VOTE: prompts.VOTE_TOOL.max_tokens,
        "submit_synthesis": prompts.SYNTH_TOOL.max_tokens,
    }
    assert max(asked.values()) < 8192 and len(set(asked.values())) == 4
    # A lower ceiling holds every budget under it.
    lower = FakeProviders(CouncilScript())
    await deliberate(lower, request(max_tokens=1000))
    assert {c.request.max_tokens for c in lower.calls} == {1000, prompts.VOTE_TOOL.max_tokens}


async def test_the_reservation_holds_the_output_limit_the_model_allows() -> None:
    """A model that allows 2,000 output tokens is reserved 2,000, not the 6,656 asked."""

    async def worst_first_call(max_output: int) -> int:
        caps = FAKE_CAPABILITIES.model_copy(update={"max_output_tokens": max_output})
        fake = FakeProviders(CouncilScript(), capabilities=caps)
        advisory = await deliberate(fake, request(max_spend_tokens=1))
        assert fake.calls == [] and advisory.reason is not None
        found = re.search(r"could have used up to ([\d,]+) tokens", advisory.reason)
        assert found is not None
        return int(found.group(1).replace(",", ""))

    assessment = prompts.ASSESS_TOOL.output_tokens(8192)  # the first call's budget
    assert await worst_first_call(16_384) - await worst_first_call(2_000) == assessment - 2000


async def test_a_truncated_assessment_is_reasked_for_a_shorter_answer() -> None:
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-2", tool=ASSESS, reply=ProviderFault.truncated(), times=1)
    advisory = await deliberate(fake)
    cut, again = fake.calls_for(seat="seat-2", tool=ASSESS)
    assert cut.status == "invalid_output" and not cut.reask
    # The re-ask asks for a shorter answer, not the generic "answer again, completely".
    assert again.reask and SHORTER in again.text
    assert "Your previous answer was incomplete" not in again.text
    assert "fewer and shorter findings" in SHORTER and prompts.reask("x") != SHORTER
    seat = next(s for s in advisory.seats if s.seat_id == "seat-2")
    assert seat.state is SeatState.OK and seat.assessment is not None
    assert advisory.usage.truncated == 1
    # Both calls are paid for: the cut-off one for a full output limit (its budget).
    assert cut.usage.output_tokens == prompts.ASSESS_TOOL.max_tokens and cut.cost_usd > 0
    assert advisory.usage.calls == len(fake.calls)
    assert advisory.usage.cost_usd == pytest.approx(fake.cost_usd)
    assert advisory.usage.output_tokens == fake.usage.output_tokens
    assert advisory.resolution == Resolution.APPROVED


async def test_a_truncated_vote_is_reasked_for_a_shorter_answer() -> None:
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-1", tool=VOTE, reply=ProviderFault.truncated(), times=1)
    advisory = await deliberate(fake)
    cut, again = fake.calls_for(seat="seat-1", tool=VOTE)
    assert not cut.reask and again.reask and SHORTER in again.text
    assert next(s for s in advisory.seats if s.seat_id == "seat-1").vote is not None
    assert advisory.usage.truncated == 1


async def test_an_invalid_answer_that_was_not_cut_off_gets_the_generic_reask() -> None:
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-1", tool=VOTE, reply=ProviderFault.invalid(), times=1)
    advisory = await deliberate(fake)
    _, again = fake.calls_for(seat="seat-1", tool=VOTE)
    assert "Your previous answer was incomplete" in again.text and SHORTER not in again.text
    assert advisory.usage.truncated == 0


async def test_reasoning_tokens_are_summed_within_the_output_tokens() -> None:
    fake = FakeProviders(CouncilScript())
    fake.on(tool=ASSESS, reply=Answer(reasoning_tokens=300))
    advisory = await deliberate(fake)
    assessed = len(fake.calls_for(tool=ASSESS))
    assert advisory.usage.reasoning_tokens == 300 * assessed == fake.usage.reasoning_tokens
    assert advisory.usage.output_tokens == fake.usage.output_tokens
    assert advisory.usage.output_tokens > advisory.usage.reasoning_tokens


async def test_a_replay_from_the_ledger_keeps_truncations_and_reasoning_tokens() -> None:
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-3", tool=ASSESS, reply=ProviderFault.truncated(), times=1)
    fake.on(tool=ASSESS, reply=Answer(reasoning_tokens=120))
    ledger = InMemoryLedger()
    first = await deliberate(fake, ledger=ledger)
    made = len(fake.calls)
    returned = [e.payload for e in await ledger.events("d-1") if e.kind is EventKind.SEAT_RETURNED]
    assert sum(p["truncated"] is True for p in returned) == 1
    reasoning = [p["reasoning"] for p in returned]
    assert all(isinstance(r, int) for r in reasoning)
    assert sum(r for r in reasoning if isinstance(r, int)) == first.usage.reasoning_tokens > 0

    second = await deliberate(fake, ledger=ledger)
    assert len(fake.calls) == made  # every step replayed, none paid twice
    assert second.usage.truncated == first.usage.truncated == 1
    assert second.usage.reasoning_tokens == first.usage.reasoning_tokens
    assert second.usage.cost_usd == pytest.approx(first.usage.cost_usd)


async def test_a_truncated_panel_design_is_reasked_for_a_shorter_one() -> None:
    fake = FakeProviders(CouncilScript(panelists=3))
    fake.on(tool="submit_panel", reply=ProviderFault.truncated(), times=1)
    advisory = await deliberate(fake, request("debate"))
    cut, again = fake.calls_for(tool="submit_panel")
    assert not cut.reask and again.reask and SHORTER in again.text
    assert len(advisory.seats) == 3 and advisory.usage.truncated == 1
