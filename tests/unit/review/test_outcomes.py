"""After the advice: a finding is addressed when a later change touched its lines, and a
seat's contribution held up by the rule of `bot.review.outcomes` (its finding addressed,
else its vote, else its assessment's verdict, against whether the PR merged)."""

from __future__ import annotations

import pytest

from bot.context.diff import HunkRange, hunk_ranges
from bot.council.advisory import (
    Advisory,
    MergedFinding,
    Resolution,
    SeatReport,
    SeatState,
    finding_key,
)
from bot.council.schemas import Assessment, AssessmentVerdict, Vote, VoteChoice
from bot.github.fetch import PullFile
from bot.review.outcomes import SeatScore, score_seat, touched
from bot.store.outcomes import OutcomeBasis

PATCH = (
    "@@ -10,3 +10,4 @@ def login(user):\n"
    "     check(user)\n"
    "-    password = 'admin'\n"
    "+    password = read_secret()\n"
    "+    audit(user)\n"
    "@@ -40 +41,0 @@\n"
    "-@@ -1 +1 @@ is a line, not a header\n"
)


def finding(start: int | None, end: int | None = None, path: str = "app/auth.py") -> MergedFinding:
    return MergedFinding(
        severity="critical",
        path=path,
        start_line=start,
        end_line=end,
        title="Hard-coded admin password",
        detail="Anyone can log in.",
        raised_by=["seat-1"],
        consensus=1,
    )


def changed(patch: str | None = PATCH) -> dict[str, PullFile]:
    file = PullFile(path="app/auth.py", status="modified", additions=2, deletions=2, patch=patch)
    return {file.path: file}


def test_hunk_ranges_read_every_header_and_only_headers() -> None:
    assert hunk_ranges(PATCH) == [HunkRange(10, 3, 10, 4), HunkRange(40, 1, 41, 0)]
    assert hunk_ranges("@@ -1,2 +1,2 @@\r\n-a\r\n+b\r\n") == [HunkRange(1, 2, 1, 2)]
    assert hunk_ranges("not a patch") == []


def test_a_finding_on_changed_lines_was_addressed() -> None:
    assert touched(finding(11), changed())
    assert touched(finding(5, 10), changed())  # overlaps the hunk's first line
    assert touched(finding(40), changed())  # a one-line hunk without a length


def test_a_finding_beside_the_change_was_not() -> None:
    assert not touched(finding(13, 20), changed())
    assert not touched(finding(1, 9), changed())
    assert not touched(finding(11, path="app/other.py"), changed())


def test_without_lines_or_a_patch_any_change_to_the_file_counts() -> None:
    assert touched(finding(None), changed())
    assert touched(finding(100), changed(patch=None))  # a binary file, or too big to show


# --- how a seat's contribution held up ---------------------------------------------------

ADDRESSED_KEY = "app/auth.py:11-11:Hard-coded admin password"


def seat(
    verdict: AssessmentVerdict, vote: VoteChoice | None = None, state: SeatState = SeatState.OK
) -> SeatReport:
    return SeatReport(
        seat_id="seat-1",
        label="Member A",
        persona_id="security",
        persona_name="Application Security Reviewer",
        model="anthropic:claude-sonnet-5-5",
        state=state,
        assessment=Assessment(
            verdict=verdict,
            score=6,
            summary="Read it.",
            lens_scores=[],
            confidence=70,
        ),
        vote=Vote(vote=vote, confidence=0.7, rationale="Because.") if vote else None,
    )


def advisory_of(one: SeatReport, protocol: str) -> Advisory:
    other = finding(11).model_copy(update={"title": "Someone else's", "raised_by": ["seat-2"]})
    return Advisory(
        deliberation_id="d-1",
        protocol=protocol,
        topic="Review this pull request",
        resolution=Resolution.APPROVED,
        seats=[one],
        findings=[finding(11), other],
    )


# (assessment verdict, vote or None, merged, its finding addressed) -> (held up, basis)
SCORES = [
    # quick, council, strategies: no vote, the assessment's verdict decides.
    ("APPROVE", None, True, False, True, "assessment"),
    ("APPROVE", None, False, False, False, "assessment"),
    ("APPROVE", None, True, True, True, "finding-addressed"),
    ("APPROVE", None, False, True, True, "finding-addressed"),
    ("CONCERNS", None, True, False, False, "assessment"),
    ("CONCERNS", None, False, False, True, "assessment"),
    ("CONCERNS", None, True, True, True, "finding-addressed"),
    ("CONCERNS", None, False, True, True, "finding-addressed"),
    ("REJECT", None, True, False, False, "assessment"),
    ("REJECT", None, False, False, True, "assessment"),
    ("REJECT", None, True, True, True, "finding-addressed"),
    ("REJECT", None, False, True, True, "finding-addressed"),
    # board, debate: the vote decides, whatever the assessment said.
    ("CONCERNS", "APPROVE", True, False, True, "vote"),
    ("CONCERNS", "APPROVE", False, False, False, "vote"),
    ("APPROVE", "REJECT", True, False, False, "vote"),
    ("APPROVE", "REJECT", False, False, True, "vote"),
    ("APPROVE", "REJECT", True, True, True, "finding-addressed"),
    ("REJECT", "APPROVE", False, True, True, "finding-addressed"),
]


@pytest.mark.parametrize(("verdict", "vote", "merged", "addressed", "held_up", "basis"), SCORES)
def test_every_stance_against_every_ending(
    verdict: AssessmentVerdict,
    vote: VoteChoice | None,
    merged: bool,
    addressed: bool,
    held_up: bool,
    basis: OutcomeBasis,
) -> None:
    one = seat(verdict, vote)
    advisory = advisory_of(one, "board" if vote else "quick")
    # Another seat's addressed finding never counts for this one.
    keys = {ADDRESSED_KEY} if addressed else {"app/auth.py:11-11:Someone else's"}
    assert score_seat(one, advisory, merged, keys) == SeatScore(held_up=held_up, basis=basis)


def test_an_approving_quick_seat_on_a_merged_pr_holds_up() -> None:
    one = seat("APPROVE")
    assert score_seat(one, advisory_of(one, "quick"), True, set()) == SeatScore(
        held_up=True, basis="assessment"
    )


def test_an_abstaining_seat_is_scored_by_its_assessment_and_a_lost_one_not_at_all() -> None:
    abstained = seat("CONCERNS", state=SeatState.ABSTAINED)
    assert score_seat(abstained, advisory_of(abstained, "board"), False, set()) == SeatScore(
        held_up=True, basis="assessment"
    )
    lost = seat("APPROVE", state=SeatState.TIMED_OUT)
    assert score_seat(lost, advisory_of(lost, "quick"), True, {ADDRESSED_KEY}) is None


def test_the_finding_key_is_the_one_the_outcome_lists() -> None:
    assert finding_key(finding(11)) == ADDRESSED_KEY
