"""Resolve: the deterministic rules, checked against an independent formulation."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.council.advisory import MergedFinding, Resolution, SeatReport, SeatState
from bot.council.resolution import (
    dedupe_conditions,
    resolve_assessments,
    resolve_votes,
    top_findings,
)
from bot.council.schemas import (
    Assessment,
    AssessmentVerdict,
    LensScore,
    Severity,
    Vote,
    VoteChoice,
)

R = Resolution


def vote(choice: VoteChoice, confidence: float = 0.8, *conditions: str) -> Vote:
    return Vote(
        vote=choice, confidence=confidence, rationale="because", conditions=list(conditions)
    )


def _norm(text: str) -> str:
    return " ".join(text.split()).lower().rstrip(".;")


def oracle(votes: list[Vote | None]) -> tuple[Resolution, set[str]]:
    """The rules of docs/deliberation.md ("Resolve") as fractions, written apart from the
    implementation."""
    cast = [v for v in votes if v is not None]
    approvers = [v for v in cast if v.vote == "APPROVE"]
    if len(cast) < 2:
        return R.NO_QUORUM, set()
    share = Fraction(len(approvers), len(cast))
    # An approval with a condition is conditional: a supermajority with conditions is
    # APPROVED_WITH_CONDITIONS too (issue 11: 5-0 conditional approvals were APPROVED).
    conditions = {_norm(c) for v in approvers for c in v.conditions if _norm(c)}
    if share >= Fraction(2, 3) and not conditions:
        return R.APPROVED, set()
    if share > Fraction(1, 2):
        return (R.APPROVED_WITH_CONDITIONS, conditions) if conditions else (R.APPROVED, set())
    if share == Fraction(1, 2):
        return R.ESCALATE, set()
    return R.REJECTED, set()


conditions_st = st.lists(
    st.sampled_from(["Add tests", "add  TESTS.", "Document the flag", "", "  ", "Fix the race"]),
    max_size=3,
)
vote_st = st.one_of(
    st.none(),
    st.builds(
        Vote,
        vote=st.sampled_from(["APPROVE", "REJECT"]),
        confidence=st.floats(0, 1),
        rationale=st.just("r"),
        conditions=conditions_st,
    ),
)


@given(st.lists(vote_st, max_size=9))
def test_resolve_votes_matches_the_rules(votes: list[Vote | None]) -> None:
    result = resolve_votes(votes)
    expected, expected_conditions = oracle(votes)
    assert result.resolution == expected
    assert {_norm(c) for c in result.conditions} == expected_conditions
    assert len(result.conditions) == len(expected_conditions) <= 5  # deduplicated
    assert result.n == sum(v is not None for v in votes)
    assert result.abstentions == sum(v is None for v in votes)
    assert result.approvals + result.rejections == result.n
    assert 0.0 <= result.confidence <= 1.0


# approvals -> resolution for every N from 2 to 7, approvals without conditions
A, AC = R.APPROVED, R.APPROVED_WITH_CONDITIONS
TABLE = {
    2: [R.REJECTED, R.ESCALATE, A],
    3: [R.REJECTED, R.REJECTED, A, A],
    4: [R.REJECTED, R.REJECTED, R.ESCALATE, A, A],
    5: [R.REJECTED, R.REJECTED, R.REJECTED, A, A, A],
    6: [R.REJECTED] * 3 + [R.ESCALATE, A, A, A],
    7: [R.REJECTED] * 4 + [A, A, A, A],
}


def _conditional(row: list[Resolution]) -> list[Resolution]:
    """The same row when every approver gives a condition: every approval is conditional."""
    return [AC if r is A else r for r in row]


@pytest.mark.parametrize("conditional", [False, True])
@pytest.mark.parametrize("abstaining", [0, 1, 2])
@pytest.mark.parametrize(("n", "approvals"), [(n, a) for n in TABLE for a in range(n + 1)])
def test_every_n_from_2_to_7(n: int, approvals: int, abstaining: int, conditional: bool) -> None:
    given = ("Add tests",) if conditional else ()
    votes: list[Vote | None] = [vote("APPROVE", 0.9, *given)] * approvals
    votes += [vote("REJECT", 0.6, "Remove the lock")] * (n - approvals) + [None] * abstaining
    result = resolve_votes(votes)
    expected = _conditional(TABLE[n]) if conditional else TABLE[n]
    assert result.resolution == expected[approvals]
    assert result.conditions == (["Add tests"] if expected[approvals] is AC else [])
    assert (result.n, result.abstentions) == (n, abstaining)


@pytest.mark.parametrize("cast", [0, 1])
def test_fewer_than_two_voices_is_no_quorum(cast: int) -> None:
    result = resolve_votes([vote("APPROVE")] * cast + [None, None, None])
    assert result.resolution == R.NO_QUORUM
    assert result.abstentions == 3


def test_conditions_of_a_bare_majority_are_deduplicated() -> None:
    votes = [
        vote("APPROVE", 0.9, "Add tests for the retry path", "Document the flag."),
        vote("APPROVE", 0.7, "add tests for the  retry path"),
        vote("APPROVE", 0.8, "Document the flag"),
        vote("REJECT", 0.6, "Remove the global lock"),
        vote("REJECT", 0.6),
    ]
    result = resolve_votes(votes)
    assert result.resolution == R.APPROVED_WITH_CONDITIONS
    assert result.conditions == ["Add tests for the retry path", "Document the flag."]
    assert result.confidence == pytest.approx(0.8)  # mean of the approvers


def test_bare_majority_without_conditions_is_plain_approved() -> None:
    votes = [vote("APPROVE")] * 3 + [vote("REJECT")] * 2
    result = resolve_votes(votes)
    assert result.resolution == R.APPROVED
    assert result.conditions == []


def test_rejection_confidence_is_the_rejecters_mean() -> None:
    result = resolve_votes([vote("REJECT", 0.9), vote("REJECT", 0.5), vote("APPROVE", 0.1)])
    assert result.resolution == R.REJECTED
    assert result.confidence == pytest.approx(0.7)


def test_dedupe_conditions_ignores_case_whitespace_and_final_period() -> None:
    assert dedupe_conditions(["Add tests.", " add   tests", "", "Fix it;", "fix it"]) == [
        "Add tests.",
        "Fix it;",
    ]


# --- quick / council: resolution from assessment verdicts ----------------------------------


def assessment(
    verdict: AssessmentVerdict,
    *concerns: str,
    confidence: int = 80,
    merge_conditions: Sequence[str] = (),
) -> Assessment:
    return Assessment(
        verdict=verdict,
        score=7,
        summary="Reviewed.",
        lens_scores=[LensScore(lens="correctness", score=7, analysis="fine")],
        concerns=list(concerns),
        merge_conditions=list(merge_conditions),
        confidence=confidence,
    )


def test_quick_concerns_without_merge_conditions_are_a_plain_approval() -> None:
    """Concerns are not conditions (issue 11: every concern became a merge condition)."""
    result = resolve_assessments(
        [
            assessment("APPROVE", "nit: naming"),
            assessment("CONCERNS", "Could not verify the caller handles None"),
            assessment("CONCERNS", "Error handling in the new path", "Add a migration"),
        ]
    )
    assert result.resolution == R.APPROVED
    assert result.conditions == []


def test_quick_merge_conditions_make_a_conditional_approval() -> None:
    result = resolve_assessments(
        [
            assessment("APPROVE"),
            assessment("APPROVE", "Could not verify X", merge_conditions=["Add a migration."]),
            assessment("CONCERNS", "naming", merge_conditions=["add a  migration"]),
        ]
    )
    assert result.resolution == R.APPROVED_WITH_CONDITIONS
    assert result.conditions == ["Add a migration."]
    assert result.approvals == 3


def test_merge_conditions_of_a_rejection_are_not_conditions() -> None:
    result = resolve_assessments(
        [
            assessment("APPROVE"),
            assessment("APPROVE"),
            assessment("REJECT", merge_conditions=["Rewrite it"]),
        ]
    )
    assert (result.resolution, result.conditions) == (R.APPROVED, [])


def test_assessment_majority_of_concerns_and_rejects() -> None:
    result = resolve_assessments(
        [assessment("CONCERNS", "Add tests"), assessment("REJECT"), assessment("REJECT")]
    )
    assert result.resolution == R.REJECTED
    assert result.conditions == []


def test_assessment_tie_escalates_and_lost_seats_do_not_count() -> None:
    result = resolve_assessments([assessment("APPROVE"), assessment("REJECT"), None])
    assert result.resolution == R.ESCALATE
    assert (result.n, result.abstentions) == (2, 1)


def test_assessment_confidence_is_scaled_to_one() -> None:
    result = resolve_assessments(
        [assessment("APPROVE", confidence=90), assessment("APPROVE", confidence=70)]
    )
    assert result.confidence == pytest.approx(0.8)


@given(
    st.lists(st.one_of(st.none(), st.sampled_from(["APPROVE", "CONCERNS", "REJECT"])), max_size=8)
)
def test_assessments_follow_the_vote_rules(verdicts: list[AssessmentVerdict | None]) -> None:
    """APPROVE and CONCERNS are approvals; only merge_conditions are conditions."""
    assessments = [
        None
        if v is None
        else assessment(v, f"concern {i}", merge_conditions=[f"condition {i}"] if i % 2 else [])
        for i, v in enumerate(verdicts)
    ]
    as_votes = [
        None
        if a is None
        else vote(
            "REJECT" if a.verdict == "REJECT" else "APPROVE",
            0.8,
            *(a.merge_conditions if a.verdict != "REJECT" else []),
        )
        for a in assessments
    ]
    expected, _ = oracle(as_votes)
    assert resolve_assessments(assessments).resolution == expected


# --- top findings ---------------------------------------------------------------------------


def seat(seat_id: str, red_flags: list[str], v: Vote | None = None) -> SeatReport:
    a = assessment("REJECT")
    a.red_flags = red_flags
    return SeatReport(
        seat_id=seat_id,
        label=f"Member {seat_id}",
        persona_id="p",
        persona_name="P",
        model="openai:m",
        assessment=a,
        vote=v,
    )


def merged(severity: Severity, title: str, *raised_by: str) -> MergedFinding:
    return MergedFinding(
        severity=severity,
        path="app.py",
        start_line=3,
        title=title,
        detail="d",
        raised_by=list(raised_by),
        consensus=len(raised_by),
    )


def test_top_findings_lists_critical_findings_of_two_seats_and_unanswered_red_flags() -> None:
    findings = [
        merged("critical", "Token logged in plain text", "A", "B"),
        merged("critical", "Unbounded retry loop", "A"),
        merged("major", "Missing index on orders.user_id", "A", "B", "C"),
    ]
    seats = [
        seat("A", ["Migration drops the users table"], vote("REJECT")),
        seat("B", ["Drops the users table in the migration"], vote("REJECT")),
        seat(
            "C",
            ["Secrets committed in config.yml"],
            vote("APPROVE", 0.8, "Remove the secrets from config.yml"),
        ),
    ]
    top = top_findings(findings, seats)
    assert [(t.kind, t.title, t.raised_by) for t in top] == [
        ("finding", "Token logged in plain text", ["A", "B"]),
        ("red_flag", "Migration drops the users table", ["A", "B"]),
    ]


def test_without_a_vote_every_red_flag_is_listed_and_lost_seats_are_ignored() -> None:
    lost = seat("C", ["Should not appear"])
    lost.state = SeatState.TIMED_OUT
    top = top_findings([], [seat("A", ["Race on the cache"]), lost])
    assert [t.title for t in top] == ["Race on the cache"]
