"""The advisory as the sticky comment shows it after the follow-up: the findings people
dismissed dropped (never a critical one), and what happened said first in its notes."""

from __future__ import annotations

from collections.abc import Sequence

from bot.council.advisory import Advisory, MergedFinding
from bot.pr.followup.state import InlineResult
from bot.review.anchors import DiffLines
from bot.review.fingerprints import fingerprint

__all__ = ["filtered", "said"]


def _plural(n: int, one: str, many: str) -> str:
    return one.format(n=n) if n == 1 else many.format(n=n)


def _kept_critical_note(kept: Sequence[tuple[str, str]]) -> str:
    """Who dismissed the critical findings that stay (the renderer neutralises mentions)."""
    waived = "no dismissal waives a critical finding"
    if len(kept) == 1:
        ((title, login),) = kept
        return (
            f'The critical finding "{" ".join(title.split())}" was dismissed by @{login}; it '
            f"stays in the advisory and on the check run ({waived})."
        )
    named = ", ".join(f'"{" ".join(title.split())}" by @{login}' for title, login in kept)
    return (
        f"{len(kept)} critical findings were dismissed and stay in the advisory and on the "
        f"check run ({waived}): {named}."
    )


def said(result: InlineResult) -> list[str]:
    """What the follow-up did, in words for the advisory's notes."""
    notes: list[str] = []
    shown = result.posted + result.already
    if shown:
        text = _plural(
            shown,
            "{n} finding posted as a review comment on its line",
            "{n} findings posted as review comments on their lines",
        )
        if result.already and result.posted:
            text += f" ({result.already} of them by an earlier review)"
        notes.append(text + ".")
    if result.dismissed:
        notes.append(
            _plural(
                result.dismissed,
                "{n} finding dismissed earlier is not raised again.",
                "{n} findings dismissed earlier are not raised again.",
            )
        )
    if result.kept_critical:
        notes.append(_kept_critical_note(result.kept_critical))
    if result.fixed.resolved or result.fixed.replied:
        notes.append(
            _plural(
                result.fixed.resolved + result.fixed.replied,
                "{n} review thread closed: its finding was fixed.",
                "{n} review threads closed: their findings were fixed.",
            )
        )
    if result.error:
        notes.append(
            f"The review comments could not be posted ({result.error}); the findings are "
            "listed here."
        )
    return notes


def filtered(
    advisory: Advisory,
    dropped: Sequence[MergedFinding],
    dismissed: set[str],
    lines: DiffLines,
    result: InlineResult,
) -> Advisory:
    """The advisory without the dropped findings (merged, top, and each seat's own, so no
    collapsed section shows them either: `dismissed` holds no critical finding's
    fingerprint), with what happened said first."""
    notes = said(result)
    if not (notes or dropped):
        return advisory
    gone = {(f.path, f.start_line, f.title) for f in dropped}
    findings = [f for f in advisory.findings if (f.path, f.start_line, f.title) not in gone]
    top = [
        t
        for t in advisory.top_findings
        if t.kind != "finding" or (t.path, t.start_line, t.title) not in gone
    ]
    seats = []
    for seat in advisory.seats:
        own = seat.assessment.findings if seat.assessment is not None else []
        kept = [
            f
            for f in own
            if fingerprint(f.path, f.title, lines.line(f.path, f.start_line)) not in dismissed
        ]
        if seat.assessment is not None and len(kept) != len(own):
            seat = seat.model_copy(
                update={"assessment": seat.assessment.model_copy(update={"findings": kept})}
            )
        seats.append(seat)
    # The conditions stay as they are: only a critical finding adds one ("Resolve the
    # critical finding: ..."), and no critical finding is dropped.
    return advisory.model_copy(
        update={
            "findings": findings,
            "top_findings": top,
            "seats": seats,
            "notes": [*notes, *advisory.notes],
        }
    )
