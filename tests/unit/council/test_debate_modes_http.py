"""Debate modes and the debate report, over the wire (the real SDKs through the provider
registry, the fake model server answering as `CouncilScript`), asserted on the fake's call
log and on the rendered comment (issue 12, parts 2, 3 and 5).

- quick: one cycle, no judge; standard: a judge, at most 2 cycles; full: at most 3 and an
  outside opinion from a configured model not on the panel (none with a single model);
- the panel design is checked (distinct lenses, both stances) and re-asked once;
- whether the question is a choice, and its options, come from the designer;
- the report's sections: executive line, committee and position history (a flip with no
  new evidence flagged), contention points, tradeoff map with weights, decision guide,
  decision confidence signals, the judge's fields; within the one-screen limits;
- a debate never makes more calls than `planned_calls` plans for its mode.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.cli.report import advisory_json
from bot.council.advisory import Advisory
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.protocols import planned_calls, seat_count
from bot.council.scoring import ReviewSignals
from bot.providers import ProviderRegistry
from bot.render import render_comment
from bot.render.debate import DEBATE_CAP
from bot.render.markdown import VISIBLE_TARGET, visible_text
from bot.render.terminal import render_text
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer
from tests.unit.providers.test_providers import make_settings

ANTHROPIC = "anthropic:claude-sonnet-5-5"
OPENAI = "openai:gpt-5.4"
REDIS = "Should this cache live in Redis?"
CONTEXT = "<untrusted-diff>\n+ cache = {}\n+ def get(key): return cache.get(key)\n</untrusted-diff>"
_DETAILS = re.compile(r"<details>\n<summary>(.*?)</summary>\n\n(.*?)\n\n</details>", re.DOTALL)


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


def request(mode: str | None, *, models: list[str] | None = None, topic: str = REDIS) -> Any:
    return DeliberationRequest(
        deliberation_id=f"debate-{mode}",
        topic=topic,
        protocol="debate",
        context=CONTEXT,
        signals=ReviewSignals(topic=topic, languages=["python"], areas=["performance"]),
        models=models or [ANTHROPIC, OPENAI],
        board=BoardConfig(default_size=3, min_size=2, discussion_rounds=1),
        assessment_timeout_s=10.0,
        debate_mode=mode,
    )


async def debate(
    models: FakeModelServer, registry: ProviderRegistry, script: CouncilScript, req: Any
) -> tuple[Advisory, str]:
    models.default(script.reply)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req)
    return advisory, render_comment(advisory)


def calls_of(models: FakeModelServer, tool: str) -> list[Any]:
    return [c for c in models.calls if c.request.output_name == tool]


def details(comment: str) -> dict[str, str]:
    return {summary: body for summary, body in _DETAILS.findall(comment)}


def section(comment: str, prefix: str) -> str:
    found = [body for summary, body in details(comment).items() if summary.startswith(prefix)]
    assert len(found) == 1, (prefix, list(details(comment)))
    return found[0]


# --- the modes ---------------------------------------------------------------------------


async def test_quick_runs_one_cycle_and_no_judge(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    advisory, comment = await debate(models, registry, CouncilScript(), request("quick"))

    assert calls_of(models, "submit_judgement") == []
    assert len(calls_of(models, "submit_discussion")) == 3  # one cycle of three panelists
    assert calls_of(models, "submit_outside_opinion") == []
    assert advisory.debate is not None and advisory.debate.cycles == 1
    assert "**Debate (quick): 1 cycle, no judge** · 3 panelists" in comment
    assert "no judge" in comment and "Debate: step-back judge" not in comment


async def test_standard_stops_at_two_cycles_when_the_judge_never_converges(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(judge=["FULL"])  # never converged
    _advisory, comment = await debate(models, registry, script, request("standard"))

    assert len(calls_of(models, "submit_judgement")) == 2
    assert len(calls_of(models, "submit_discussion")) == 6
    assert "not converged after 2 of 2 cycles" in comment
    assert "cycles 2 of 2" in comment


async def test_a_partial_judge_makes_another_cycle_run(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(judge=["PARTIAL", "CONVERGED"])
    _advisory, comment = await debate(models, registry, script, request("standard"))

    judged = calls_of(models, "submit_judgement")
    assert len(judged) == 2
    # The second cycle runs for the member the judge named only, with its focus.
    second = [c for c in calls_of(models, "submit_discussion") if "round 2" in c.request.text]
    assert len(second) == 1 and "focus on: Is the retry bounded?" in second[0].request.text
    assert "**Debate (standard): converged after 2 of 2 cycles**" in comment
    assert "judge CONVERGED" in comment
    assert "Cycle 1: PARTIAL" in section(comment, "Debate: step-back judge")


async def test_full_runs_three_cycles_and_an_outside_opinion_from_another_model(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(judge=["FULL", "FULL", "CONVERGED"])
    _advisory, comment = await debate(models, registry, script, request("full"))

    assert len(calls_of(models, "submit_judgement")) == 3
    (outside,) = calls_of(models, "submit_outside_opinion")
    # The officers (designer, judge, chair) run on the first model: the opinion is the other's.
    judge_apis = {c.api for c in calls_of(models, "submit_judgement")}
    assert judge_apis == {"anthropic"} and outside.api == "openai"
    # It is given the debate so far.
    assert "Positions after cycle 3" in outside.request.text or "round 3" in outside.request.text
    assert "**Debate (full): converged after 3 of 3 cycles**" in comment
    body = section(comment, "Debate: outside opinion")
    assert OPENAI in comment and "Redis becomes a single point of failure." in body
    assert "disagrees with the panel's lean" in body
    # The members vote having read it.
    assert all("Outside opinion" in c.request.text for c in calls_of(models, "submit_vote"))


async def test_full_with_a_single_model_runs_without_an_outside_opinion_and_says_so(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(judge=["CONVERGED"])
    advisory, comment = await debate(models, registry, script, request("full", models=[ANTHROPIC]))

    assert calls_of(models, "submit_outside_opinion") == []
    assert advisory.debate is not None and advisory.debate.outside is not None
    assert advisory.debate.outside.model is None
    assert "Full debate without an outside opinion: only one model is configured" in comment
    assert "Debate: outside opinion (none)" in comment


async def test_the_repo_default_mode_is_standard(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    advisory, _comment = await debate(
        models, registry, CouncilScript(judge=["FULL"]), request(None)
    )
    assert advisory.debate is not None and advisory.debate.mode == "standard"
    assert len(calls_of(models, "submit_judgement")) == 2


# --- the panel ---------------------------------------------------------------------------


def panelist(name: str, lens: str, stance: str) -> dict[str, str]:
    return {"name": name, "lens": lens, "stance": stance, "brief": f"Argue as {name}."}


BAD_PANEL = {
    "panelists": [
        panelist("Security Analyst", "Security", "adversarial"),
        panelist("Threat Modeller", "security analysis", "adversarial"),
        panelist("Cost Optimizer", "cost", "neutral"),
    ],
    "is_choice": False,
    "options": [],
}
GOOD_PANEL = {
    "panelists": [
        panelist("Security Analyst", "security", "adversarial"),
        panelist("DX Advocate", "developer experience", "constructive"),
        panelist("Cost Optimizer", "cost", "neutral"),
    ],
    "is_choice": True,
    "options": ["Redis", "In-process cache"],
}


async def test_an_invalid_panel_is_reasked_once_naming_its_problems(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(panel_answers=[BAD_PANEL, GOOD_PANEL])
    advisory, comment = await debate(models, registry, script, request("quick"))

    first, second = calls_of(models, "submit_panel")
    asked = second.request.text
    assert "panelists 1 and 2 have the same lens" in asked
    assert "no constructive panelist" in asked
    assert "breaks the panel rules" not in first.request.text
    names = {s.persona_name for s in advisory.seats}
    assert names == {"Security Analyst", "DX Advocate", "Cost Optimizer"}
    assert "still breaks the panel rules" not in comment
    committee = section(comment, "Debate: committee")
    for lens, stance in (("developer experience", "constructive"), ("security", "adversarial")):
        assert re.search(rf"\| {lens} \| {stance} \| (anthropic|openai):", committee), committee


async def test_a_panel_still_invalid_after_the_reask_is_used_and_the_advisory_says_so(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(panel_answers=[BAD_PANEL])
    advisory, comment = await debate(models, registry, script, request("quick"))

    assert len(calls_of(models, "submit_panel")) == 2  # asked once more, not again
    assert advisory.debate is not None and advisory.debate.panel_problems
    assert "The debate panel still breaks the panel rules after one re-ask" in comment
    assert "_The panel still breaks the panel rules:" in section(comment, "Debate: committee")


# --- the choice and the tradeoff map -------------------------------------------------------


async def test_the_redis_question_gets_a_tradeoff_map_when_the_designer_says_it_is_a_choice(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(
        is_choice=True,
        options=["Redis", "In-process cache"],
        dimensions={"Panelist 1": ["latency", "cost"], "Panelist 2": ["Latency"]},
    )
    _advisory, comment = await debate(models, registry, script, request("quick"))

    (synth,) = calls_of(models, "submit_synthesis")
    assert "choice between options (Redis, In-process cache)" in synth.request.text
    body = section(comment, "Debate: tradeoff map")
    assert "| Dimension | Redis | In-process cache | Weight |" in body
    # latency: raised by two panelists of three; operability by none; cost by one.
    assert re.search(
        r"\| latency \| \+ Redis: good latency / − Redis: costly latency \|.*\| 2/3 \|", body
    )
    assert re.search(r"\| operability \|.*\| 0/3 \|", body)
    assert re.search(r"\| cost \| - \| - \| 1/3 \|", body)


async def test_a_question_the_designer_says_is_no_choice_gets_no_tradeoff_map(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    # The old word list would call this a choice ("should we"); the designer decides.
    script = CouncilScript(is_choice=False, dimensions={"Panelist 1": ["latency"]})
    _advisory, comment = await debate(
        models, registry, script, request("quick", topic="Should we merge this refactor?")
    )

    (synth,) = calls_of(models, "submit_synthesis")
    assert "Leave the tradeoff map empty." in synth.request.text
    assert "Debate: tradeoff map" not in comment


# --- the report ---------------------------------------------------------------------------

JUDGE_FIELDS = {
    "confidence": 82,
    "framing_issues": ["The panel compares Redis with nothing: is a cache needed at all?"],
    "hidden_assumptions": ["Everyone assumes the keys fit in memory."],
    "blind_spots": ["Nobody discussed cache invalidation."],
    "meta_insight": "Positions moved on evidence, not on pressure.",
}


async def test_every_section_of_the_debate_report_is_in_the_comment(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(
        judge=["PARTIAL", "CONVERGED"],
        judge_fields=JUDGE_FIELDS,
        is_choice=True,
        options=["Redis", "In-process cache"],
        positions={"Panelist 1": ["REJECT"], "Panelist 2": ["APPROVE"]},
        dimensions={"Panelist 1": ["latency"], "Panelist 3": ["latency", "operability"]},
        decision_guide=[
            ("If latency is the top priority", "Redis"),
            ("If the team cannot run Redis", "In-process cache"),
        ],
    )
    advisory, comment = await debate(models, registry, script, request("standard"))
    shown = visible_text(comment)

    # Executive line and decision confidence, on the screen.
    assert "**Debate (standard): converged after 2 of 2 cycles** · 3 panelists" in shown
    signals = re.search(r"\*\*Decision confidence:\*\* (.*)", shown)
    assert signals is not None
    line = signals.group(1)
    assert "consensus 2/3 lean APPROVE" in line
    assert re.search(r"confidence spread \d+%–\d+%", line)
    assert "cycles 2 of 2" in line and "1 position shift" in line and "judge CONVERGED" in line
    # The decision guide, condition -> path.
    assert "| Condition | Path |" in shown
    assert "| If the team cannot run Redis | In-process cache |" in shown
    # Committee and position history: Panelist 1 flipped APPROVE -> REJECT in cycle 1.
    committee = section(comment, "Debate: committee and position history (3 panelists)")
    assert "| Member | Panelist | Lens | Stance | Model | Position history |" in committee
    assert "APPROVE → **REJECT** (cycle 1) → REJECT" in committee
    # Contention points with their outcome.
    contention = section(comment, "Debate: contention points")
    assert "| Point | Side A | Side B | Outcome |" in contention
    assert "The retry is unbounded." in contention
    assert re.search(r"(resolved|shifted|unresolved) \|", contention)
    # The tradeoff map with weights.
    assert "| latency |" in section(comment, "Debate: tradeoff map")
    # The judge's fields.
    judge = section(comment, "Debate: step-back judge (PARTIAL, CONVERGED)")
    for said in (
        "Cycle 1: PARTIAL** (confidence 82%)",
        "Framing issues: The panel compares Redis with nothing",
        "Hidden assumptions: Everyone assumes the keys fit in memory.",
        "Blind spots: Nobody discussed cache invalidation.",
        "Meta insight: Positions moved on evidence, not on pressure.",
    ):
        assert said in judge, said
    assert advisory.judge_decisions[0].decision.confidence == 82
    # The terminal and --json carry the same report.
    text = render_text(advisory)
    assert "Debate (standard): converged after 2 of 2 cycles" in text
    assert "Decision confidence: consensus 2/3 lean APPROVE" in text
    assert "Decision guide: If the team cannot run Redis -> In-process cache" in text
    as_json = advisory_json(advisory, comment)["debate"]
    assert as_json["mode"] == "standard" and as_json["cycles"] == 2
    assert as_json["confidence"]["consensus"] == 2 and len(as_json["committee"]) == 3
    assert {p["outcome"] for p in as_json["contention"]} <= {"resolved", "shifted", "unresolved"}


async def test_a_flip_with_no_new_evidence_is_flagged(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(
        positions={"Panelist 1": ["REJECT"], "Panelist 2": ["REJECT"]},
        # Panelist 1 cites nothing; Panelist 2 cites a file and line (the default evidence).
        shift_evidence={"Panelist 1": "On reflection I feel differently now."},
    )
    advisory, comment = await debate(models, registry, script, request("quick"))

    assert advisory.debate is not None
    flagged = {
        advisory.label_for(h.seat_id)
        for h in advisory.debate.positions
        if any(p.unsupported for p in h.positions)
    }
    p1 = next(s.label for s in advisory.seats if s.persona_name == "Panelist 1")
    assert flagged == {p1}
    assert advisory.debate.confidence.shifts == 2
    assert advisory.debate.confidence.unsupported_shifts == 1
    assert "2 position shifts (1 with ⚠️ no new evidence)" in visible_text(comment)
    committee = section(comment, "Debate: committee")
    assert "**REJECT** (cycle 1, ⚠️ no new evidence)" in committee
    assert committee.count("⚠️ no new evidence") == 1


async def test_the_debate_comment_stays_within_the_one_screen_limits(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    long = "This sentence is long on purpose to fill the section with text. " * 12
    script = CouncilScript(
        judge=["FULL", "FULL", "FULL"],
        judge_fields={
            "confidence": 40,
            "framing_issues": [long] * 6,
            "hidden_assumptions": [long] * 6,
            "blind_spots": [long] * 6,
            "meta_insight": long,
        },
        is_choice=True,
        options=["Redis", "In-process cache"],
        positions={"Panelist 1": ["REJECT", "CONCERNS", "APPROVE"]},
        dimensions={f"Panelist {i}": [f"dimension {i} {long[:40]}"] for i in (1, 2, 3)},
        decision_guide=[(f"If case {i} holds: {long[:120]}", long[:160]) for i in range(9)],
    )
    _advisory, comment = await debate(models, registry, script, request("full"))

    assert len(visible_text(comment)) <= VISIBLE_TARGET
    debate_sections = [b for s, b in details(comment).items() if s.startswith("Debate")]
    assert len(debate_sections) >= 5
    assert all(len(body) <= DEBATE_CAP for body in debate_sections)
    # 9 rows answered, 5 kept (the schema's bound): 4 shown, all collapsed.
    assert "Debate: decision guide in full" in comment
    assert "_…and 1 more in the debate report below._" in visible_text(comment)


# --- the plan bounds the calls -------------------------------------------------------------


def overlapping_findings() -> dict[str, list[dict[str, Any]]]:
    """Every panelist reports a finding on the same lines: the chair's merge runs."""
    return {
        f"Panelist {i}": [
            {
                "severity": "major",
                "path": "app/cache.py",
                "start_line": 1,
                "end_line": 2,
                "title": f"Unbounded cache {i}",
                "detail": "The dict grows forever.",
                "suggestion": None,
            }
        ]
        for i in (1, 2, 3)
    }


@pytest.mark.parametrize(
    ("mode", "configured"),
    [
        ("quick", [ANTHROPIC, OPENAI]),
        ("standard", [ANTHROPIC, OPENAI]),
        ("full", [ANTHROPIC, OPENAI]),
        ("full", [ANTHROPIC]),
    ],
)
async def test_a_debate_never_makes_more_calls_than_its_mode_plans(
    models: FakeModelServer, registry: ProviderRegistry, mode: str, configured: list[str]
) -> None:
    # The longest debate each mode allows: the judge never converges, the merge runs.
    script = CouncilScript(judge=["FULL"], findings=overlapping_findings())
    _advisory, _ = await debate(models, registry, script, request(mode, models=configured))

    seats = seat_count("debate", models=len(configured), board_size=5)
    planned = planned_calls("debate", seats=seats, rounds=1, mode=mode, models=len(configured))
    assert len(models.calls) == len(planned)  # every planned call made, none more
    made = [c.request.output_name for c in models.calls]
    assert made.count("submit_judgement") == sum(1 for p in planned if p.party == "judge")
    assert made.count("submit_outside_opinion") == sum(1 for p in planned if p.party == "outside")
    assert made.count("submit_merge") == 1
