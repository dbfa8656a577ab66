"""The anonymized record every seat reads: assessments, discussion rounds, votes.

Members appear only by label, always in the stored member order, and the record only grows
by appending sections, so the prefix all seats of a phase share stays cacheable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.council.schemas import Assessment, DiscussionMessage, Vote
from bot.council.seats import Seat


def _bullets(items: Sequence[str]) -> str:
    return "\n".join(f"  - {item}" for item in items) if items else "  - (none)"


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
            "Questions:",
            _bullets(questions),
            "Findings:",
            _bullets(
                [f"[{f.severity}] {f.path}:{f.start_line or ''} {f.title}" for f in a.findings]
            ),
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


def votes_section(order: Sequence[Seat], votes: Mapping[str, Vote | None]) -> str:
    lines = []
    for seat in order:
        if seat.seat_id not in votes:
            continue
        vote = votes[seat.seat_id]
        if vote is None:
            lines.append(f"- {seat.label}: ABSTAIN")
            continue
        conditions = "; ".join(vote.conditions) or "none"
        lines.append(
            f"- {seat.label}: {vote.vote} (confidence {vote.confidence:.2f}) - "
            f"{vote.rationale} Conditions: {conditions}"
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
