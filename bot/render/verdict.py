"""The verdict and who said it, as every renderer names them: each resolution's title and
emoji, each seat state's words, the comment's verdict lines (never dropped: the verdict,
the check conclusion, confidence, seats, the gate's note, the partial-advisory banner, the
chair's verdict sentence, why and topic), the lost seats' missing perspectives, which seats
raised a point, and the seats' state table of an advisory that has no verdict."""

from __future__ import annotations

from collections.abc import Sequence

from bot.council.advisory import Advisory, Resolution, SeatReport, SeatState
from bot.render.blocks import cell, count, inline, pct, table
from bot.render.conclusion import Gate, conclusion_for, gate_note

__all__ = [
    "RESOLUTION_EMOJI",
    "RESOLUTION_TITLE",
    "STATE_TEXT",
    "missing_perspectives",
    "partial_banner",
    "raised_by",
    "raised_short",
    "seat_state_table",
    "seats_phrase",
    "verdict_heading",
    "verdict_lines",
]

RESOLUTION_EMOJI: dict[Resolution, str] = {
    Resolution.APPROVED: "✅",
    Resolution.APPROVED_WITH_CONDITIONS: "🟡",
    Resolution.ESCALATE: "⚖️",
    Resolution.REJECTED: "❌",
    Resolution.NO_QUORUM: "⚠️",
    Resolution.COST_LIMIT: "💸",
    Resolution.CANCELLED: "⏹️",
    Resolution.FAILED: "⚠️",
    Resolution.NOTHING_TO_REVIEW: "➖",
}
RESOLUTION_TITLE: dict[Resolution, str] = {
    Resolution.APPROVED: "Approved",
    Resolution.APPROVED_WITH_CONDITIONS: "Approved with conditions",
    Resolution.ESCALATE: "Escalate: a person must decide",
    Resolution.REJECTED: "Rejected",
    Resolution.NO_QUORUM: "The council could not convene",
    Resolution.COST_LIMIT: "Stopped at the cost limit",
    Resolution.CANCELLED: "Deliberation cancelled",
    Resolution.FAILED: "The deliberation failed",
    Resolution.NOTHING_TO_REVIEW: "Nothing to review",
}
STATE_TEXT = {
    SeatState.OK: "ok",
    SeatState.TIMED_OUT: "timed out",
    SeatState.ERROR: "error",
    SeatState.INVALID: "invalid answer",
    SeatState.NO_VOTE: "no vote",  # with why where known: `SeatReport.no_vote`
    SeatState.ABSTAINED: "no vote",  # stored before "no_vote": the same seat
    SeatState.SKIPPED: "skipped",
}


def seats_phrase(advisory: Advisory) -> str:
    valid, total = len(advisory.valid_seats()), len(advisory.seats)
    if valid == total:
        return count(total, "seat")
    return f"{valid} of {total} seats"


def verdict_heading(advisory: Advisory) -> str:
    r = advisory.resolution
    return f"{RESOLUTION_EMOJI[r]} {RESOLUTION_TITLE[r]}"


def verdict_lines(advisory: Advisory, gate: Gate, caps: dict[str, int]) -> list[str]:
    """The comment's head, never dropped; `caps`: the verdict sentence's, why's and topic's."""
    facts = [
        f"check `{conclusion_for(advisory, gate)}`",
        seats_phrase(advisory),
        f"protocol `{advisory.protocol}`",
    ]
    if advisory.resolution.is_verdict:
        facts.insert(1, f"**confidence {pct(advisory.confidence)}**")
    lines = [f"## {verdict_heading(advisory)}\n" + " · ".join(facts)]
    blocked = gate_note(advisory, gate, list_current=False)
    if blocked:  # why the check blocks the merge, and what to do
        lines.append(blocked)
    banner = partial_banner(advisory)
    if banner:  # lost seats are said first, before anything the remaining seats said
        lines.append(banner)
    if advisory.synthesis and advisory.synthesis.verdict_sentence.strip():
        lines.append(f"> {inline(advisory.synthesis.verdict_sentence, caps['sentence'])}")
    if advisory.reason:
        lines.append(f"**Why:** {inline(advisory.reason, caps['why'])}")
    if advisory.topic.strip():
        lines.append(f"**Topic:** {inline(advisory.topic, caps['topic'])}")
    return lines


def _lost_seat_phrase(seat: SeatReport) -> str:
    lenses = f"; lenses: {', '.join(seat.lenses)}" if seat.lenses else ""
    return f"{seat.persona_name} ({STATE_TEXT[seat.state]}{lenses})"


def missing_perspectives(advisory: Advisory) -> list[str]:
    """The advisory's own list, or one phrase per lost seat."""
    if advisory.missing_perspectives:
        return list(advisory.missing_perspectives)
    return [_lost_seat_phrase(s) for s in advisory.lost_seats()]


def partial_banner(advisory: Advisory) -> str | None:
    lost = advisory.lost_seats()
    if not (advisory.partial or lost) or advisory.resolution is Resolution.NO_QUORUM:
        return None
    valid, total = len(advisory.valid_seats()), len(advisory.seats)
    missing = "; ".join(inline(m, 120) for m in missing_perspectives(advisory)[:9]) or "unknown"
    return (
        f"> ⚠️ **Partial advisory ({valid} of {total} seats).** Missing perspectives: "
        f"{missing}. This advisory does not guess what they would have said."
    )


def raised_by(advisory: Advisory, seat_ids: Sequence[str]) -> str:
    labels = ", ".join(advisory.label_for(s) for s in seat_ids)
    return f"{count(len(seat_ids), 'seat')} ({labels})" if seat_ids else "-"


def raised_short(advisory: Advisory, seat_ids: Sequence[str]) -> str:
    """ "2 seats (Member A, Member C)"; beyond three seats only the count."""
    if len(seat_ids) > 3:
        return count(len(seat_ids), "seat")
    return raised_by(advisory, seat_ids)


def seat_state_table(advisory: Advisory) -> str:
    rows = [
        [
            s.label,
            cell(s.persona_name, 60),
            cell(s.model, 60),
            s.no_vote or STATE_TEXT[s.state],
            cell(s.error or "", 160),
        ]
        for s in advisory.seats
    ]
    return "### Seats\n\n" + table(["Seat", "Persona", "Model", "State", "Error"], rows)
