"""Issue 11: verdicts mean what they say - in the comment, the check run and the record.

A 5-0 board of conditional approvals was APPROVED (green, no conditions) under a chair's
"not as is"; `quick` turned every concern into a condition. These check what a user sees.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot.council.advisory import Advisory, MergedFinding, Resolution
from bot.council.engine import Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.resolution import (
    CRITICAL_CONDITION,
    MAX_CONDITIONS,
    ResolutionResult,
    resolve_votes,
    settled_conditions,
)
from bot.council.schemas import Synthesis, Vote, VoteChoice
from bot.council.verdicts import contradicts, settled_synthesis, verdict_sentence
from bot.render import conclusion_for, render_check_run, render_comment
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import Answer, FakeProviders, engine_request

R = Resolution
VOTE = "submit_vote"
ASSESS = "submit_assessment"
SYNTH = "submit_synthesis"
SEATS = [f"seat-{i}" for i in range(1, 6)]
CATALOG = load_catalog()

# 19 conditions over 5 approvers, with duplicates (case, spacing, final period, rewording).
NINETEEN = [
    ["Add a regression test for the retry path.", "Bound the retry loop", "Log the failure"],
    ["add a regression test for the  retry path", "Bound the retry loop.", "Document the flag"],
    ["Bound the retry loop", "Document the flag.", "Pin the client version", "Log the failure"],
    ["Add a regression test for the retry path", "Drop the debug print", "Log the failure."],
    [
        "Bound the retry loop",
        "Rename the env var",
        "Add a regression test for the retry path",
        "Check the timeout",
        "Document the flag",
        "Log the failure",
    ],
]
assert sum(len(c) for c in NINETEEN) == 19


async def deliberate(fake: FakeProviders, protocol: str = "board", did: str = "v-1") -> Advisory:
    return await Engine(fake, CATALOG, InMemoryLedger()).deliberate(
        engine_request(protocol, did=did)
    )


def verdict_line(comment: str) -> str:
    """The comment's verdict heading, e.g. "✅ Approved"."""
    found = re.search(r"^## (.+)$", comment, re.M)
    assert found, comment
    return found.group(1)


def chair_sentence(comment: str) -> str:
    found = re.search(r"^> (.+)$", comment, re.M)
    assert found, comment
    return found.group(1)


def conditions_listed(comment: str) -> list[str]:
    section = comment.split("### Conditions", 1)
    if len(section) == 1:
        return []
    body = section[1].split("\n#", 1)[0]
    return [line[2:].strip() for line in body.splitlines() if line.startswith("- ")]


def vote(choice: VoteChoice, *conditions: str, rationale: str = "because") -> Vote:
    return Vote(vote=choice, confidence=0.8, rationale=rationale, conditions=list(conditions))


# --- the board -----------------------------------------------------------------------------


async def test_unanimous_conditional_approval_is_approved_with_conditions_and_not_green() -> None:
    fake = FakeProviders(CouncilScript(vote="APPROVE"))
    for seat, conditions in zip(SEATS, NINETEEN, strict=True):
        fake.on(seat=seat, tool=VOTE, reply=Answer(update={"conditions": conditions}))
    advisory = await deliberate(fake)
    assert advisory.vote_counts().approve == 5
    assert advisory.resolution == R.APPROVED_WITH_CONDITIONS
    assert conclusion_for(advisory) == "neutral"  # not green
    assert conclusion_for(advisory, "advisory") == "neutral"
    comment = render_comment(advisory)
    assert verdict_line(comment) == "🟡 Approved with conditions"
    shown = conditions_listed(comment)
    assert 1 <= len(shown) <= MAX_CONDITIONS
    keys = [c.lower().rstrip(".") for c in shown]
    assert len(set(keys)) == len(keys)  # deduplicated
    # The most asked come first: 5 approvers asked for the first two, 4 for the next.
    assert keys[:3] == [
        "add a regression test for the retry path",
        "bound the retry loop",
        "log the failure",
    ]
    check = render_check_run(advisory)
    assert check.title.startswith("Approved with conditions")
    assert all(c in check.summary for c in shown)
    # The chair's sentence agrees: it was told APPROVED_WITH_CONDITIONS.
    assert not contradicts(advisory.resolution, chair_sentence(comment))


async def test_unconditional_approval_is_approved_and_green() -> None:
    advisory = await deliberate(FakeProviders(CouncilScript(vote="APPROVE")))
    assert advisory.resolution == R.APPROVED
    assert conclusion_for(advisory) == "success"
    comment = render_comment(advisory)
    assert verdict_line(comment) == "✅ Approved"
    assert conditions_listed(comment) == []
    assert "Conditions" not in render_check_run(advisory).summary


async def test_the_chairs_merged_conditions_are_the_ones_shown() -> None:
    fake = FakeProviders(CouncilScript(vote="APPROVE"))
    for seat, conditions in zip(SEATS, NINETEEN, strict=True):
        fake.on(seat=seat, tool=VOTE, reply=Answer(update={"conditions": conditions}))
    merged = ["Bound the retry loop and test it.", "Document the flag.", "Log the failure."]
    fake.on(tool=SYNTH, reply=Answer(update={"conditions": merged}))
    advisory = await deliberate(fake)
    assert advisory.resolution == R.APPROVED_WITH_CONDITIONS
    assert conditions_listed(render_comment(advisory)) == merged
    # The chair saw every condition asked, not only the first five.
    assert "Rename the env var" in fake.calls_for(tool=SYNTH)[0].text


async def test_chair_conditions_are_ignored_for_a_plain_approval() -> None:
    fake = FakeProviders(CouncilScript(vote="APPROVE"))
    fake.on(tool=SYNTH, reply=Answer(update={"conditions": ["Invented by the chair"]}))
    advisory = await deliberate(fake)
    assert (advisory.resolution, advisory.conditions) == (R.APPROVED, [])


# --- quick ---------------------------------------------------------------------------------


async def test_quick_with_concerns_but_no_merge_conditions_is_green() -> None:
    advisory = await deliberate(
        FakeProviders(CouncilScript(verdict="CONCERNS")), protocol="quick", did="v-q1"
    )
    assert all(s.assessment and s.assessment.concerns for s in advisory.seats)
    assert advisory.resolution == R.APPROVED
    comment = render_comment(advisory)
    assert verdict_line(comment) == "✅ Approved"
    assert conditions_listed(comment) == []
    assert conclusion_for(advisory) == "success"


async def test_quick_with_merge_conditions_is_conditional() -> None:
    fake = FakeProviders(CouncilScript(verdict="CONCERNS"))
    fake.on(
        seat="seat-2",
        tool=ASSESS,
        reply=Answer(
            update={"merge_conditions": ["Bound the retry loop.", "bound the retry loop"]}
        ),
    )
    advisory = await deliberate(fake, protocol="quick", did="v-q2")
    assert advisory.resolution == R.APPROVED_WITH_CONDITIONS
    comment = render_comment(advisory)
    assert verdict_line(comment) == "🟡 Approved with conditions"
    assert conditions_listed(comment) == ["Bound the retry loop."]
    assert conclusion_for(advisory) == "neutral"


# --- critical findings ---------------------------------------------------------------------


CRITICAL = {
    "severity": "critical",
    "path": "app/db.py",
    "start_line": 12,
    "end_line": 14,
    "title": "SQL injection in the order lookup",
    "detail": "The id is formatted into the query.",
    "suggestion": None,
}


async def test_an_unanswered_critical_finding_keeps_a_board_from_plain_approved() -> None:
    fake = FakeProviders(CouncilScript(vote="APPROVE"))
    fake.on(seat="seat-1", tool=ASSESS, reply=Answer(update={"findings": [CRITICAL]}))
    advisory = await deliberate(fake, did="v-c1")
    assert advisory.vote_counts().approve == 5
    assert advisory.resolution == R.APPROVED_WITH_CONDITIONS
    # No vote answered it: the gate blocks (never a passing conclusion), and says why.
    assert conclusion_for(advisory) == "failure"
    assert conclusion_for(advisory, "advisory") == "neutral"
    check = render_check_run(advisory)
    assert check.title.startswith(
        "Blocked by an open critical finding: SQL injection in the order lookup"
    )
    shown = conditions_listed(render_comment(advisory))
    assert shown == [f"{CRITICAL_CONDITION}SQL injection in the order lookup (app/db.py:L12-L14)"]


async def test_an_unanswered_critical_finding_keeps_quick_from_plain_approved() -> None:
    fake = FakeProviders(CouncilScript(verdict="APPROVE"))
    fake.on(seat="seat-1", tool=ASSESS, reply=Answer(update={"findings": [CRITICAL]}))
    advisory = await deliberate(fake, protocol="quick", did="v-c2")
    assert advisory.resolution == R.APPROVED_WITH_CONDITIONS
    assert advisory.conditions[0].startswith(CRITICAL_CONDITION)


def _critical(title: str) -> MergedFinding:
    return MergedFinding(
        severity="critical", path="a.py", start_line=3, title=title, detail="d",
        raised_by=["A"], consensus=1,
    )  # fmt: skip


def test_a_critical_finding_answered_by_an_approvals_rationale_allows_approved() -> None:
    votes = [vote("APPROVE", rationale="The SQL injection in the order lookup is a false alarm")]
    votes += [vote("APPROVE")] * 2
    result = resolve_votes(votes, [_critical("SQL injection in the order lookup")])
    assert (result.resolution, result.conditions) == (R.APPROVED, [])


def test_a_critical_finding_answered_by_a_condition_is_not_repeated() -> None:
    votes = [vote("APPROVE", "Fix the SQL injection in the order lookup"), vote("APPROVE")]
    result = resolve_votes(votes, [_critical("SQL injection in the order lookup")])
    assert result.resolution == R.APPROVED_WITH_CONDITIONS
    assert result.conditions == ["Fix the SQL injection in the order lookup"]


def test_critical_findings_do_not_change_a_rejection_or_a_tie() -> None:
    finding = [_critical("Token logged")]
    assert resolve_votes([vote("REJECT"), vote("REJECT")], finding).resolution == R.REJECTED
    tie = resolve_votes([vote("APPROVE"), vote("REJECT")], finding)
    assert (tie.resolution, tie.conditions) == (R.ESCALATE, [])


def test_the_chair_cannot_drop_an_unanswered_critical_finding() -> None:
    result = resolve_votes([vote("APPROVE", "Add tests")] * 3, [_critical("Token logged")])
    chair = Synthesis(
        verdict_sentence="Approve once tests are added.", consensus=[], divergence=[],
        recommendation="r", action_items=[], conditions=["Add the tests"],
    )  # fmt: skip
    shown = settled_conditions(result, chair)
    assert shown == [f"{CRITICAL_CONDITION}Token logged (a.py:L3)", "Add the tests"]


# --- the chair's verdict sentence ------------------------------------------------------------

SENTENCES = {
    R.APPROVED: "Approve and merge as is.",
    R.APPROVED_WITH_CONDITIONS: "Approve once the retry is bounded; not as is.",
    R.ESCALATE: "The council is split; a maintainer must decide.",
    R.REJECTED: "Reject: do not merge this change.",
}
MORE = {
    "The council approves merging as is.": R.APPROVED,
    "LGTM, safe to merge with only non-blocking nits.": R.APPROVED,
    "Approved without conditions.": R.APPROVED,
    "Merge only after the migration is reversible.": R.APPROVED_WITH_CONDITIONS,
    "Approved with conditions: bound the retry and add the test.": R.APPROVED_WITH_CONDITIONS,
    "The change cannot be merged in its current form.": R.REJECTED,
    "The council does not approve this change.": R.REJECTED,
    "Rejected until the retry is bounded; it could be approved then.": R.REJECTED,
}


@pytest.mark.parametrize("written_for", [*SENTENCES, None])
@pytest.mark.parametrize("resolution", list(SENTENCES))
def test_every_resolution_against_every_chair_sentence(
    resolution: Resolution, written_for: Resolution | None
) -> None:
    chair = "" if written_for is None else SENTENCES[written_for]
    synthesis = Synthesis(
        verdict_sentence=chair, consensus=[], divergence=[], recommendation="r", action_items=[]
    )
    settled, replaced = settled_synthesis(
        synthesis, resolution, approvals=3, rejections=2, conditions=2
    )
    assert replaced is (written_for is not resolution)
    if replaced:
        assert settled.verdict_sentence == verdict_sentence(resolution, 3, 2, 2)
    else:
        assert settled.verdict_sentence == chair
    assert not contradicts(resolution, settled.verdict_sentence)


@pytest.mark.parametrize(("sentence", "means"), list(MORE.items()))
@pytest.mark.parametrize("resolution", list(SENTENCES))
def test_more_chair_sentences(sentence: str, means: Resolution, resolution: Resolution) -> None:
    assert contradicts(resolution, sentence) is (resolution is not means)


@pytest.mark.parametrize("resolution", [R.NO_QUORUM, R.COST_LIMIT, R.CANCELLED, R.FAILED])
def test_outcomes_without_a_verdict_keep_the_chairs_sentence(resolution: Resolution) -> None:
    assert not contradicts(resolution, "Approve and merge as is.")


def _result(resolution: Resolution, *conditions: str) -> ResolutionResult:
    return ResolutionResult(
        resolution=resolution, approvals=3, rejections=2, abstentions=0, n=5,
        conditions=list(conditions), confidence=0.8,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("resolution", "chair"),
    [
        (R.REJECTED, "Approve and merge as is."),
        (R.APPROVED_WITH_CONDITIONS, "Approve and merge as is."),
        (R.APPROVED, "The council approves it, but not as is."),
        (R.ESCALATE, "Reject: do not merge this change."),
    ],
)
async def test_a_contradicting_chair_sentence_is_replaced_in_the_comment(
    resolution: Resolution, chair: str
) -> None:
    fake = FakeProviders(CouncilScript(vote="APPROVE"))
    update: dict[str, Any] = {}
    if resolution is R.REJECTED:
        fake.on(seat=SEATS, tool=VOTE, reply=Answer(update={"vote": "REJECT"}))
    elif resolution is R.ESCALATE:
        fake.on(seat=SEATS[:2], tool=VOTE, reply=Answer(update={"vote": "REJECT"}))
    elif resolution is R.APPROVED_WITH_CONDITIONS:
        update = {"conditions": ["Bound the retry loop."]}
    if update:
        fake.on(tool=VOTE, reply=Answer(update=update))
    fake.on(tool=SYNTH, reply=Answer(update={"verdict_sentence": chair}))
    if resolution is R.ESCALATE:
        # 4 seats vote, 2-2: one seat's vote is invalid twice and abstains.
        fake.on(seat=SEATS[4], tool=VOTE, reply=Answer(json={"vote": "MAYBE"}))
    advisory = await deliberate(fake, did=f"v-s-{resolution.value}")
    assert advisory.resolution == resolution
    comment = render_comment(advisory)
    shown = chair_sentence(comment)
    assert shown != chair and not contradicts(resolution, shown)
    assert any("verdict sentence" in n for n in advisory.notes)
