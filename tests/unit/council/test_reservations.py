"""A call reserves what it is likely to cost: its input estimate and the 95th percentile of
its model's last 50 answers, the worst case only for a model never seen; and a call is
never sent a `max_tokens` the cap has no room for.

On the in-process fake providers, the in-memory budget and the in-memory answer sizes (the
store's, shared by every worker, are tests/unit/store/test_answer_sizes.py; the App's, end to
end, tests/service/test_reservations.py).
"""

from __future__ import annotations

import pytest

from bot.council import prompts
from bot.council.advisory import Advisory, Resolution
from bot.council.board import BoardConfig
from bot.council.budget import Budget, InMemoryBudget
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.reserving import (
    FLOOR_OUTPUT_TOKENS,
    InMemoryAnswerSizes,
    percentile_95,
    plan_for_input,
)
from bot.tokens import TokenEstimator
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import (
    DEFAULT_MODELS,
    FAKE_CAPABILITIES,
    FakeProviders,
    ProviderFault,
    engine_request,
)

CATALOG = load_catalog()
ALPHA, BETA = DEFAULT_MODELS
OUTPUT_PRICE = FAKE_CAPABILITIES.output_price / 1e6  # USD per output token
LIMIT = 8192  # every answer's ceiling (DeliberationRequest.max_tokens)
# What an assessment asks for: its budget under that ceiling (bot/council/schemas.py).
ASSESS_LIMIT = prompts.ASSESS_TOOL.output_tokens(LIMIT)


def seeded(**sizes: list[int]) -> InMemoryAnswerSizes:
    """Answer sizes with `alpha=[...]`, `beta=[...]` recorded for the fake's two models."""
    known = InMemoryAnswerSizes()
    for name, values in sizes.items():
        known.sizes[f"fake:{name}"] = list(values)
    return known


async def deliberate(
    fake: FakeProviders,
    budget: Budget,
    sizes: InMemoryAnswerSizes | None,
    request: DeliberationRequest | None = None,
) -> Advisory:
    # A fresh estimator: reservations do not depend on what earlier tests calibrated.
    engine = Engine(fake, CATALOG, InMemoryLedger(), estimator=TokenEstimator(), answer_sizes=sizes)
    return await engine.deliberate(request or engine_request(), budget=budget)


def test_the_95th_percentile_is_the_nearest_rank() -> None:
    assert percentile_95([]) is None
    assert percentile_95([700]) == 700
    assert percentile_95(list(range(1, 101))) == 95
    # 50 answers: the 48th smallest, so the two longest do not set it.
    assert percentile_95([*[100] * 48, 5000, 9000]) == 100
    assert percentile_95([*[100] * 47, 4000, 5000, 9000]) == 4000


async def test_the_percentile_follows_the_last_50_answers_only() -> None:
    sizes = InMemoryAnswerSizes()
    for _ in range(30):
        await sizes.record(ALPHA, 8000)  # long answers, long ago
    for n in range(1, 51):
        await sizes.record(ALPHA, n * 10)
    assert await sizes.p95(ALPHA) == 480
    assert await sizes.p95(BETA) is None  # never seen
    await sizes.record(ALPHA, 8000)  # one more: the oldest of the fifty (10) goes
    assert await sizes.p95(ALPHA) == 490


async def test_a_seen_model_reserves_its_p95_and_one_never_seen_its_worst_case() -> None:
    """The same board twice: with nothing recorded every call holds a full answer (an
    assessment's budget); with alpha's answers recorded (p95 300), alpha's seats hold 300
    tokens of answer and beta's, never seen, still the full budget."""
    worst, known = InMemoryBudget(None), InMemoryBudget(None)
    first = await deliberate(FakeProviders(CouncilScript()), worst, InMemoryAnswerSizes())
    second = await deliberate(FakeProviders(CouncilScript()), known, seeded(alpha=[300] * 20))
    assert first.resolution == second.resolution == Resolution.APPROVED
    model_of = {s.seat_id: s.model for s in second.seats}
    assert {s.seat_id: s.model for s in first.seats} == model_of
    assert set(model_of.values()) == {ALPHA, BETA}

    # The assessments are reserved at once, before any answer is back (and recorded).
    def assessments(budget: InMemoryBudget) -> dict[str, float]:
        return {
            r.label.split("/")[1]: r.amount_usd
            for r in budget.reservations
            if r.label.startswith("assess/")
        }

    held_worst, held_known = assessments(worst), assessments(known)
    assert held_worst.keys() == held_known.keys() == model_of.keys()
    for seat, model in model_of.items():
        saved = (ASSESS_LIMIT - 300) * OUTPUT_PRICE if model == ALPHA else 0.0
        assert held_worst[seat] - held_known[seat] == pytest.approx(saved, abs=1e-12)
    # Every answer came back and is recorded: after the board, beta is seen too.
    assert len(first.seats) == 5


async def test_answers_are_recorded_and_later_calls_follow_them() -> None:
    sizes = InMemoryAnswerSizes()
    fake = FakeProviders(CouncilScript())
    budget = InMemoryBudget(None)
    await deliberate(fake, budget, sizes)
    for model in DEFAULT_MODELS:
        answered = [c.usage.output_tokens for c in fake.calls if c.model == model]
        assert sizes.sizes[model] == answered[-50:] and answered
    # The synthesis is reserved after every other answer: at its model's p95, not 8,192.
    (synthesis,) = [r for r in budget.reservations if r.label.startswith("synthesize/")]
    (call,) = fake.calls_for(tool="submit_synthesis")
    p95 = percentile_95([c.usage.output_tokens for c in fake.calls[:-1] if c.model == call.model])
    assert p95 is not None and p95 < 1000
    assert synthesis.amount_usd < 1000 * OUTPUT_PRICE + 0.05
    # No cap: sent its full budget.
    assert call.request.max_tokens == prompts.SYNTH_TOOL.output_tokens(LIMIT)


async def test_a_board_capped_at_three_times_its_spend_completes_once_its_models_are_seen() -> None:
    """Capped at 3x what the board costs but below its worst cases: with nothing recorded it
    stops (as every board did before); once the models' answers are known, it completes."""
    sizes = InMemoryAnswerSizes()
    measured = FakeProviders(CouncilScript())
    await deliberate(measured, InMemoryBudget(None), sizes)  # the models are seen
    cap = 3 * measured.cost_usd
    assert cap < 5 * ASSESS_LIMIT * OUTPUT_PRICE  # five assessments' worst cases do not fit

    blind = await deliberate(FakeProviders(CouncilScript()), InMemoryBudget(cap), None)
    assert blind.resolution == Resolution.COST_LIMIT

    fake = FakeProviders(CouncilScript())
    budget = InMemoryBudget(cap)
    advisory = await deliberate(fake, budget, sizes, engine_request(did="b-2"))
    assert advisory.resolution == Resolution.APPROVED and advisory.reason is None
    assert budget.refusals == [] and budget.spent_usd <= cap


async def test_max_tokens_is_clipped_to_the_room_the_cap_has_left() -> None:
    """A two-seat board capped so that its synthesis, the last call, has room for 4,000
    tokens of answer beyond the p95 it holds: it is sent that limit, not its budget, and answering
    in full (cut off there) it stays under the cap."""
    two_seats = BoardConfig(default_size=2, min_size=2, discussion_rounds=1)
    probe = FakeProviders(CouncilScript())
    measured = InMemoryBudget(None)
    sizes = seeded(alpha=[300] * 20, beta=[300] * 20)
    await deliberate(probe, measured, sizes, engine_request(board=two_seats))
    (synthesis,) = [r for r in measured.reservations if r.label.startswith("synthesize/")]
    (answer,) = probe.calls_for(tool="submit_synthesis")
    before = measured.spent_usd - answer.cost_usd  # what every other call cost
    cap = before + synthesis.amount_usd + 4000 * OUTPUT_PRICE

    fake = FakeProviders(CouncilScript())
    fake.on(tool="submit_synthesis", reply=ProviderFault.truncated())
    budget = InMemoryBudget(cap)
    sizes = seeded(alpha=[300] * 20, beta=[300] * 20)
    await deliberate(fake, budget, sizes, engine_request(board=two_seats))

    cut = fake.calls_for(tool="submit_synthesis")[0]
    # The chair's model's p95 (its 20 recorded answers of 300 and the shorter ones since).
    assert await sizes.p95(cut.model) == 300
    assert cut.request.max_tokens in (300 + 3999, 300 + 4000)
    assert cut.usage.output_tokens == cut.request.max_tokens  # it answered in full
    assert fake.cost_usd <= cap and budget.spent_usd <= cap
    # Every call was sent what the cap had room for: none below the floor (or its budget,
    # when that is less), none past its budget.
    for c in fake.calls:
        assert c.request.output is not None
        own = c.request.output.output_tokens(LIMIT)
        assert min(FLOOR_OUTPUT_TOKENS, own) <= c.request.max_tokens <= own


async def test_a_cap_without_room_for_the_floor_refuses_the_call() -> None:
    """A seen model's call still needs room for its input and FLOOR_OUTPUT_TOKENS of
    answer: a cap with less left refuses it (nothing is sent), and says what it needed."""
    sizes = seeded(alpha=[200] * 20, beta=[200] * 20)
    probe = InMemoryBudget(cap_usd=0.0)
    await deliberate(FakeProviders(CouncilScript()), probe, sizes)
    needed = max(r.amount_usd for r in probe.refusals)  # input + the floor's tokens
    fake = FakeProviders(CouncilScript())
    # Room for the hold (input + 200 tokens) but not for input + 1,024.
    advisory = await deliberate(
        fake, InMemoryBudget(needed - 500 * OUTPUT_PRICE), sizes, engine_request()
    )
    assert fake.calls == []
    assert advisory.resolution == Resolution.COST_LIMIT and advisory.reason is not None
    assert f"(the next call needed at least ${needed:.4f})" in advisory.reason


async def test_a_timed_out_call_stays_charged_at_what_it_could_have_cost() -> None:
    """The provider may have billed an answer we stopped waiting for: the call is charged
    its worst case as sent (input and a full answer), not the p95 it held."""
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-3", tool="submit_assessment", reply=ProviderFault.timeout())
    budget = InMemoryBudget(None)
    await deliberate(fake, budget, seeded(alpha=[300] * 20, beta=[300] * 20))
    (timed_out,) = [r for r in budget.reservations if r.label == "assess/seat-3/0"]
    charged = budget.spent_usd - fake.cost_usd
    assert charged == pytest.approx(timed_out.amount_usd + (ASSESS_LIMIT - 300) * OUTPUT_PRICE)


def test_a_plan_holds_the_p95_and_needs_the_floor() -> None:
    caps = FAKE_CAPABILITIES
    never = plan_for_input(caps, 1000, LIMIT, None)
    assert (never.seen, never.expected_output, never.floor_output) == (False, LIMIT, LIMIT)
    short = plan_for_input(caps, 1000, LIMIT, 200)
    assert (short.seen, short.expected_output, short.floor_output) == (True, 200, 1024)
    long = plan_for_input(caps, 1000, LIMIT, 20_000)  # p95 past this call's limit
    assert (long.expected_output, long.floor_output) == (LIMIT, LIMIT)
    small = plan_for_input(caps, 1000, 500, 200)  # a call asking for less than the floor
    assert (small.expected_output, small.floor_output) == (200, 500)
    # The room pays for output tokens beyond the hold; no cap: the limit.
    assert short.max_tokens(None, None) == LIMIT
    # (a hair under what the room pays for: rounding never lets the worst case past it)
    assert short.max_tokens(None, 1000.5 * OUTPUT_PRICE) == 1200
    assert short.max_tokens(900, 1000.5 * OUTPUT_PRICE) == 1100
