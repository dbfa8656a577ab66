"""What the phases are told, and the debate's choice and shifts, over the wire (the real
SDKs, the fake model server answering as `CouncilScript`), asserted on the requests the
fake received and on the rendered comment (issue 22, items 6 and 7):

- the designer is told a yes/no question ("should it merge?") is no choice; a designer
  that still calls it a choice of "Merge" / "Do not merge" gets no tradeoff map, in the
  report or the comment, even from a chair that writes one; "Redis or Postgres?" stays one;
- an assessment's CONCERNS followed by a vote is no shift; APPROVE -> REJECT citing
  nothing still is;
- the chair reads each finding's detail and suggested fix and each member's merge
  conditions;
- the Devil's Advocate is not told to skip what other seats raised while it cannot see
  them; the discussion, where it can, says so;
- the vote task names the red flags and critical findings there are, and mentions
  neither when there are none.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.cli.report import advisory_json
from bot.council.board import PinnedSeat
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.providers import ProviderRegistry
from bot.render import render_comment
from bot.review.inputs import DEFAULT_TOPIC
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, FakeRequest, Reply
from tests.unit.council.test_debate_modes_http import calls_of, debate, request, section
from tests.unit.council.test_engine import request as board_request
from tests.unit.providers.test_providers import make_settings

REDIS_OR_POSTGRES = "Should we use Redis or Postgres for the queue?"


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


# --- the choice ----------------------------------------------------------------------------


async def test_the_designer_is_told_a_yes_no_question_is_no_choice(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    await debate(models, registry, CouncilScript(), request("quick", topic=DEFAULT_TOPIC))

    (designed,) = calls_of(models, "submit_panel")
    asked = designed.request.last_user_text()
    assert "a yes/no question about one option is a choice too" not in asked
    assert "A question is a choice only when it names two or more options" in asked
    assert "A yes/no question is not a choice: 'should it merge?'" in asked
    # The schema's own description of the field says the same.
    schema = json.dumps(designed.request.output_schema)
    assert "Redis or not" not in schema and "such as 'should it merge?' is not" in schema


def chair_writes_a_map_anyway(script: CouncilScript) -> Any:
    """The script's answers, but the chair writes a Merge / Do-not-merge tradeoff map
    whatever it is told."""

    def reply(r: FakeRequest) -> Reply:
        answer = script.reply(r)
        if r.output_name != "submit_synthesis" or answer.json is None:
            return answer
        merged = {"option": "Merge", "pro": "ships the fix", "con": "ships the bug"}
        held = {"option": "Do not merge", "pro": "no risk", "con": "no fix"}
        mapped = [{"dimension": "risk", "options": [merged, held]}]
        return Reply(json={**answer.json, "tradeoff_map": mapped})

    return reply


async def test_merge_or_not_is_no_choice_and_the_comment_has_no_tradeoff_map(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(
        is_choice=True,
        options=["Merge", "Do not merge"],
        dimensions={"Panelist 1": ["risk"], "Panelist 2": ["risk", "latency"]},
    )
    models.default(chair_writes_a_map_anyway(script))
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        request("quick", topic=DEFAULT_TOPIC)
    )
    comment = render_comment(advisory)

    (synth,) = calls_of(models, "submit_synthesis")
    assert "Leave the tradeoff map empty." in synth.request.text
    assert "choice between options" not in synth.request.text
    report = advisory.debate
    assert report is not None
    assert (report.is_choice, report.options, report.tradeoffs) == (False, [], [])
    assert advisory.synthesis is not None and advisory.synthesis.tradeoff_map == []
    assert "tradeoff map" not in comment.lower()
    assert "Do not merge |" not in comment
    as_json = advisory_json(advisory, comment)
    assert as_json["debate"]["is_choice"] is False and as_json["debate"]["tradeoffs"] == []


async def test_a_question_naming_two_options_stays_a_choice(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(
        is_choice=True, options=["Redis", "Postgres"], dimensions={"Panelist 1": ["latency"]}
    )
    advisory, comment = await debate(
        models, registry, script, request("quick", topic=REDIS_OR_POSTGRES)
    )

    (synth,) = calls_of(models, "submit_synthesis")
    assert "The question is a choice between options (Redis, Postgres)" in synth.request.text
    assert advisory.debate is not None and advisory.debate.options == ["Redis", "Postgres"]
    body = section(comment, "Debate: tradeoff map")
    assert "| Dimension | Redis | Postgres | Weight |" in body
    assert re.search(r"\| latency \| \+ Redis: good latency .*\| 1/3 \|", body)


# --- the shifts ----------------------------------------------------------------------------


async def test_concerns_then_a_vote_is_no_shift_and_approve_then_reject_is(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = CouncilScript(
        verdicts={"Panelist 1": "CONCERNS", "Panelist 2": "CONCERNS"},
        votes={"Panelist 1": "APPROVE", "Panelist 2": "REJECT"},
    )
    advisory, comment = await debate(models, registry, script, request("quick"))

    assert advisory.debate is not None
    assert (advisory.debate.confidence.shifts, advisory.debate.confidence.unsupported_shifts) == (
        0,
        0,
    )
    assert "0 position shifts" in comment and "no new evidence" not in comment
    committee = section(comment, "Debate: committee")
    assert "CONCERNS → APPROVE (vote)" in committee and "CONCERNS → REJECT (vote)" in committee

    models.reset()
    # Panelist 1 approved, then votes REJECT citing no file, line or finding.
    script = CouncilScript(votes={"Panelist 1": "REJECT"})
    advisory, comment = await debate(models, registry, script, request("quick"))

    assert advisory.debate is not None and advisory.debate.confidence.unsupported_shifts == 1
    assert "1 position shift (1 with ⚠️ no new evidence)" in comment
    committee = section(comment, "Debate: committee")
    assert "APPROVE → **REJECT** (vote, ⚠️ no new evidence)" in committee


# --- what the chair reads ----------------------------------------------------------------------

LONG_DETAIL = (
    "The module-level dict grows with every key and is never evicted, so a long-running "
    "worker's memory climbs until the container is killed. " * 4
) + "THE-TAIL-PAST-THE-CLIP"


async def test_the_chair_reads_each_findings_detail_and_each_members_merge_conditions(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    finding = {
        "severity": "major",
        "path": "app/cache.py",
        "start_line": 1,
        "end_line": 2,
        "title": "Unbounded cache",
        "detail": LONG_DETAIL,
        "suggestion": "Use functools.lru_cache(maxsize=10_000).",
    }
    script = CouncilScript(
        findings={"Panelist 1": [finding]},
        merge_conditions={"Panelist 2": ["Cap the cache at 10,000 entries."]},
        votes={"Panelist 3": "REJECT"},
    )
    await debate(models, registry, script, request("quick"))

    (synth,) = calls_of(models, "submit_synthesis")
    read = synth.request.text
    assert "[major] app/cache.py:1-2 Unbounded cache" in read
    assert "Detail: The module-level dict grows with every key and is never evicted" in read
    assert "THE-TAIL-PAST-THE-CLIP" not in read  # bounded: the detail is clipped
    assert "Suggestion: Use functools.lru_cache(maxsize=10_000)." in read
    assert "Merge conditions:\n  - Cap the cache at 10,000 entries." in read
    # A rejection's conditions say what would change it; an approval as is says so.
    assert "REJECT (confidence 0.80) - Panelist 3 votes REJECT. Would change its vote: " in read
    assert "Bound the retry loop." in read and "Approves as is." in read


# --- the Devil's Advocate --------------------------------------------------------------------


def persona_calls(models: FakeModelServer, tool: str, persona: str) -> list[FakeRequest]:
    return [
        c.request
        for c in calls_of(models, tool)
        if f"seated as: {persona}." in c.request.last_user_text()
    ]


async def test_a_seat_is_told_not_to_repeat_others_only_where_it_reads_them(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    req: DeliberationRequest = board_request(pinned=[PinnedSeat(persona="devils-advocate")])
    await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req)

    (assessed,) = persona_calls(models, "submit_assessment", "Devil's Advocate")
    text = assessed.text
    assert "Your job is to disagree well." in text  # its persona is there
    assert "Independent assessments" not in text  # and no other seat's answer
    for said in ("repeat a concern", "already raised", "lean on their findings"):
        assert said not in text, said
    (discussed,) = persona_calls(models, "submit_discussion", "Devil's Advocate")
    assert "## Independent assessments (anonymized)" in discussed.text
    assert "nor a concern another member already raised" in discussed.last_user_text()


# --- the vote task -----------------------------------------------------------------------------


def vote_tasks(models: FakeModelServer) -> list[str]:
    return [c.request.last_user_text() for c in calls_of(models, "submit_vote")]


async def test_the_vote_task_cites_only_the_red_flags_and_critical_findings_there_are(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    await debate(models, registry, CouncilScript(verdict="CONCERNS"), request("quick"))

    tasks = vote_tasks(models)
    assert len(tasks) == 3
    for task in tasks:
        assert "red flag" not in task.lower() and "critical" not in task.lower()
        assert "Weigh the 3 concerns raised in the record." in task

    models.reset()
    flag = "The retry loop never stops when the upstream is down."
    script = CouncilScript(red_flags={"Panelist 2": [flag]})
    advisory, _ = await debate(models, registry, script, request("quick"))

    label = next(s.label for s in advisory.seats if s.persona_name == "Panelist 2")
    for task in vote_tasks(models):
        assert "each of the red flags the members raised" in task
        assert f"1 red flag:\n- {label}: {flag}" in task
        assert "critical" not in task.lower()

    models.reset()
    critical = {
        "severity": "critical",
        "path": "app/auth.py",
        "start_line": 7,
        "end_line": None,
        "title": "Token compared with ==",
        "detail": "A timing attack recovers the token.",
        "suggestion": None,
    }
    script = CouncilScript(findings={"Panelist 3": [critical]})
    advisory, _ = await debate(models, registry, script, request("quick"))

    label = next(s.label for s in advisory.seats if s.persona_name == "Panelist 3")
    for task in vote_tasks(models):
        assert f"1 critical finding:\n- {label}: app/auth.py:7 Token compared with ==" in task
        assert "red flag" not in task.lower()
