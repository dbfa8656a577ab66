"""Issue 22, item 2: verdict words - negation binds to the verb it negates.

In a real review the chair wrote "It should not merge until the lookup is scoped to the
tenant." above a REJECTED result, and bot.council.verdicts replaced it: it read "not ...
until" as a negated condition, an "as is". Each row below is a sentence a chair writes, the
resolution it sits under, and whether the checker must call it a contradiction (and so
replace it in the comment).
"""

from __future__ import annotations

import re

import pytest

from bot.council.advisory import Advisory, Resolution
from bot.council.engine import Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.schemas import Synthesis
from bot.council.verdicts import contradicts, settled_synthesis, verdict_sentence
from bot.render import render_comment
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import Answer, FakeProviders, engine_request

APPROVED = Resolution.APPROVED
CONDITIONS = Resolution.APPROVED_WITH_CONDITIONS
ESCALATE = Resolution.ESCALATE
REJECTED = Resolution.REJECTED
RAGFLOW = "It should not merge until the lookup is scoped to the tenant."

# (resolution, the chair's sentence, contradicts?)
ROWS: list[tuple[Resolution, str, bool]] = [
    # --- negation binds to the verb: a reject qualified by a condition --------------------
    (REJECTED, RAGFLOW, False),
    (CONDITIONS, RAGFLOW, False),
    (APPROVED, RAGFLOW, True),
    (ESCALATE, RAGFLOW, True),
    (REJECTED, "Do not merge until the retry is bounded.", False),
    (CONDITIONS, "Don't merge until the retry is bounded.", False),
    (REJECTED, "It must not land before the migration is reversible.", False),
    (CONDITIONS, "It must not land before the migration is reversible.", False),
    (APPROVED, "It must not land before the migration is reversible.", True),
    (REJECTED, "It should not merge unless the lookup is scoped to the tenant.", False),
    (CONDITIONS, "It shouldn't merge unless the lookup is scoped to the tenant.", False),
    (REJECTED, "Not before the tenant filter is in place.", False),
    (APPROVED, "Not before the tenant filter is in place.", True),
    (CONDITIONS, "Block until the tenant check is added.", False),
    (REJECTED, "It must never ship until the token is redacted.", False),
    (APPROVED, "It must not ship until the token is redacted.", True),
    (CONDITIONS, "Not ready to merge until the lookup is scoped.", False),
    (REJECTED, "It is not yet ready to merge.", False),
    (CONDITIONS, "Do not merge yet; the retry is unbounded.", False),
    (CONDITIONS, "Do not merge; bound the retry first.", False),
    (CONDITIONS, "Approved with conditions; it should not merge until they are met.", False),
    (CONDITIONS, "The council recommends not merging until the lookup is scoped.", False),
    (CONDITIONS, "Hold off merging until the lookup is scoped.", False),
    (REJECTED, "Hold off merging until the lookup is scoped.", False),
    # --- a negated verb with "as is" or "without" after it --------------------------------
    (REJECTED, "We cannot approve as is; scope the lookup to the tenant first.", False),
    (CONDITIONS, "We cannot approve as is; scope the lookup to the tenant first.", False),
    (APPROVED, "We cannot approve as is; scope the lookup to the tenant first.", True),
    (ESCALATE, "The council can't approve this as-is.", True),
    (REJECTED, "I would never approve this as is.", False),
    (CONDITIONS, "Do not merge it without a regression test.", False),
    (APPROVED, "Do not merge it without a regression test.", True),
    # --- conditions: once, until, unless, only after, before merging, provided ------------
    (CONDITIONS, "Approve once the retry is bounded.", False),
    (APPROVED, "Approve once the retry is bounded.", True),
    (REJECTED, "Approve once the retry is bounded.", True),
    (CONDITIONS, "Merge only after the migration is reversible.", False),
    (REJECTED, "Merge only after the migration is reversible.", True),
    (CONDITIONS, "Add a regression test before merging.", False),
    (APPROVED, "Add a regression test before merging.", True),
    (CONDITIONS, "Approve unless the benchmark regresses.", False),
    (APPROVED, "Approve unless the benchmark regresses.", True),
    (CONDITIONS, "Approve, provided the flag defaults to off.", False),
    (CONDITIONS, "Approve subject to a regression test for the retry path.", False),
    (CONDITIONS, "It can be merged after the regression test is added.", False),
    (CONDITIONS, "Ready to merge once CI is green.", False),
    (CONDITIONS, "LGTM once the flag defaults to off.", False),
    (CONDITIONS, "Approve, but not as is.", False),
    (CONDITIONS, "Approve once the lookup is tied to the request's tenant.", False),
    (CONDITIONS, "Approve once the handler is split into two functions.", False),
    (CONDITIONS, "Merge it once the except block logs the error.", False),
    # --- as is, LGTM, no conditions -------------------------------------------------------
    (APPROVED, "Approve and merge as is.", False),
    (APPROVED, "Approve as-is.", False),
    (APPROVED, "LGTM, safe to merge with only non-blocking nits.", False),
    (APPROVED, "Approved without conditions.", False),
    (APPROVED, "Merge it; there are no conditions.", False),
    (APPROVED, "Approved with no further conditions.", False),
    (APPROVED, "The approval is not conditional on anything.", False),
    (APPROVED, "Approve unconditionally.", False),
    (APPROVED, "No merge conditions; approve as is.", False),
    (APPROVED, "Nothing blocks this change; merge as is.", False),
    (APPROVED, "No blockers; ready to merge.", False),
    (APPROVED, "There is no reason to reject this; approve as is.", False),
    (APPROVED, "No need to escalate: approve as is.", False),
    (APPROVED, "Approve and merge as is; the try block is fine.", False),
    (APPROVED, "Approve as is; the fix landed after the refactor.", False),
    (APPROVED, "Approve as is; do not block on the nits.", False),
    (APPROVED, "Approve once the retry is bounded; not as is.", True),
    (APPROVED, "Approve as is once the test is added.", True),
    # --- rejections -----------------------------------------------------------------------
    (REJECTED, "Reject: do not merge this change.", False),
    (REJECTED, "Reject; approve once the lookup is scoped.", False),
    (REJECTED, "Reject as is.", False),
    (CONDITIONS, "Reject as is.", True),
    (CONDITIONS, "Reject; approve once the lookup is scoped.", True),
    (REJECTED, "Rejected until the retry is bounded; it could be approved then.", False),
    (CONDITIONS, "Rejected until the retry is bounded; it could be approved then.", True),
    (REJECTED, "The change cannot be merged in its current form.", False),
    (CONDITIONS, "The change cannot be merged in its current form.", True),
    (REJECTED, "The council does not approve this change.", False),
    (REJECTED, "This must never be merged: it leaks the token.", False),
    (REJECTED, "It shouldn't land.", False),
    (APPROVED, "It shouldn't land.", True),
    (REJECTED, "Blocking: the token is logged in plain text.", False),
    (REJECTED, "Request changes: the token is logged.", False),
    (APPROVED, "Request changes: the token is logged.", True),
    # --- escalation -----------------------------------------------------------------------
    (ESCALATE, "The council is split; a maintainer must decide.", False),
    (ESCALATE, "Do not merge; a person must decide.", False),
    (CONDITIONS, "Do not merge; a person must decide.", True),
    (APPROVED, "Do not merge; a person must decide.", True),
    (ESCALATE, "Tied 2-2: a person must decide whether it merges.", False),
    (ESCALATE, "The board is deadlocked; escalate to the code owners.", False),
    (ESCALATE, "The council approves merging as is.", True),
    (REJECTED, "The council is split; a maintainer must decide.", True),
    # --- these must still be caught -------------------------------------------------------
    (REJECTED, "Approve as is.", True),
    (REJECTED, "Approve and merge as-is.", True),
    (CONDITIONS, "Merge without conditions.", True),
    (CONDITIONS, "Approve and merge as is.", True),
    (REJECTED, "Ready to merge.", True),
    (REJECTED, "LGTM.", True),
    (APPROVED, "Approved with conditions: bound the retry and add the test.", True),
    (APPROVED, "The council does not approve this change.", True),
    (ESCALATE, "Reject: do not merge this change.", True),
]


def _id(row: tuple[Resolution, str, bool]) -> str:
    resolution, sentence, says_else = row
    return f"{resolution.value}:{'contradicts' if says_else else 'agrees'}:{sentence[:40]}"


def test_the_table_covers_what_the_issue_asks() -> None:
    assert len({sentence for _, sentence, _ in ROWS}) >= 30
    assert {resolution for resolution, _, _ in ROWS} == {APPROVED, CONDITIONS, ESCALATE, REJECTED}
    words = " ".join(sentence.lower() for _, sentence, _ in ROWS)
    for cue in (
        " not ", "n't", "cannot", "can't", "never", "without", " no ", "once", "until",
        "unless", "only after", "before merging", "as is", "as-is", "lgtm", "condition",
        "should not merge until", "must not land before", "approve once", "cannot approve as is",
        "do not merge; a person must decide",
    ):  # fmt: skip
        assert cue in words, cue
    assert len(ROWS) == len(set(ROWS))


@pytest.mark.parametrize(("resolution", "sentence", "says_else"), ROWS, ids=map(_id, ROWS))
def test_verdict_words(resolution: Resolution, sentence: str, says_else: bool) -> None:
    assert contradicts(resolution, sentence) is says_else


CONDITIONAL_REJECTS = [
    RAGFLOW,
    "Do not merge until the retry is bounded.",
    "It must not land before the migration is reversible.",
    "It should not merge unless the lookup is scoped to the tenant.",
    "Not before the tenant filter is in place.",
    "Block until the tenant check is added.",
    "We cannot approve as is; scope the lookup to the tenant first.",
    "Merge only once the lookup is scoped; do not merge before.",
]


@pytest.mark.parametrize("sentence", CONDITIONAL_REJECTS)
def test_a_conditional_reject_agrees_with_a_rejection_and_a_conditional_approval(
    sentence: str,
) -> None:
    says_else = {r: contradicts(r, sentence) for r in (APPROVED, CONDITIONS, ESCALATE, REJECTED)}
    assert says_else == {APPROVED: True, CONDITIONS: False, ESCALATE: True, REJECTED: False}


def _synthesis(sentence: str) -> Synthesis:
    return Synthesis(
        verdict_sentence=sentence, consensus=[], divergence=[], recommendation="r",
        action_items=[],
    )  # fmt: skip


@pytest.mark.parametrize("resolution", [REJECTED, CONDITIONS])
def test_the_ragflow_sentence_is_kept(resolution: Resolution) -> None:
    settled, replaced = settled_synthesis(
        _synthesis(RAGFLOW), resolution, approvals=1, rejections=3, conditions=1
    )
    assert replaced is False
    assert settled.verdict_sentence == RAGFLOW


@pytest.mark.parametrize("resolution", [APPROVED, ESCALATE])
def test_the_ragflow_sentence_is_replaced_above_an_approval_or_a_split(
    resolution: Resolution,
) -> None:
    settled, replaced = settled_synthesis(
        _synthesis(RAGFLOW), resolution, approvals=2, rejections=2, conditions=0
    )
    assert replaced is True
    assert settled.verdict_sentence == verdict_sentence(resolution, 2, 2, 0)


async def test_the_ragflow_sentence_reaches_the_comment_of_a_rejection() -> None:
    fake = FakeProviders(CouncilScript(vote="REJECT"))
    fake.on(tool="submit_synthesis", reply=Answer(update={"verdict_sentence": RAGFLOW}))
    advisory: Advisory = await Engine(fake, load_catalog(), InMemoryLedger()).deliberate(
        engine_request("board", did="vw-ragflow")
    )
    assert advisory.resolution == REJECTED
    comment = render_comment(advisory)
    assert re.search(r"^> (.+)$", comment, re.M) is not None
    assert re.findall(r"^> (.+)$", comment, re.M)[0] == RAGFLOW
    assert not any("verdict sentence" in note for note in advisory.notes)
