"""The `strategies` protocol's pure parts: the table entry and its call bound, the task
classification, the lenses, the rubric with bounded adjustments, the convergence and
sycophancy checks and the conflict-resolution matrix; its command, config and help."""

from __future__ import annotations

from typing import Any

import pytest

from bot.commands import GRAMMAR_HELP, Command, parse_command
from bot.config.load import load_repo_config
from bot.config.show import render_effective
from bot.council.protocols import (
    MAX_CRITIQUE_ROUNDS,
    NAMES,
    longest_deliberation,
    phases_text,
    planned_calls,
    protocol,
    seat_count,
    sequential_turns,
)
from bot.council.protocols.strategies.critique import counted_verdicts
from bot.council.protocols.strategies.lenses import LENSES
from bot.council.protocols.strategies.matrix import (
    ADJUSTMENT_BOUND,
    critique_points,
    decide_matrix,
    positions,
    round_record,
    rubric_rows,
    sycophancy_note,
)
from bot.council.protocols.strategies.report import Classification, RubricRow
from bot.council.protocols.strategies.schemas import TASK_TYPES, CritiqueReply
from bot.council.protocols.strategies.seating import classify, strategy_seats
from bot.council.schemas import Assessment
from bot.council.scoring import ReviewSignals
from bot.queue.jobs import job_timeout_s
from bot.settings import Settings
from tests.support.strategy_answers import rubric

# --- the table ---------------------------------------------------------------------------


def test_strategies_is_in_the_table_with_its_phases() -> None:
    assert "strategies" in NAMES
    assert phases_text("strategies") == (
        "convene(strategies) assess gate critique(<=2 rounds) reconcile(if close) "
        "resolve-by-assessments synthesize"
    )
    assert protocol("strategies").resolution == "assessments"
    assert seat_count("strategies", models=1, board_size=5) == 3


def test_planned_calls_count_every_critique_round_classification_and_reconciliation() -> None:
    calls = planned_calls("strategies", seats=3, rounds=1)
    phases = [c.phase for c in calls]
    assert phases == [
        "classify",
        *["assess"] * 3,
        *["critique 1"] * 3,
        *["critique 2"] * 3,
        "reconcile",
        "merge",
        "synthesize",
    ]
    assert MAX_CRITIQUE_ROUNDS == 2
    assert len(calls) == 13
    assert len(planned_calls("strategies", seats=2, rounds=0)) == 1 + 2 + 2 * 2 + 3


def test_the_job_timeout_covers_the_strategies_maximum() -> None:
    """The job timeout (bot.queue.jobs) is the longest protocol's planned turns; strategies'
    worst case, every call with its re-asks one after the other, is among them."""
    calls = planned_calls("strategies", seats=3, rounds=1)
    # classify 2, assess 3, two critique rounds 2 + 2, reconcile 2, merge 2, synthesize 2.
    assert sequential_turns(calls, concurrency=8) == 15
    _, longest = longest_deliberation(models=2, concurrency=8)
    assert longest >= 15
    settings = Settings(_env_file=None, anthropic_api_key="a", openai_api_key="o")
    assert job_timeout_s(settings) >= 15 * settings.call_deadline_s


def test_the_command_names_the_protocol() -> None:
    assert parse_command("/council strategies how should we fix the retry?") == Command(
        "convene", protocol="strategies", question="how should we fix the retry?"
    )
    assert "strategies" in GRAMMAR_HELP


def test_the_repo_config_accepts_it_and_help_lists_it() -> None:
    settings = Settings.model_validate({"anthropic_api_key": None, "openai_api_key": None})
    result = load_repo_config("protocol: strategies\n", settings)
    assert result.issues == [] and result.config.protocol == "strategies"
    shown = render_effective(result.config, result.issues)
    assert "- `strategies` (`protocol`):" in shown


# --- classification ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "areas", "dominant", "expected"),
    [
        ("Fix the crash when the retry loop never ends", (), None, "bug-fix"),
        ("Add support for webhooks", (), None, "feature"),
        ("Refactor the store into smaller modules", (), None, "refactor"),
        ("Redesign the queue architecture", (), None, "architecture"),
        ("Review this pull request", ("performance",), "performance", "performance"),
        ("Review this pull request", ("security",), "security", "security"),
        ("Review this pull request", ("dependencies",), "dependencies", "dependency"),
        ("Review this pull request", ("docs-only",), "docs-only", "docs"),
        ("Review this pull request", ("tests-only",), "tests-only", "tests-only"),
    ],
)
def test_the_signals_classify_each_task_type(
    topic: str, areas: tuple[str, ...], dominant: str | None, expected: str
) -> None:
    found = classify(ReviewSignals(topic=topic, areas=areas, dominant_area=dominant), topic)
    assert isinstance(found, Classification)
    assert found.task_type == expected and found.decided_by == "signals"
    assert found.evidence


def test_ambiguous_signals_leave_it_to_one_call_with_the_candidates() -> None:
    # Nothing says what it is.
    found = classify(ReviewSignals(topic="Review this pull request"), "Review this pull request")
    assert found == (list(TASK_TYPES), [])
    # Two kinds, equally: a bug fix that adds a feature.
    topic = "Fix the crash and add support for retries"
    found = classify(ReviewSignals(topic=topic), topic)
    assert not isinstance(found, Classification)
    assert found[0][:2] == ["bug-fix", "feature"]


def test_each_task_type_seats_two_or_three_lenses_of_distinct_styles() -> None:
    assert set(LENSES) == set(TASK_TYPES)
    for lenses in LENSES.values():
        assert 2 <= len(lenses) <= 3
        assert len({lens.style for lens in lenses}) == len(lenses)
        assert len({lens.temperature for lens in lenses}) == len(lenses)


def test_temperatures_are_kept_only_where_the_model_takes_one() -> None:
    seats, choices, note = strategy_seats(
        "security", ["warm", "cold"], lambda model: model == "warm"
    )
    assert [s.model for s in seats] == ["warm", "cold", "warm"]
    assert [s.temperature for s in seats] == [0.2, None, 0.6]
    assert [c.temperature for c in choices] == [0.2, None, 0.6]
    assert note == "temperatures not accepted by cold: the styles alone vary"
    assert all(s.strategy is not None for s in seats)
    assert strategy_seats("security", ["warm"], lambda _m: True)[2] is None


# --- critique ----------------------------------------------------------------------------

LABELS = {"s1": "Member A", "s2": "Member B", "s3": "Member C"}


def reply(
    scores: dict[str, int],
    *,
    verdict: str = "APPROVE",
    adjustment: int = 0,
    evidence: tuple[str, ...] = (),
    severity: str = "minor",
    line: int = 10,
) -> CritiqueReply:
    return CritiqueReply.model_validate(
        {
            "critiques": [
                {
                    "member": member,
                    "hunter": [
                        {"severity": severity, "path": "a.py", "line": line, "point": "missed"}
                    ],
                    "skeptic": ["unsupported"],
                    "referee": rubric(total),
                    "adjustment": adjustment,
                    "reason": "because",
                }
                for member, total in scores.items()
            ],
            "verdict": verdict,
            "position": "as before",
            "new_evidence": [
                {"path": e.split(":")[0], "line": int(e.split(":")[1]), "point": "shows it"}
                for e in evidence
            ],
        }
    )


def analysis(verdict: str = "APPROVE", findings: tuple[str, ...] = ()) -> Assessment:
    data: dict[str, Any] = {
        "verdict": verdict,
        "score": 7,
        "summary": "ok",
        "lens_scores": [],
        "confidence": 80,
        "findings": [
            {
                "severity": "major",
                "path": f.split(":")[0],
                "start_line": int(f.split(":")[1]),
                "title": "t",
                "detail": "d",
            }
            for f in findings
        ],
    }
    return Assessment.model_validate(data)


def test_the_rubric_takes_the_referees_mean_and_bounds_each_rounds_adjustment() -> None:
    rounds = {
        1: {
            "s1": reply({"Member B": 80, "Member C": 40}, adjustment=30),
            "s2": reply({"Member A": 60, "Member C": 50}, adjustment=30),
            "s3": reply({"Member A": 70, "Member B": 90}, adjustment=30),
        },
        2: {"s1": reply({"Member B": 10}, adjustment=-4)},
    }
    rows = {r.seat_id: r for r in rubric_rows(["s1", "s2", "s3"], LABELS, rounds)}
    assert rows["s1"].before == 65 and rows["s1"].referees == 2
    assert rows["s1"].adjustment == ADJUSTMENT_BOUND  # +30 said, +15 counted
    assert rows["s1"].after == 80
    # Round 1's scores are the "before"; round 2 only adjusts: +15 then -4.
    assert rows["s2"].before == 85 and rows["s2"].adjustment == 11 and rows["s2"].after == 96
    assert rows["s3"].dimensions[0] == pytest.approx((12 + 15) / 2)


def test_a_flip_with_no_new_evidence_is_flagged_and_does_not_count() -> None:
    analyses = {"s1": analysis("CONCERNS", ("a.py:5",)), "s2": analysis("REJECT")}
    rounds = {
        # s1 flips citing only what it had cited already; s2 flips on a new line.
        1: {
            "s1": reply({"Member B": 70}, verdict="APPROVE", evidence=("a.py:5",)),
            "s2": reply({"Member A": 70}, verdict="APPROVE", evidence=("a.py:40",)),
        }
    }
    found = {(p.seat_id, p.round): p for p in positions(analyses, rounds)}
    assert found[("s1", 1)].flipped and found[("s1", 1)].flagged
    assert found[("s2", 1)].flipped and not found[("s2", 1)].flagged
    assert found[("s2", 1)].evidence == ["a.py:40"]
    assert counted_verdicts(list(found.values())) == {"s1": "CONCERNS", "s2": "APPROVE"}


def test_a_round_converges_on_agreement_without_a_new_high_severity_finding() -> None:
    known: set[str] = {"a.py:10"}
    calm = {"s1": reply({"Member B": 70}, severity="major", line=10)}  # known: not new
    points = critique_points(1, calm, {"Member A": "s1", "Member B": "s2"}, known)
    assert not any(p.new for p in points)
    assert round_record(1, ["APPROVE", "APPROVE", "CONCERNS"], points).converged
    assert not round_record(1, ["APPROVE", "CONCERNS", "REJECT"], points).converged
    stormy = {"s1": reply({"Member B": 70}, severity="critical", line=99)}
    fresh = critique_points(2, stormy, {"Member A": "s1", "Member B": "s2"}, known)
    record = round_record(2, ["APPROVE", "APPROVE"], fresh)
    assert not record.converged and record.new_high == 1 and "new high-severity" in record.why
    # Said once, it is known: the same point again is not new.
    assert not any(p.new for p in critique_points(3, stormy, {"Member B": "s2"}, known))


def rows(*totals: float | None) -> list[RubricRow]:
    return [RubricRow(seat_id=f"s{i + 1}", before=t, after=t) for i, t in enumerate(totals)]


def test_the_conflict_matrix() -> None:
    approve = {"s1": "APPROVE", "s2": "APPROVE", "s3": "APPROVE"}
    assert decide_matrix(rows(85, 55, 50), approve)[:3] == ("clear-winner", "s1", [])
    assert decide_matrix(rows(78, 72, 40), approve)[:3] == ("merge", "s1", [])
    assert decide_matrix(rows(45, 40, 30), approve)[:3] == ("all-low", "s1", [])
    split = {"s1": "APPROVE", "s2": "REJECT", "s3": "APPROVE"}
    assert decide_matrix(rows(78, 72, 40), split)[:3] == ("contradictory", "s1", ["s1", "s2"])
    # Far apart, opposite verdicts are not a contradiction to present: the winner is clear.
    assert decide_matrix(rows(90, 60), split)[0] == "clear-winner"
    assert decide_matrix(rows(None, None), approve)[0] == "incomplete"


def test_all_close_on_one_verdict_warns_of_convergence_sycophancy() -> None:
    same = {"s1": "APPROVE", "s2": "APPROVE"}
    assert sycophancy_note(rows(80, 77), same) is not None
    assert sycophancy_note(rows(80, 70), same) is None
    assert sycophancy_note(rows(80, 77), {"s1": "APPROVE", "s2": "REJECT"}) is None


def test_the_strategy_tools_pass_openai_strict_mode_and_join_the_shared_tool_list() -> None:
    from bot.council.prompts import DELIBERATION_TOOLS
    from bot.council.protocols.strategies.prompts import STRATEGY_TOOLS
    from bot.providers.schema import tool_schema
    from tests.support.model_server import strict_schema_error

    for tool in STRATEGY_TOOLS:
        assert strict_schema_error(tool_schema(tool.schema, strict=True)) is None, tool.name
        assert tool in DELIBERATION_TOOLS


# --- through the engine (in-process fake): resume, caps, JSON ------------------------------


def _engine_request(**kw: Any) -> Any:
    from tests.support.fake_provider import engine_request

    return engine_request("strategies", topic="Fix the crash in the retry loop", **kw)


async def test_a_resumed_strategies_deliberation_pays_for_no_finished_call() -> None:
    from bot.council.engine import Engine
    from bot.council.ledger import InMemoryLedger
    from bot.council.personas import load_catalog
    from tests.support.council_answers import CouncilScript
    from tests.support.fake_provider import FakeProviders

    fake = FakeProviders(CouncilScript(hunter_severity=["major", "minor"]))
    ledger = InMemoryLedger()
    first = await Engine(fake, load_catalog(), ledger).deliberate(_engine_request())
    made = len(fake.calls)
    assert made == 3 + 6 + 1 + 1  # assess, two critique rounds, reconcile, synthesis
    again = await Engine(fake, load_catalog(), ledger).deliberate(_engine_request())
    assert len(fake.calls) == made  # every answer came from the ledger
    assert again.strategies == first.strategies
    assert again.resolution == first.resolution


async def test_the_token_cap_stops_the_critique_with_what_was_gathered() -> None:
    import re

    from bot.council.advisory import Resolution
    from bot.council.engine import Engine
    from bot.council.ledger import InMemoryLedger
    from bot.council.personas import load_catalog
    from tests.support.council_answers import CouncilScript
    from tests.support.fake_provider import FakeProviders

    async def capped(tokens: int) -> tuple[Any, FakeProviders]:
        fake = FakeProviders(CouncilScript())
        engine = Engine(fake, load_catalog(), InMemoryLedger())
        # Every answer's ceiling under both budgets: a critique holds what an assessment does.
        ceiling = CritiqueReply.OUTPUT_TOKENS
        request = _engine_request(max_spend_tokens=tokens, max_tokens=ceiling)
        return await engine.deliberate(request), fake

    # What one assessment call reserves: the cap's refusal says.
    refused, _ = await capped(1)
    found = re.search(r"could have used up to ([\d,]+) tokens", refused.reason or "")
    assert found is not None
    reserve = int(found.group(1).replace(",", ""))
    # Room for the three assessments, not for three critiques on top of what they used.
    advisory, fake = await capped(3 * reserve + 500)
    assert len([c for c in fake.calls if c.tool == "submit_assessment"]) == 3
    assert advisory.resolution is Resolution.COST_LIMIT
    assert not [c for c in fake.calls if c.tool == "submit_synthesis"]
    assert advisory.reason is not None and "cross-critique round 1" in advisory.reason


def test_the_json_advisory_carries_the_strategies_report() -> None:
    from bot.cli.report import advisory_json
    from bot.council.advisory import Advisory, Resolution
    from bot.council.protocols.strategies.report import StrategiesReport

    report = StrategiesReport(
        classification=Classification(task_type="docs", decided_by="signals"), max_rounds=2
    )
    advisory = Advisory(
        deliberation_id="d",
        protocol="strategies",
        topic="t",
        resolution=Resolution.APPROVED,
        strategies=report,
    )
    found = advisory_json(advisory, "")["strategies"]
    assert found["classification"]["task_type"] == "docs" and found["max_rounds"] == 2


def test_progress_names_the_strategies_phases() -> None:
    from bot.cli.progress import phase_status, seat_status

    assert phase_status("critique", "round 2") == "cross-critique round 2"
    assert phase_status("reconcile", "started") == "the chair is reconciling the strategies"
    assert seat_status("critique", "called") == "critiquing"
    assert seat_status("classify", "called") == "classifying the change"


async def test_a_voting_chair_critiques_and_is_critiqued_within_the_plan() -> None:
    from bot.council.engine import Engine
    from bot.council.ledger import InMemoryLedger
    from bot.council.personas import load_catalog
    from tests.support.council_answers import CouncilScript
    from tests.support.fake_provider import FakeProviders

    fake = FakeProviders(CouncilScript())
    advisory = await Engine(fake, load_catalog(), InMemoryLedger()).deliberate(
        _engine_request(chair_votes=True)
    )
    assert len(advisory.seats) == 4
    assert advisory.strategies is not None
    assert [c.lens for c in advisory.strategies.composition][-1] == "Chair (voting member)"
    assert len(advisory.strategies.rows) == 4
    planned = planned_calls("strategies", seats=3, rounds=1, chair_votes=True)
    assert len([c for c in fake.calls if c.tool == "submit_critique"]) == 4
    assert len(fake.calls) <= len(planned)
