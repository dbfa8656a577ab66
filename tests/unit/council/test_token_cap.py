"""A cap in tokens applies beside the dollar caps: a model with no known price costs $0 as
far as a dollar cap can see, so only tokens bound it. Each call reserves its worst-case
tokens (input estimate + the output limit it is sent) before it starts; a call that would
cross the cap does not start, and the deliberation stops as at a cost cap."""

from __future__ import annotations

import re
from typing import Any

from bot.council.advisory import Advisory, Resolution, SeatState
from bot.council.budget import TokenBudget, TokenCapReached, TokenReservation
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger, Ledger
from bot.council.personas import load_catalog
from bot.tokens import TokenEstimator
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import FAKE_CAPABILITIES, FakeProviders, engine_request

ASSESS = "submit_assessment"
CATALOG = load_catalog()
UNPRICED = FAKE_CAPABILITIES.model_copy(
    update={
        "input_price": 0.0,
        "output_price": 0.0,
        "cache_write_price": 0.0,
        "cache_read_price": 0.0,
        "price_source": "unknown",
    }
)


def request(**kw: Any) -> DeliberationRequest:
    return engine_request("board", did="t-1", **kw)


async def deliberate(
    fake: FakeProviders, req: DeliberationRequest, ledger: Ledger | None = None
) -> Advisory:
    engine = Engine(fake, CATALOG, ledger or InMemoryLedger(), estimator=TokenEstimator())
    return await engine.deliberate(req)


def next_call_tokens(advisory: Advisory) -> int:
    assert advisory.reason is not None
    found = re.search(r"could have used up to ([\d,]+) tokens", advisory.reason)
    assert found is not None, advisory.reason
    return int(found.group(1).replace(",", ""))


async def first_call_tokens(fake: FakeProviders) -> int:
    """What the first call reserves: a cap of one token refuses it."""
    advisory = await deliberate(fake, request(max_spend_tokens=1))
    assert advisory.resolution == Resolution.COST_LIMIT and fake.calls == []
    return next_call_tokens(advisory)


def test_a_token_budget_holds_settles_and_refuses() -> None:
    budget = TokenBudget(cap_tokens=1_000, spent_tokens=100)
    held = budget.reserve(600, "assess/seat-1/0")
    assert isinstance(held, TokenReservation) and budget.charged_tokens == 700
    refused = budget.reserve(400, "assess/seat-2/0")
    assert isinstance(refused, TokenCapReached)
    assert (refused.charged_tokens, refused.amount_tokens) == (700, 400)
    assert str(refused) == "the token cap of 1,000 tokens (COUNCIL_MAX_SPEND_TOKENS)"
    budget.settle(held, 250)  # the call used fewer than its worst case
    assert budget.held == {} and budget.spent_tokens == 350
    again = budget.reserve(400, "assess/seat-2/0")
    assert isinstance(again, TokenReservation)
    budget.release(again)
    assert budget.charged_tokens == 350
    assert isinstance(TokenBudget(None).reserve(10**12, "x"), TokenReservation)


async def test_a_token_cap_stops_mid_assessment_and_says_why() -> None:
    fake = FakeProviders(CouncilScript(latency_s=1.0))
    each = await first_call_tokens(fake)
    cap = int(3.5 * each)  # three reservations fit, a fourth does not
    advisory = await deliberate(fake, request(max_spend_tokens=cap))
    # Five seats at once, each a second long: only three calls ever started.
    assert [c.tool for c in fake.calls] == [ASSESS] * 3
    assert advisory.resolution == Resolution.COST_LIMIT
    assert advisory.reason is not None
    assert advisory.reason.startswith(
        f"The token cap of {cap:,} tokens (COUNCIL_MAX_SPEND_TOKENS) stopped the council "
        "after 3 of 5 assessments (the next call could have used up to "
    )
    assert cap / 4 < next_call_tokens(advisory) <= cap / 3
    states = sorted(s.state for s in advisory.seats)
    assert states == [SeatState.OK] * 3 + [SeatState.SKIPPED] * 2
    skipped = [s for s in advisory.seats if s.state is SeatState.SKIPPED]
    assert all(s.error and "not called: the token cap of" in s.error for s in skipped)
    # What ran is what counts: the three answers, and their tokens, well under the cap.
    assert advisory.usage.tokens == fake.usage.total_input_tokens + fake.usage.output_tokens
    assert advisory.usage.tokens <= cap


async def test_a_resumed_deliberation_counts_the_tokens_its_ledger_holds() -> None:
    fake = FakeProviders(CouncilScript(latency_s=0.5))
    each = await first_call_tokens(fake)
    ledger = InMemoryLedger()
    first = await deliberate(fake, request(max_spend_tokens=int(3.5 * each)), ledger)
    assert first.resolution == Resolution.COST_LIMIT
    used, made = first.usage.tokens, len(fake.calls)
    assert used > 0
    # Resumed with a cap that leaves less than one call's worst case once those are counted
    # (without counting them, the cap would look nearly untouched).
    resumed = await deliberate(fake, request(max_spend_tokens=used + each // 2), ledger)
    assert len(fake.calls) == made  # no new call started
    assert resumed.resolution == Resolution.COST_LIMIT
    assert resumed.reason is not None and "The token cap of" in resumed.reason
    assert "after 3 of 5 assessments" in resumed.reason


async def test_without_a_token_cap_nothing_changes() -> None:
    uncapped = FakeProviders(CouncilScript())
    plain = await deliberate(uncapped, request())
    assert request().max_spend_tokens is None
    roomy = FakeProviders(CouncilScript())
    capped = await deliberate(roomy, request(max_spend_tokens=10**9))
    assert plain.resolution == capped.resolution == Resolution.APPROVED
    assert len(uncapped.calls) == len(roomy.calls) == 16
    assert plain.usage.tokens == capped.usage.tokens


async def test_the_token_cap_bounds_a_model_with_no_price() -> None:
    """A dollar cap cannot see an unpriced model's calls; the token cap can."""
    fake = FakeProviders(CouncilScript(latency_s=0.2), capabilities=UNPRICED)
    free_run = await deliberate(fake, request(max_cost_usd=0.000_001))
    assert free_run.resolution == Resolution.APPROVED  # every call "cost" $0
    assert free_run.usage.cost_usd == 0 and free_run.usage.unpriced_models == list(
        dict.fromkeys(s.model for s in free_run.seats)
    )
    each = await first_call_tokens(FakeProviders(CouncilScript(), capabilities=UNPRICED))
    fake = FakeProviders(CouncilScript(latency_s=0.2), capabilities=UNPRICED)
    capped = await deliberate(
        fake, request(max_cost_usd=0.000_001, max_spend_tokens=int(2.5 * each))
    )
    assert capped.resolution == Resolution.COST_LIMIT
    assert [c.tool for c in fake.calls] == [ASSESS] * 2
    assert capped.reason and "after 2 of 5 assessments" in capped.reason
