"""The `strategies` protocol over the wire: the real SDKs through the provider registry, the
fake model server answering as `CouncilScript` (tests.support.strategy_answers). Each test
drives one mode or report section and asserts on the rendered comment and the call log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.council.advisory import Advisory, Resolution
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.protocols import planned_calls
from bot.council.protocols.strategies.seating import CLASSIFY_MAX_TOKENS
from bot.council.scoring import ReviewSignals
from bot.providers import ProviderRegistry
from bot.render import render_comment
from bot.render.markdown import VISIBLE_TARGET, visible_text
from bot.render.terminal import render_text
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer
from tests.unit.providers.test_providers import make_settings

WARM = "anthropic:claude-opus-4-6"  # takes a temperature
COLD = "openai:gpt-5.4"  # takes none (a reasoning model)
BUG = "Fix the crash in the retry loop"
ROOT, MINIMAL, GUARD = "Root cause strategy", "Minimal fix strategy", "Regression guard strategy"
CRITIQUE, RECONCILE, CLASSIFY = "submit_critique", "submit_reconciliation", "submit_task_type"


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


def request(topic: str = BUG, **kw: Any) -> DeliberationRequest:
    values: dict[str, Any] = {
        "deliberation_id": "strategies-1",
        "protocol": "strategies",
        "topic": topic,
        "context": "<untrusted-diff>\n+ while True: retry(request)\n</untrusted-diff>",
        "signals": ReviewSignals(topic=topic, languages=("python",)),
        "models": [WARM, COLD],
        "board": BoardConfig(default_size=3, min_size=3, discussion_rounds=1),
        "assessment_timeout_s": 10.0,
    }
    values.update(kw)
    return DeliberationRequest(**values)


async def deliberate(
    models: FakeModelServer,
    registry: ProviderRegistry,
    script: CouncilScript,
    req: DeliberationRequest | None = None,
) -> tuple[Advisory, str]:
    models.default(script.reply)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req or request())
    return advisory, render_comment(advisory)


def asked(models: FakeModelServer, tool: str) -> list[Any]:
    return [c.request for c in models.calls if c.request.output_name == tool]


def within_plan(models: FakeModelServer, advisory: Advisory) -> None:
    """The deliberation made no more calls than the protocol table plans for it."""
    planned = planned_calls("strategies", seats=len(advisory.seats), rounds=1)
    assert 0 < len(models.calls) <= len(planned)
    assert advisory.usage.calls == len(models.calls)


async def test_a_close_race_reports_every_section_and_merges(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(strategy_scores={ROOT: 88, MINIMAL: 80, GUARD: 60})
    advisory, comment = await deliberate(models, registry, script)

    assert advisory.resolution is Resolution.APPROVED
    report = advisory.strategies
    assert report is not None and report.matrix == "merge"
    assert report.classification.task_type == "bug-fix"
    # Decided by the signals: no classification call. Round 1 converged: 3 critiques. The
    # top two are 8 apart: one reconciliation.
    assert asked(models, CLASSIFY) == []
    assert len(asked(models, CRITIQUE)) == 3
    assert len(asked(models, RECONCILE)) == 1
    within_plan(models, advisory)

    for section in (
        "**Classification:** bug fix, from the change's signals",
        "**Composition**",
        "**Strategy comparison**",
        "**Before critique**",
        "**After critique**",
        "**Critique rounds**",
        "Round 1 of at most 2: converged",
        "Reconciliation: held",
        "**Winner:** Root cause",
        "**Complementary elements:**",
        "Add the Minimal fix strategy check to the plan. (from Minimal fix)",
        "**Dropped alternatives**",
        "**Plan confidence:**",
        "**Action items by strategy**",
        "(source: Root cause)",
        "Cross-critique points",
    ):
        assert section in comment, section
    # The report is collapsed: one line of it is visible, and the screen stays one screen.
    seen = visible_text(comment)
    assert "**Strategies** · bug fix · winner **Root cause** 88/100" in seen
    assert "**Strategy comparison**" not in seen
    assert len(seen) <= VISIBLE_TARGET
    assert "Winner: Root cause" in render_text(advisory)


async def test_ambiguous_signals_make_one_cheap_classification_call(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(task_type="security")
    advisory, comment = await deliberate(
        models, registry, script, request(topic="Review this pull request")
    )

    (call,) = asked(models, CLASSIFY)
    assert call.model == WARM.split(":", 1)[1]  # the chair's model
    assert call.max_tokens is not None and call.max_tokens <= CLASSIFY_MAX_TOKENS
    assert advisory.strategies is not None
    assert advisory.strategies.classification.decided_by == "model"
    assert [c.lens for c in advisory.strategies.composition] == [
        "Threat model",
        "Least privilege",
        "Defense in depth",
    ]
    assert "security, by one classification call to `anthropic:claude-opus-4-6`" in comment
    within_plan(models, advisory)


async def test_a_flip_with_no_new_evidence_is_flagged_and_does_not_count(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(verdicts={MINIMAL: "REJECT"}, strategy_verdicts={MINIMAL: ["APPROVE"]})
    advisory, comment = await deliberate(models, registry, script)

    assert advisory.strategies is not None
    (flagged,) = advisory.strategies.flagged()
    minimal = next(s for s in advisory.seats if s.persona_name == MINIMAL)
    assert flagged.seat_id == minimal.seat_id and flagged.round == 1
    assert minimal.assessment is not None and minimal.assessment.verdict == "REJECT"
    assert (
        f"**Sycophancy:** Minimal fix ({minimal.label}) flipped REJECT → APPROVE in round 1 "
        "with no new evidence (the flip is not counted)."
    ) in comment
    assert "position(s) flipped with no new evidence" in visible_text(comment)
    assert advisory.strategies.confidence is not None
    assert advisory.strategies.confidence.quality == "weak"


async def test_a_flip_on_new_evidence_counts(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(
        verdicts={MINIMAL: "REJECT"},
        strategy_verdicts={MINIMAL: ["APPROVE"]},
        strategy_evidence={MINIMAL: [["app/client.py:77"]]},
    )
    advisory, comment = await deliberate(models, registry, script)

    assert advisory.strategies is not None and advisory.strategies.flagged() == []
    minimal = next(s for s in advisory.seats if s.persona_name == MINIMAL)
    assert minimal.assessment is not None and minimal.assessment.verdict == "APPROVE"
    assert "moved REJECT → APPROVE in round 1 on new evidence (app/client.py:77)" in comment
    assert "Sycophancy" not in comment


async def test_a_round_that_does_not_converge_runs_another(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    # Round 1 raises a new major finding; round 2 only minor ones.
    script = CouncilScript(hunter_severity=["major", "minor"])
    advisory, comment = await deliberate(models, registry, script)

    rounds = {
        int(c.messages_text.split("Cross-critique round ")[-1][0]) for c in asked(models, CRITIQUE)
    }
    assert len(asked(models, CRITIQUE)) == 6 and rounds == {1, 2}
    assert advisory.strategies is not None and advisory.strategies.converged
    assert "Round 1 of at most 2: not converged" in comment
    assert "new high-severity finding(s)" in comment
    assert "Round 2 of at most 2: converged" in comment
    # The second round read the first: its critiques are in its transcript.
    assert all("## Cross-critique round 1" in c.messages_text for c in asked(models, CRITIQUE)[3:])
    within_plan(models, advisory)


async def test_the_rounds_stop_at_the_maximum_without_convergence(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(hunter_severity=["critical"])
    advisory, comment = await deliberate(models, registry, script)

    assert len(asked(models, CRITIQUE)) == 6  # never a third round
    assert advisory.strategies is not None and not advisory.strategies.converged
    assert "The critique ended without converging after 2 round(s)." in comment
    within_plan(models, advisory)


async def test_a_clear_winner_is_adopted_without_a_reconciliation(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(strategy_scores={ROOT: 90, MINIMAL: 60, GUARD: 55})
    advisory, comment = await deliberate(models, registry, script)

    assert asked(models, RECONCILE) == []
    assert advisory.strategies is not None and advisory.strategies.matrix == "clear-winner"
    assert ": clear winner (it leads by 30 points). Nothing was merged from the others." in comment
    assert "Reconciliation: not held (the top two are 30 points apart" in comment
    assert "(60/100): 30 points below the winner; the critique found:" in comment


async def test_all_low_scores_escalate(models: FakeModelServer, registry: ProviderRegistry) -> None:
    script = CouncilScript(strategy_scores={ROOT: 45, MINIMAL: 40, GUARD: 30})
    advisory, comment = await deliberate(models, registry, script)

    # Every assessment approves: the resolution rules alone would approve.
    assert all(s.assessment and s.assessment.verdict == "APPROVE" for s in advisory.seats)
    assert advisory.resolution is Resolution.ESCALATE
    assert asked(models, RECONCILE) == []
    assert "every analysis scored below 50" in comment
    assert "Conflict matrix: every analysis scored below 50" in comment


async def test_contradictory_close_strategies_are_both_presented_and_escalate(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(
        verdicts={MINIMAL: "REJECT"},
        strategy_scores={ROOT: 80, MINIMAL: 75, GUARD: 40},
        reconcile_unresolved="A minimal fix ships today; the root-cause fix needs a migration.",
    )
    advisory, comment = await deliberate(models, registry, script)

    assert advisory.resolution is Resolution.ESCALATE  # the rules alone: 2 of 3 approve
    report = advisory.strategies
    assert report is not None and report.matrix == "contradictory"
    assert len(report.presented) == 2
    assert "**Both presented:** **Root cause" in comment and "**Minimal fix" in comment
    assert "contradictory verdicts (APPROVE and REJECT)" in comment
    assert "Trade-off: A minimal fix ships today" in comment
    assert "both presented: **Root cause** 80 vs **Minimal fix** 75" in visible_text(comment)
    # Only the third is dropped.
    assert [d.seat_id for d in report.dropped] == [
        s.seat_id for s in advisory.seats if s.persona_name == GUARD
    ]


async def test_temperatures_are_sent_where_accepted_and_the_style_alone_varies_elsewhere(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    advisory, comment = await deliberate(models, registry, CouncilScript())

    sent = {(c.model, c.temperature) for c in asked(models, "submit_assessment")}
    assert sent == {("claude-opus-4-6", 0.2), ("claude-opus-4-6", 0.3), ("gpt-5.4", None)}
    # A seat keeps its temperature in the critique too.
    assert {c.temperature for c in asked(models, CRITIQUE) if c.model == "gpt-5.4"} == {None}
    assert "| Member" in comment and "| style only |" in comment
    assert "Temperatures not accepted by openai:gpt-5.4: the styles alone vary." in comment
    assert "| `anthropic:claude-opus-4-6` | 0.2 |" in comment
    assert advisory.strategies is not None
    assert [c.temperature for c in advisory.strategies.composition] == [0.2, None, 0.3]


async def test_a_model_with_no_temperature_anywhere_says_style_only_for_every_lens(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    advisory, comment = await deliberate(models, registry, CouncilScript(), request(models=[COLD]))

    assert all(c.temperature is None for c in asked(models, "submit_assessment"))
    assert comment.count("| style only |") == 3
    assert advisory.strategies is not None
    assert advisory.strategies.temperature_note == (
        "temperatures not accepted by openai:gpt-5.4: the styles alone vary"
    )
