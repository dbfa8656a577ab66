"""The anonymized record every seat reads: assessments, discussion rounds, votes.

Members appear only by label, always in the stored member order, and the record only grows
by appending sections, so the prefix all seats of a phase share stays cacheable.

What the chair synthesizes from is here, bounded: each finding with its detail (at most
`DETAIL_MAX` characters) and its suggested fix (`SUGGESTION_MAX`), the most severe first
within `MEMBER_DETAIL_MAX` characters a member (past it, a finding shows its title only),
each member's merge conditions, and each vote's conditions (an approval's before merging;
a rejection's, what would change it), or why a member's vote did not come.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.council.advisory import no_vote_text
from bot.council.schemas import Assessment, DiscussionMessage, Finding, Vote
from bot.council.seats import Seat

DETAIL_MAX = 300  # characters of a finding's detail in the record
SUGGESTION_MAX = 200  # characters of its suggested fix
MEMBER_DETAIL_MAX = 2_400  # characters of details and fixes a member's findings show
_SEVERITY_ORDER = {"critical": 0, "major": 1, "minor": 2, "nit": 3}


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"  - {item}" for item in items) if items else "  - (none)"


def _clip(text: str, limit: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 3].rstrip() + "..."


def finding_entry(f: Finding, *, detailed: bool = True) -> str:
    """A finding as the record shows it: severity, location and title, then (`detailed`)
    its detail and suggested fix, each clipped, on their own lines."""
    span = f"{f.start_line}-{f.end_line}" if f.start_line and f.end_line else f.start_line
    entry = f"[{f.severity}] {f.path}:{span or ''} {f.title}"
    if detailed and f.detail.strip():
        entry += f"\n    Detail: {_clip(f.detail, DETAIL_MAX)}"
    if detailed and f.suggestion and f.suggestion.strip():
        entry += f"\n    Suggestion: {_clip(f.suggestion, SUGGESTION_MAX)}"
    return entry


def findings_entries(findings: Sequence[Finding]) -> list[str]:
    """Each finding in the member's order; the most severe show their detail and fix until
    `MEMBER_DETAIL_MAX` characters are spent, the rest their title only."""
    detailed: set[int] = set()
    spent = 0
    for i in sorted(range(len(findings)), key=lambda i: _SEVERITY_ORDER[findings[i].severity]):
        cost = len(finding_entry(findings[i])) - len(finding_entry(findings[i], detailed=False))
        if spent + cost > MEMBER_DETAIL_MAX:
            break
        spent += cost
        detailed.add(i)
    return [finding_entry(f, detailed=i in detailed) for i, f in enumerate(findings)]


def assessment_entry(label: str, a: Assessment) -> str:
    questions = [f"{q.to_member or 'all'}: {q.question}" for q in a.questions]
    lens = [f"{s.lens}: {'n/a' if s.score is None else f'{s.score}/10'}" for s in a.lens_scores]
    return "\n".join(
        [
            f"### {label}",
            f"Verdict: {a.verdict}; score {a.score}/10; confidence {a.confidence}/100",
            f"Summary: {a.summary}",
            f"Lens scores: {', '.join(lens) or '(none)'}",
            "Red flags:",
            _bullets(a.red_flags),
            "Concerns:",
            _bullets(a.concerns),
            "Recommendations:",
            _bullets(a.recommendations),
            "Merge conditions:",
            _bullets(a.merge_conditions),
            "Questions:",
            _bullets(questions),
            "Findings:",
            _bullets(findings_entries(a.findings)),
        ]
    )


def assessments_section(order: Sequence[Seat], assessments: Mapping[str, Assessment]) -> str:
    entries = [
        assessment_entry(s.label, assessments[s.seat_id]) for s in order if s.seat_id in assessments
    ]
    return "## Independent assessments (anonymized)\n\n" + "\n\n".join(entries)


def message_line(label: str, m: DiscussionMessage) -> str:
    target = f" -> {m.to_member}" if m.to_member else ""
    line = f"- {label}{target} [{m.type}] {m.point} Because: {m.reasoning}"
    if m.type == "SHIFT":
        line += (
            f" (was: {m.original_position or '?'}; changed by: {m.changed_by or '?'}; "
            f"now: {m.new_position or '?'})"
        )
    return line


def round_section(
    round_no: int, order: Sequence[Seat], replies: Mapping[str, Sequence[DiscussionMessage]]
) -> str:
    lines = [message_line(s.label, m) for s in order for m in replies.get(s.seat_id, ())]
    body = "\n".join(lines) if lines else "(no messages)"
    return f"## Discussion round {round_no}\n\n{body}"


def judge_section(
    cycle: int, decision: str, reasoning: str, focus: str | None, option_c: str | None
) -> str:
    text = f"## Judge after cycle {cycle}: {decision}\n{reasoning}"
    if focus:
        text += f"\nFocus: {focus}"
    if option_c:
        text += f"\nOption C: {option_c}"
    return text


def votes_section(
    order: Sequence[Seat],
    votes: Mapping[str, Vote | None],
    missing: Mapping[str, str | None] | None = None,
) -> str:
    """Each voter's vote; a vote that did not come is said as what happened: "- Member B:
    no vote (timed out)" (`missing`: seat id -> why). No member abstains: a vote is
    APPROVE or REJECT."""
    lines = []
    for seat in order:
        if seat.seat_id not in votes:
            continue
        vote = votes[seat.seat_id]
        if vote is None:
            lines.append(f"- {seat.label}: {no_vote_text((missing or {}).get(seat.seat_id))}")
            continue
        conditions = "; ".join(c for c in vote.conditions if c.strip())
        if vote.vote == "APPROVE":
            said = f"Merge conditions: {conditions}" if conditions else "Approves as is."
        else:
            said = f"Would change its vote: {conditions or 'not said'}"
        lines.append(
            f"- {seat.label}: {vote.vote} (confidence {vote.confidence:.2f}) - "
            f"{vote.rationale} {said}"
        )
    return "## Votes\n\n" + "\n".join(lines)


class Transcript:
    """Sections in the order they happened; `text()` is what the next phase reads."""

    def __init__(self) -> None:
        self._sections: list[str] = []

    def add(self, section: str) -> None:
        self._sections.append(section)

    def text(self) -> str:
        return "\n\n".join(self._sections)
