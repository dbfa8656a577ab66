"""Spend is bounded, not hoped for: every call reserves its worst case before it starts.

On the in-process fake providers and the in-memory budget (the store's budget, across
workers, is tests/unit/store/test_spend.py): a call whose reservation would cross the cap
does not start, the calls that fit run to the end, the advisory says where it stopped, and
each reservation becomes what its call cost (or nothing, for an error never billed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from bot.council.advisory import Advisory, Resolution, SeatState
from bot.council.budget import Budget, CapReached, InMemoryBudget, Reservation
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.providers import ModelCall, OutputTool
from bot.providers.worstcase import CALL_OVERHEAD_TOKENS, worst_case_cost, worst_case_input
from bot.tokens import TokenEstimator
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import (
    FAKE_CAPABILITIES,
    FakeProviders,
    ProviderFault,
    engine_request,
)

ASSESS = "submit_assessment"
CATALOG = load_catalog()


def request(protocol: str = "board", *, did: str = "b-1", **kw: Any) -> DeliberationRequest:
    return engine_request(protocol, did=did, **kw)


async def deliberate(
    fake: FakeProviders, budget: Budget, req: DeliberationRequest | None = None
) -> Advisory:
    # A fresh estimator: reservations do not depend on what earlier tests calibrated.
    engine = Engine(fake, CATALOG, InMemoryLedger(), estimator=TokenEstimator())
    return await engine.deliberate(req or request(), budget=budget)


async def first_reservation(fake: FakeProviders, req: DeliberationRequest | None = None) -> float:
    """What the first call of a deliberation reserves: a budget of $0 refuses it."""
    probe = InMemoryBudget(cap_usd=0.0)
    advisory = await deliberate(fake, probe, req)
    assert advisory.resolution == Resolution.COST_LIMIT and fake.calls == []
    return max(refusal.amount_usd for refusal in probe.refusals)


def test_the_worst_case_is_the_input_at_the_dearest_rate_and_a_full_answer() -> None:
    caps = FAKE_CAPABILITIES.model_copy(
        update={"input_price": 3.0, "cache_write_price": 3.75, "cache_read_price": 0.3}
    )
    call: ModelCall[Any] = ModelCall(
        system=[], messages=[], output=OutputTool("t", "", Advisory), max_tokens=1000
    )
    estimator = TokenEstimator()
    tokens = worst_case_input(call, estimator)
    assert tokens > CALL_OVERHEAD_TOKENS  # the schema is sent, and counted
    assert worst_case_cost(caps, call, estimator) == (tokens * 3.75 + 1000 * 5.0) / 1e6
    clipped: ModelCall[Any] = ModelCall(system=[], messages=[], max_tokens=10**6)
    assert (
        worst_case_cost(caps, clipped, estimator)
        == (CALL_OVERHEAD_TOKENS * 3.75 + caps.max_output_tokens * 5.0) / 1e6
    )


async def test_parallel_seats_start_only_the_calls_whose_reservations_fit() -> None:
    fake = FakeProviders(CouncilScript(latency_s=1.0))
    each = await first_reservation(fake)
    cap = 3.5 * each  # three reservations fit, a fourth does not
    budget = InMemoryBudget(cap_usd=cap)
    advisory = await deliberate(fake, budget)

    # Five seats at once, each a second long: only three calls ever started.
    assert [c.tool for c in fake.calls] == [ASSESS] * 3
    assert all(cap / 4 < r.amount_usd <= cap / 3 for r in budget.reservations)
    assert len(budget.reservations) == 3 and len(budget.refusals) == 1
    # Each reservation became what its call cost; nothing is held any more.
    assert budget.held == {}
    assert budget.spent_usd == pytest.approx(fake.cost_usd) == advisory.usage.cost_usd
    assert fake.cost_usd <= cap
    # The three that ran are kept; the two that did not start say why.
    assert advisory.resolution == Resolution.COST_LIMIT
    assert advisory.reason is not None
    assert advisory.reason.startswith("The deliberation's cost cap of $")
    assert "stopped the council after 3 of 5 assessments" in advisory.reason
    states = sorted(s.state for s in advisory.seats)
    assert states == [SeatState.OK] * 3 + [SeatState.SKIPPED] * 2
    assert sum(s.assessment is not None for s in advisory.seats) == 3
    skipped = [s for s in advisory.seats if s.state is SeatState.SKIPPED]
    assert all(s.error and "not called: the deliberation's cost cap" in s.error for s in skipped)
    assert advisory.partial and len(advisory.missing_perspectives) == 2


@dataclass
class PhaseCap:
    """A `Budget` for these tests: it grants every call but a phase's calls past the first
    `grant` (e.g. the third reply of the discussion)."""

    phase: str
    grant: int
    granted: int = 0

    async def reserve(
        self, amount_usd: float, label: str, *, need_usd: float | None = None
    ) -> Reservation | CapReached:
        if label.startswith(f"{self.phase}/"):
            if self.granted == self.grant:
                return CapReached("the test's cost cap", 1.0, 1.0, amount_usd)
            self.granted += 1
        return Reservation(label, amount_usd, label)

    async def settle(self, reservation: Reservation, actual_usd: float) -> None:
        return None

    async def release(self, reservation: Reservation) -> None:
        return None


async def test_a_stop_in_the_discussion_keeps_the_replies_that_came_in() -> None:
    fake = FakeProviders(CouncilScript(latency_s=0.05))
    advisory = await deliberate(fake, PhaseCap("discuss", grant=2))
    assert advisory.resolution == Resolution.COST_LIMIT and advisory.reason is not None
    assert "in discussion round 1, after 2 of 5 replies" in advisory.reason
    assert sum(s.assessment is not None for s in advisory.seats) == 5
    (round_1,) = advisory.rounds
    assert len({m.seat_id for m in round_1.messages}) == 2
    assert fake.tools().count("submit_discussion") == 2
    assert fake.tools().count("submit_vote") == 0


async def test_a_stop_in_the_vote_says_how_many_voted() -> None:
    fake = FakeProviders(CouncilScript(latency_s=0.05))
    advisory = await deliberate(fake, PhaseCap("vote", grant=3))
    assert advisory.resolution == Resolution.COST_LIMIT and advisory.reason is not None
    assert advisory.reason.startswith(
        "The test's cost cap of $1.00 stopped the council after 3 of 5 votes (the next call"
    )
    assert sum(s.vote is not None for s in advisory.seats) == 3
    assert fake.tools().count("submit_synthesis") == 0


async def test_an_error_never_billed_releases_its_reservation() -> None:
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-1", tool=ASSESS, reply=ProviderFault.server_error())
    fake.on(seat="seat-2", tool=ASSESS, reply=ProviderFault.invalid(), times=1)
    budget = InMemoryBudget(cap_usd=None)
    advisory = await deliberate(fake, budget)
    assert advisory.resolution == Resolution.APPROVED
    assert budget.held == {}
    # The 500 cost nothing and is charged nothing; the invalid answer's tokens are charged.
    assert budget.spent_usd == pytest.approx(fake.cost_usd) == advisory.usage.cost_usd
    assert fake.calls_for(seat="seat-2", tool=ASSESS)[0].cost_usd > 0


async def test_a_timed_out_call_stays_charged_at_its_reservation() -> None:
    """The provider may have billed an answer we stopped waiting for."""
    fake = FakeProviders(CouncilScript())
    fake.on(seat="seat-3", tool=ASSESS, reply=ProviderFault.timeout())
    budget = InMemoryBudget(cap_usd=None)
    await deliberate(fake, budget)
    (timed_out,) = [r for r in budget.reservations if r.label == "assess/seat-3/0"]
    assert budget.held == {}
    assert budget.spent_usd == pytest.approx(fake.cost_usd + timed_out.amount_usd)


async def test_a_cap_too_small_for_the_panel_design_stops_before_any_call() -> None:
    fake = FakeProviders(CouncilScript())
    advisory = await deliberate(fake, InMemoryBudget(cap_usd=0.001), request("debate"))
    assert fake.calls == []
    assert advisory.resolution == Resolution.COST_LIMIT and advisory.seats == []
    assert advisory.reason and "before the panel was designed" in advisory.reason


async def test_without_a_budget_the_request_cap_holds() -> None:
    fake = FakeProviders(CouncilScript(latency_s=0.2))
    each = await first_reservation(fake)
    engine = Engine(fake, CATALOG, InMemoryLedger(), estimator=TokenEstimator())
    advisory = await engine.deliberate(request(max_cost_usd=2.5 * each))
    assert [c.tool for c in fake.calls] == [ASSESS] * 2
    assert advisory.reason and "after 2 of 5 assessments" in advisory.reason


async def test_a_resumed_deliberation_counts_what_its_ledger_already_paid() -> None:
    fake = FakeProviders(CouncilScript(latency_s=0.05))
    # A 2,048-token output limit: what a call pays is then large beside its worst case, and
    # a discussion reply's budget (2,304) is no smaller than an assessment's.
    each = await first_reservation(fake, request(max_tokens=2048))
    ledger = InMemoryLedger()
    engine = Engine(fake, CATALOG, ledger, estimator=TokenEstimator())
    # The first run stops after the assessments; what it paid is in the ledger.
    first = await engine.deliberate(
        request(max_tokens=2048), budget=InMemoryBudget(cap_usd=5.5 * each)
    )
    assert first.resolution == Resolution.COST_LIMIT
    paid, made = fake.cost_usd, len(fake.calls)
    assert paid > 0.5 * each
    # Resumed with a cap that leaves less than one call's worst case once that is counted.
    resumed = await engine.deliberate(request(max_tokens=2048, max_cost_usd=paid + 0.5 * each))
    assert len(fake.calls) == made  # no new call started
    assert resumed.resolution == Resolution.COST_LIMIT


async def test_a_refused_merge_call_merges_the_findings_by_their_wording() -> None:
    """The chair's merge of the findings reserves its cost like any call; refused, the
    findings still merge (by their wording) and the council stops there."""
    wordings = [
        ("Retry loop has no upper bound", "The retry loops forever; nothing caps the attempts."),
        ("Unbounded retries on upstream failure", "fetch() retries without a limit, forever."),
        ("No cap on retry attempts", "No maximum number of attempts: it retries indefinitely."),
    ]
    findings = {
        persona.name: [
            {
                "severity": "major",
                "path": "app/client.py",
                "start_line": 40 + n % 3,
                "end_line": None,
                "title": wordings[n % 3][0],
                "detail": wordings[n % 3][1],
                "suggestion": None,
            }
        ]
        for n, persona in enumerate(CATALOG.personas.values())
    }
    fake = FakeProviders(CouncilScript(findings=findings, merge_groups=[["F1", "F2"]]))
    budget = PhaseCap("merge", grant=0)
    advisory = await deliberate(fake, budget, request("quick"))

    assert "submit_merge" not in fake.tools() and "submit_synthesis" not in fake.tools()
    assert advisory.resolution == Resolution.COST_LIMIT and advisory.reason is not None
    assert advisory.reason.startswith(
        "The test's cost cap of $1.00 stopped the council before the chair merged the findings"
    )
    assert [f.consensus for f in advisory.findings] == [3]
