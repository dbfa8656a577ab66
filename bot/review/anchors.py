"""Anchors that exist: every finding's lines checked against the lines the change added.

A seat cites lines on the new side of the diff, and a model can miscount or cite a line
the change did not touch. After the engine returns, `anchor_advisory` checks each
finding against the diff the review was built from (`BuiltContext.changed_lines`: per
file, its added lines on the new side):

- a range that covers added lines is kept, clipped to the run of added lines it covers
  most (a range never spans lines the diff does not add);
- a range just outside the added lines (within `NEAR` lines) moves to the nearest added
  line of that file;
- anything else becomes a file-level finding (no lines), as does a finding on a file with
  no added line or a file the diff does not touch (its path is kept as written).

How many were clipped, moved or made file-level is said in the advisory's notes. The
renderers then annotate only anchored lines, which are all added lines of the diff.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel

from bot.council.advisory import Advisory
from bot.council.findings import normalize_path

NEAR = 3  # lines: how far off a cited line may be and still be moved, not dropped

Outcome = Literal["kept", "clipped", "moved", "file-level"]
Lines = tuple[int | None, int | None]
ChangedLines = Mapping[str, Sequence[tuple[int, int]]]
_M = TypeVar("_M", bound=BaseModel)


def anchor(
    path: str, start: int | None, end: int | None, changed: ChangedLines
) -> tuple[Lines, Outcome]:
    """(start, end) of a finding on `path` checked against `changed`, and what was done.
    A single line comes back as (line, None); a file-level finding as (None, None)."""
    if start is None:
        return (None, None), "kept"
    first, last = (start, end) if end is not None and end >= start else (start, start)
    runs = changed.get(path) or changed.get(normalize_path(path)) or ()
    overlaps = [(max(a, first), min(b, last)) for a, b in runs if a <= last and b >= first]
    if overlaps:
        lo, hi = max(overlaps, key=lambda r: (r[1] - r[0], -r[0]))
        if (lo, hi) == (first, last):
            return (start, end), "kept"
        return (lo, hi if hi > lo else None), "clipped"
    nearest = _nearest(first, last, runs)
    if nearest is not None:
        return (nearest, None), "moved"
    return (None, None), "file-level"


def _nearest(first: int, last: int, runs: Sequence[tuple[int, int]]) -> int | None:
    """The added line closest to [first, last] within NEAR lines (the earlier on a tie)."""
    best: tuple[int, int] | None = None  # (distance, line)
    for a, b in runs:
        candidate = (a - last, a) if a > last else (first - b, b)
        if candidate[0] <= NEAR and (best is None or candidate < best):
            best = candidate
    return best[1] if best is not None else None


def _anchored(item: _M, changed: ChangedLines, tally: Counter[Outcome] | None) -> _M:
    path = getattr(item, "path", None)
    start, end = getattr(item, "start_line", None), getattr(item, "end_line", None)
    if not path or start is None:
        return item
    (new_start, new_end), outcome = anchor(path, start, end, changed)
    if tally is not None:
        tally[outcome] += 1
    if outcome == "kept":
        return item
    update: dict[str, object] = {"start_line": new_start, "end_line": new_end}
    if getattr(item, "replacement", None) is not None:  # it was for the lines cited
        update["replacement"] = None
    return item.model_copy(update=update)


def anchor_advisory(advisory: Advisory, changed: ChangedLines) -> Advisory:
    """The advisory with every finding (merged, top, and each seat's own) anchored to the
    added lines in `changed`; a note says how many merged findings were changed. An empty
    `changed` (no diff to check against) leaves the advisory as it is."""
    if not changed:
        return advisory
    tally: Counter[Outcome] = Counter()
    findings = [_anchored(f, changed, tally) for f in advisory.findings]
    top = [_anchored(t, changed, None) for t in advisory.top_findings]
    seats = []
    for seat in advisory.seats:
        if seat.assessment is not None and seat.assessment.findings:
            own = [_anchored(f, changed, None) for f in seat.assessment.findings]
            seat = seat.model_copy(
                update={"assessment": seat.assessment.model_copy(update={"findings": own})}
            )
        seats.append(seat)
    notes = list(advisory.notes)
    said = anchors_note(tally)
    if said:
        notes.append(said)
    return advisory.model_copy(
        update={"findings": findings, "top_findings": top, "seats": seats, "notes": notes}
    )


def anchors_note(tally: Mapping[Outcome, int]) -> str | None:
    """e.g. "Anchors: 1 finding moved to the nearest changed line, 2 made file-level (the
    lines they cite are not lines this change adds)."; None when every anchor held."""
    parts = []
    if tally.get("moved"):
        parts.append(f"{_count(tally['moved'])} moved to the nearest changed line")
    if tally.get("clipped"):
        parts.append(f"{_count(tally['clipped'])} clipped to the changed lines")
    if tally.get("file-level"):
        parts.append(f"{_count(tally['file-level'])} made file-level")
    if not parts:
        return None
    return f"Anchors: {', '.join(parts)} (the lines they cited are not lines this change adds)."


def _count(n: int) -> str:
    return f"{n} finding" if n == 1 else f"{n} findings"
