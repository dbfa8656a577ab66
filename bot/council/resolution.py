"""Resolve: turning votes (or assessment verdicts) into the council's outcome. No model here.

N is the number of non-abstaining voices. N < 2 -> NO_QUORUM; otherwise the first rule
that matches:
1. approvals >= ceil(2N/3) and no approval is conditional -> APPROVED
2. approvals >  floor(N/2) -> APPROVED_WITH_CONDITIONS with the approvers' conditions
                              (none given -> APPROVED); this catches a supermajority whose
                              approvals carry conditions, too
3. approvals * 2 == N      -> ESCALATE (a person must decide)
4. otherwise               -> REJECTED

An approval is conditional when it lists conditions (a vote's `conditions`, an assessment's
`merge_conditions`); a vote's `suggestions` and an assessment's `concerns` are never
conditions. `quick` and `council` have no vote phase and resolve from assessment verdicts by
the same rules: APPROVE and CONCERNS are approvals, REJECT a rejection.

Critical findings: a merged finding of severity `critical` that no approving ballot answered
keeps an approval from being plain APPROVED: it becomes APPROVED_WITH_CONDITIONS with the
condition "Resolve the critical finding: <title> (<location>)". A ballot answers a finding
when at least `RED_FLAG_ANSWERED` of the content words of the finding's title appear in its
text (a vote's rationale and conditions; an assessment's merge_conditions).

Conditions are deduplicated deterministically (`merge_conditions`: case, whitespace and
final period ignored; a condition whose content words are those of another, or nearly
(Jaccard >= `CONDITION_JACCARD`), joins it and the longer text is kept), ordered critical
findings first, then by how many approvers asked, then by first appearance, and cut to
`MAX_CONDITIONS`. The chair may merge them further (`settled_conditions`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from bot.council.advisory import MergedFinding, Resolution, SeatReport, TopFinding
from bot.council.findings import content_words, same_issue
from bot.council.schemas import Assessment, Synthesis, Vote

__all__ = [
    "CONDITION_JACCARD",
    "CRITICAL_CONDITION",
    "MAX_CONDITIONS",
    "RED_FLAG_ANSWERED",
    "ResolutionResult",
    "answers",
    "dedupe_conditions",
    "merge_conditions",
    "resolve_assessments",
    "resolve_votes",
    "settled_conditions",
    "top_findings",
]

# A red flag (or a critical finding) counts as answered by a vote when this share of its
# content words appears in the vote's rationale or conditions.
RED_FLAG_ANSWERED = 0.5
# At most this many conditions are shown: more are not read, and say the chair did not merge.
MAX_CONDITIONS = 5
# Two conditions this similar (Jaccard of content words) are one condition.
CONDITION_JACCARD = 0.8
# The condition an unanswered critical finding adds.
CRITICAL_CONDITION = "Resolve the critical finding: "


class ResolutionResult(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    resolution: Resolution
    approvals: int
    rejections: int
    abstentions: int
    n: int
    # At most MAX_CONDITIONS, merged; empty unless APPROVED_WITH_CONDITIONS.
    conditions: list[str]
    # Mean confidence (0-1) of the side that carried it; of everyone on ESCALATE.
    confidence: float
    # Every distinct condition before the cut to MAX_CONDITIONS (what the chair merges).
    all_conditions: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class _Ballot:
    approve: bool
    confidence: float  # 0-1
    conditions: tuple[str, ...]
    # What the ballot said, for deciding whether it answered a critical finding.
    said: str = ""


def _rule(approvals: int, n: int, conditional: bool) -> Resolution:
    if n < 2:
        return Resolution.NO_QUORUM
    if approvals >= math.ceil(2 * n / 3) and not conditional:
        return Resolution.APPROVED
    if approvals > n // 2:
        return Resolution.APPROVED_WITH_CONDITIONS
    if approvals * 2 == n:
        return Resolution.ESCALATE
    return Resolution.REJECTED


def _clean(text: str) -> str:
    return " ".join(text.split())


def _key(text: str) -> str:
    return text.lower().rstrip(".;")


def dedupe_conditions(items: Iterable[str]) -> list[str]:
    """Drop empty and repeated conditions (case, whitespace and final period ignored)."""
    seen: set[str] = set()
    kept: list[str] = []
    for item in items:
        text = _clean(item)
        key = _key(text)
        if key and key not in seen:
            seen.add(key)
            kept.append(text)
    return kept


def _same_condition(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return False
    if a <= b or b <= a:
        return min(len(a), len(b)) >= 2 or a == b
    return len(a & b) / len(a | b) >= CONDITION_JACCARD


@dataclass
class _Group:
    text: str
    words: frozenset[str]
    askers: set[int]
    first: int
    critical: bool


def _grouped(asked: Iterable[tuple[int, str]], critical: Iterable[str] = ()) -> list[_Group]:
    groups: list[_Group] = []
    order = 0
    entries = [(-1, c, True) for c in critical] + [(i, c, False) for i, c in asked]
    for asker, raw, is_crit in entries:
        text = _clean(raw)
        if not _key(text):
            continue
        words = content_words(text)
        same = next(
            (g for g in groups if _key(g.text) == _key(text) or _same_condition(g.words, words)),
            None,
        )
        if same is None:
            groups.append(_Group(text, words, {asker}, order, is_crit))
            order += 1
            continue
        same.askers.add(asker)
        if not same.critical and len(text) > len(same.text):
            same.text, same.words = text, words
    return groups


def _sorted(groups: list[_Group]) -> list[str]:
    groups = sorted(groups, key=lambda g: (not g.critical, -len(g.askers), g.first))
    return [g.text for g in groups]


def merge_conditions(asked: Sequence[Sequence[str]], critical: Sequence[str] = ()) -> list[str]:
    """The deterministic merge of each approver's conditions (one list per approver) and the
    conditions of unanswered critical findings, most asked first; not yet cut."""
    return _sorted(_grouped(((i, c) for i, items in enumerate(asked) for c in items), critical))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def answers(text: str, title: str) -> bool:
    """Whether `text` (a ballot's words) answers the issue `title` names: at least
    `RED_FLAG_ANSWERED` of the title's content words appear in it."""
    words = content_words(title)
    if not words:
        return True
    return len(words & content_words(text)) / len(words) >= RED_FLAG_ANSWERED


def _critical_conditions(
    findings: Sequence[MergedFinding], approvers: Sequence[_Ballot]
) -> list[str]:
    """One condition per critical finding that no approving ballot answered."""
    out: list[str] = []
    for f in findings:
        if f.severity != "critical":
            continue
        if any(answers(b.said, f.title) for b in approvers):
            continue
        where = f" ({f.location()})" if f.path else ""
        out.append(f"{CRITICAL_CONDITION}{_clean(f.title)}{where}")
    return out


def _tally(
    ballots: Sequence[_Ballot | None], findings: Sequence[MergedFinding]
) -> ResolutionResult:
    cast = [b for b in ballots if b is not None]
    approvers = [b for b in cast if b.approve]
    rejecters = [b for b in cast if not b.approve]
    critical = _critical_conditions(findings, approvers)
    asked = [b.conditions for b in approvers]
    conditional = bool(critical) or any(dedupe_conditions(c) for c in asked)
    resolution = _rule(len(approvers), len(cast), conditional)
    merged: list[str] = []
    if resolution is Resolution.APPROVED_WITH_CONDITIONS:
        merged = merge_conditions(asked, critical)
        if not merged:  # a bare majority that asked for nothing
            resolution = Resolution.APPROVED
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
        conditions=merged[:MAX_CONDITIONS],
        confidence=round(_mean([b.confidence for b in side]), 4),
        all_conditions=merged,
    )


def resolve_votes(
    votes: Sequence[Vote | None], findings: Sequence[MergedFinding] = ()
) -> ResolutionResult:
    """Resolve the vote phase; None is an abstention (a vote still invalid after the re-ask).
    `findings` are the merged findings, whose critical ones the approvals must answer."""
    ballots = [
        None
        if v is None
        else _Ballot(
            v.vote == "APPROVE",
            v.confidence,
            tuple(v.conditions),
            " ".join([v.rationale, *v.conditions]),
        )
        for v in votes
    ]
    return _tally(ballots, findings)


def _assessment_ballot(a: Assessment) -> _Ballot:
    # Only merge_conditions are conditions: concerns, recommendations and red flags are not.
    conditions = tuple(a.merge_conditions) if a.verdict != "REJECT" else ()
    return _Ballot(a.verdict != "REJECT", a.confidence / 100, conditions, " ".join(conditions))


def resolve_assessments(
    assessments: Sequence[Assessment | None], findings: Sequence[MergedFinding] = ()
) -> ResolutionResult:
    """Resolve `quick` and `council` from assessment verdicts; None is a lost seat."""
    ballots = [None if a is None else _assessment_ballot(a) for a in assessments]
    return _tally(ballots, findings)


def settled_conditions(result: ResolutionResult, synthesis: Synthesis | None) -> list[str]:
    """The conditions the advisory shows: the chair's merged ones where it gave some (at most
    MAX_CONDITIONS, an unanswered critical finding it dropped put back first), else the
    deterministic merge. Empty for any resolution but APPROVED_WITH_CONDITIONS."""
    if result.resolution is not Resolution.APPROVED_WITH_CONDITIONS:
        return []
    chair = dedupe_conditions(synthesis.conditions) if synthesis is not None else []
    if not chair:
        return list(result.conditions)
    kept = [
        c
        for c in result.conditions
        if c.startswith(CRITICAL_CONDITION)
        and not any(answers(x, c[len(CRITICAL_CONDITION) :]) for x in chair)
    ]
    return (kept + chair)[:MAX_CONDITIONS]


def _answered(flag: str, votes: Sequence[Vote]) -> bool:
    if not content_words(flag):
        return True
    return any(answers(" ".join([v.rationale, *v.conditions]), flag) for v in votes)


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
