"""A debate's choice and its shifts as pure code (bot.council.protocols.debate.record;
issue 22, item 6).

- a review question is a choice only when it names options of its own: a design whose
  options are only verdicts on the change ("Merge" / "Do not merge", "Approve" / "Reject",
  "Yes" / "No") is no choice, and its report has no tradeoff map;
- an assessment's CONCERNS followed by a vote APPROVE or REJECT is no shift (the vote has
  no CONCERNS); a vote is compared with a stated APPROVE or REJECT, an option with an
  option: APPROVE -> REJECT with no new evidence is still a flagged shift.
"""

from __future__ import annotations

import pytest

from bot.council.protocols import debate_mode
from bot.council.protocols.debate.panel import choice_options
from bot.council.protocols.debate.record import DebateRecord, build_report
from bot.council.protocols.debate.report import DebateReport
from bot.council.schemas import DiscussionReply, Vote
from tests.unit.council.test_debate import assessment, panel, seat

ROLES = (("risk", "adversarial"), ("value", "constructive"))


@pytest.mark.parametrize(
    "options",
    [
        ("Merge", "Do not merge"),
        ("Merge as is", "Merge after fixes", "Don't merge"),
        ("Approve", "Reject"),
        ("Yes", "No"),
        ("Ship it", "Block it"),
        ("Merge now", "Split the PR first"),  # one option of its own is no choice either
    ],
)
def test_options_that_only_answer_should_it_merge_make_no_choice(
    options: tuple[str, ...],
) -> None:
    assert choice_options(panel(*ROLES, choice=True, options=options)) == []


def test_options_of_its_own_make_a_choice() -> None:
    redis = panel(*ROLES, choice=True, options=("Redis", "Postgres"))
    assert choice_options(redis) == ["Redis", "Postgres"]
    # A verdict among them is not one of the choice's options.
    three = panel(*ROLES, choice=True, options=("Redis", "Do not merge", "In-process cache"))
    assert choice_options(three) == ["Redis", "In-process cache"]
    # The designer said it is no choice: none, whatever it named.
    assert choice_options(panel(*ROLES, choice=False, options=("Redis", "Postgres"))) == []


def report(
    assessed: str,
    *,
    positions: tuple[str, ...] = (),
    vote: Vote | None = None,
    options: tuple[str, ...] = (),
) -> DebateReport:
    """One panelist's debate: its assessment verdict, its stated position per cycle
    (citing nothing), its vote; the panel a choice between `options` when given."""
    s1 = seat(1, "Member A")
    replies = {
        n: {"seat-1": DiscussionReply(messages=[], position=p, dimensions=["latency"])}
        for n, p in enumerate(positions, start=1)
    }
    return build_report(
        DebateRecord(
            rule=debate_mode("standard"),
            seats=[s1],
            assessments={"seat-1": assessment(assessed, 70)},
            replies=replies,
            judged=[],
            cycles=len(positions),
            exit="max_cycles",
            panel=panel(*ROLES, choice=bool(options), options=options),
            votes={"seat-1": vote} if vote else {},
        )
    )


def steps(r: DebateReport) -> list[tuple[str, bool, bool]]:
    return [(p.position, p.shifted, p.unsupported) for p in r.positions[0].positions]


def bare(choice: str) -> Vote:
    return Vote(vote=choice, confidence=0.7, rationale="On balance.")  # cites nothing


@pytest.mark.parametrize("choice", ["APPROVE", "REJECT"])
def test_concerns_then_either_vote_is_no_shift(choice: str) -> None:
    r = report("CONCERNS", vote=bare(choice))
    assert steps(r) == [("CONCERNS", False, False), (choice, False, False)]
    assert (r.confidence.shifts, r.confidence.unsupported_shifts) == (0, 0)
    # Stated again in the discussion, CONCERNS is still the assessment's scale.
    r = report("APPROVE", positions=("CONCERNS",), vote=bare(choice))
    assert steps(r)[-1] == (choice, False, False)


def test_approve_then_a_reject_vote_with_no_new_evidence_is_still_flagged() -> None:
    r = report("APPROVE", positions=("APPROVE",), vote=bare("REJECT"))
    assert steps(r)[-1] == ("REJECT", True, True)
    assert (r.confidence.shifts, r.confidence.unsupported_shifts) == (1, 1)
    cited = Vote(vote="REJECT", confidence=0.7, rationale="app/cache.py:L40 never evicts.")
    assert steps(report("APPROVE", vote=cited))[-1] == ("REJECT", True, False)
    # Past a CONCERNS in between, the turn was the move to CONCERNS, not the vote.
    r = report("APPROVE", positions=("CONCERNS",), vote=bare("REJECT"))
    assert [s for _, s, _ in steps(r)] == [False, True, False]


def test_positions_compare_like_with_like() -> None:
    # An option of the choice is not a verdict: favouring Redis after approving is no
    # shift; the vote is compared with the last verdict stated, the approval.
    choice = ("Redis", "Postgres")
    r = report("APPROVE", positions=("Redis",), vote=bare("APPROVE"), options=choice)
    assert [s for _, s, _ in steps(r)] == [False, False, False]
    r = report("APPROVE", positions=("Redis",), vote=bare("REJECT"), options=choice)
    assert [s for _, s, _ in steps(r)] == [False, False, True]
    # One option to the other is.
    r = report("APPROVE", positions=("Redis", "Postgres"), options=("Redis", "Postgres"))
    assert steps(r)[-1] == ("Postgres", True, True)
    # The same verdict, worded longer, is the same position.
    assert not any(s for _, s, _ in steps(report("REJECT", positions=("Reject until bounded",))))


def test_a_merge_or_not_choice_gets_no_tradeoff_map_in_the_report() -> None:
    r = report("APPROVE", positions=("APPROVE",), options=("Merge", "Do not merge"))
    assert (r.is_choice, r.options, r.tradeoffs) == (False, [], [])
    # The same panelist's dimensions make a map when the choice has options of its own.
    r = report("APPROVE", positions=("Redis",), options=("Redis", "Postgres"))
    assert (r.is_choice, r.options) == (True, ["Redis", "Postgres"])
    assert [(t.dimension, t.weight) for t in r.tradeoffs] == [("latency", 1)]
