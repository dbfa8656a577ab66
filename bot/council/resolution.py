"""Resolve: turning votes (or assessment verdicts) into the council's outcome. No model here.

N is the number of non-abstaining voices. N < 2 -> NO_QUORUM; otherwise the first rule
that matches:
1. approvals >= ceil(2N/3)  -> APPROVED
2. approvals >  floor(N/2)  -> APPROVED_WITH_CONDITIONS (approvers' conditions, deduplicated;
                               none given -> APPROVED)
3. approvals * 2 == N       -> ESCALATE (a person must decide)
4. otherwise                -> REJECTED

`quick` and `council` have no vote phase and resolve from assessment verdicts: APPROVE is an
approval, REJECT a rejection, CONCERNS an approval whose concerns become conditions, so
CONCERNS among the approvals turns APPROVED into APPROVED_WITH_CONDITIONS.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from bot.council.advisory import MergedFinding, Resolution, SeatReport, TopFinding
from bot.council.findings import content_words, same_issue
from bot.council.schemas import Assessment, Vote

__all__ = [
    "RED_FLAG_ANSWERED",
    "ResolutionResult",
    "dedupe_conditions",
    "resolve_assessments",
    "resolve_votes",
    "top_findings",
]

# A red flag counts as answered by a vote when this share of its content words appears in
# the vote's rationale or conditions.
RED_FLAG_ANSWERED = 0.5


class ResolutionResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    resolution: Resolution
    approvals: int
    rejections: int
    abstentions: int
    n: int
    conditions: list[str]
    # Mean confidence (0-1) of the side that carried it; of everyone on ESCALATE.
    confidence: float


@dataclass(frozen=True)
class _Ballot:
    approve: bool
    confidence: float  # 0-1
    conditions: tuple[str, ...]


def _rule(approvals: int, n: int) -> Resolution:
    if n < 2:
        return Resolution.NO_QUORUM
    if approvals >= math.ceil(2 * n / 3):
        return Resolution.APPROVED
    if approvals > n // 2:
        return Resolution.APPROVED_WITH_CONDITIONS
    if approvals * 2 == n:
        return Resolution.ESCALATE
    return Resolution.REJECTED


def dedupe_conditions(items: Iterable[str]) -> list[str]:
    """Drop empty and repeated conditions (case, whitespace and final period ignored)."""
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        text = " ".join(item.split())
        key = text.lower().rstrip(".;")
        if key and key not in seen:
            seen.add(key)
            kept.append(text)
    return kept


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _tally(
    ballots: Sequence[_Ballot | None], *, conditions_on_supermajority: bool
) -> ResolutionResult:
    cast = [b for b in ballots if b is not None]
    approvers = [b for b in cast if b.approve]
    rejecters = [b for b in cast if not b.approve]
    resolution = _rule(len(approvers), len(cast))
    conditions: list[str] = []
    carries_conditions = resolution is Resolution.APPROVED_WITH_CONDITIONS or (
        conditions_on_supermajority and resolution is Resolution.APPROVED
    )
    if carries_conditions:
        conditions = dedupe_conditions(c for b in approvers for c in b.conditions)
        resolution = Resolution.APPROVED_WITH_CONDITIONS if conditions else Resolution.APPROVED
    side = {
        Resolution.APPROVED: approvers,
        Resolution.APPROVED_WITH_CONDITIONS: approvers,
        Resolution.REJECTED: rejecters,
        Resolution.ESCALATE: cast,
    }.get(resolution, [])
    return ResolutionResult(
        resolution=resolution,
        approvals=len(approvers),
        rejections=len(rejecters),
        abstentions=len(ballots) - len(cast),
        n=len(cast),
        conditions=conditions,
        confidence=round(_mean([b.confidence for b in side]), 4),
    )


def resolve_votes(votes: Sequence[Vote | None]) -> ResolutionResult:
    """Resolve the vote phase; None is an abstention (a vote still invalid after the re-ask)."""
    ballots = [
        None if v is None else _Ballot(v.vote == "APPROVE", v.confidence, tuple(v.conditions))
        for v in votes
    ]
    return _tally(ballots, conditions_on_supermajority=False)


def _assessment_ballot(a: Assessment) -> _Ballot:
    conditions: tuple[str, ...] = ()
    if a.verdict == "CONCERNS":
        # A CONCERNS verdict with no concern listed still names what it wants in its
        # recommendations; with neither it is an approval without conditions.
        conditions = tuple(a.concerns) or tuple(a.recommendations)
    return _Ballot(a.verdict != "REJECT", a.confidence / 100, conditions)


def resolve_assessments(assessments: Sequence[Assessment | None]) -> ResolutionResult:
    """Resolve `quick` and `council` from assessment verdicts; None is a lost seat."""
    ballots = [None if a is None else _assessment_ballot(a) for a in assessments]
    return _tally(ballots, conditions_on_supermajority=True)


def _answered(flag: str, votes: Sequence[Vote]) -> bool:
    words = content_words(flag)
    if not words:
        return True
    for vote in votes:
        said = content_words(" ".join([vote.rationale, *vote.conditions]))
        if len(words & said) / len(words) >= RED_FLAG_ANSWERED:
            return True
    return False


def _red_flag_items(seats: Sequence[SeatReport]) -> list[TopFinding]:
    """Red flags of valid seats, similar ones merged, that no vote answered."""
    votes = [s.vote for s in seats if s.vote is not None]
    items: list[TopFinding] = []
    for seat in seats:
        if not seat.is_valid or seat.assessment is None:
            continue
        for flag in seat.assessment.red_flags:
            flag = " ".join(flag.split())
            if not flag or _answered(flag, votes):
                continue
            same = next((i for i in items if same_issue(i.title, flag)), None)
            if same is None:
                items.append(TopFinding(kind="red_flag", title=flag, raised_by=[seat.seat_id]))
            elif seat.seat_id not in same.raised_by:
                same.raised_by.append(seat.seat_id)
    return items


def top_findings(
    findings: Sequence[MergedFinding], seats: Sequence[SeatReport]
) -> list[TopFinding]:
    """Critical findings raised by 2+ seats, then red flags that no vote answered.

    Without a vote phase (`quick`, `council`) no red flag is answered, so all are listed.
    """
    critical = [
        TopFinding(
            kind="finding",
            severity=f.severity,
            path=f.path,
            start_line=f.start_line,
            end_line=f.end_line,
            title=f.title,
            raised_by=list(f.raised_by),
        )
        for f in findings
        if f.severity == "critical" and f.consensus >= 2
    ]
    # A red flag that names a listed critical finding would only repeat it.
    flags = [
        flag
        for flag in _red_flag_items(seats)
        if not any(same_issue(flag.title, c.title) for c in critical)
    ]
    flags.sort(key=lambda t: -t.consensus)
    return critical + flags
