"""Anchors that exist: every finding's lines checked against the head the change was read at.

A seat cites lines of the head (the new side of the diff, or of the file around a hunk that
the context showed), and a model can miscount or cite a line the file does not have. After
the engine returns, `anchor_advisory` checks each finding against what the context builder
recorded of the diff the review was built from (bot/context/build.py):
`BuiltContext.hunk_lines` (per changed file, the head-side lines of its hunks, added and
context) and `BuiltContext.head_line_counts` (how many lines the file has at head, where
the builder knows):

- a range on lines the head file has is kept as cited, with its suggested `replacement`.
  One that touches no hunk line is marked `outside_diff`: it is annotated on the check run
  but gets no inline review comment (GitHub takes those only on lines of a hunk), and the
  renderers show it as `path:L196 (outside the diff)`;
- a range partly past the end of the file is clipped to the lines the file has;
- a line the file does not have moves to the nearest hunk line within `NEAR` lines, or the
  finding becomes file-level (no lines);
- a file whose length is not known (its head was not read): its hunk lines are known to
  exist, its other lines are not - a range partly on hunk lines is clipped to the run of
  them it covers most, the rest moves within `NEAR` or becomes file-level, as for a line
  the file does not have;
- a finding on a file the diff does not touch becomes file-level (its path kept as written).

A replacement was written for the lines cited: it is dropped when they moved or were
clipped. How many findings moved, were clipped or made file-level, and why, is said in the
advisory's notes. Given a bare mapping of runs per file instead of a context (a caller or a
test with only the added lines), those runs are the hunk lines and no length is known.

`DiffLines` is where a review comment may go (bot/pr/followup): the diff's right side, each
file's hunks and the text of their lines, so a finding's lines are placed on one hunk
(`placement`) and its anchored line's text fingerprints it (`anchor_key`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import BaseModel

from bot.context.diff import parse_diff
from bot.context.models import BuiltContext
from bot.council.advisory import Advisory
from bot.council.findings import normalize_path
from bot.review.fingerprints import fingerprint

if TYPE_CHECKING:
    from bot.store.findings import PrFinding

NEAR = 3  # lines: how far off a cited line may be and still be moved, not dropped

AnchorOutcome = Literal["kept", "clipped", "moved", "file-level"]
# Why a finding's lines were changed: past the end of the file at head; lines the diff does
# not show in a file whose length is not known; a file the diff does not touch.
Reason = Literal["past-end", "unknown-length", "not-in-change"]
Lines = tuple[int | None, int | None]
ChangedLines = Mapping[str, Sequence[tuple[int, int]]]
_M = TypeVar("_M", bound=BaseModel)


@dataclass(frozen=True)
class HeadLines:
    """What a finding's lines are checked against: per changed file, its hunk lines at head
    as runs, and its line count where known."""

    hunks: ChangedLines
    line_counts: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, lines: BuiltContext | HeadLines | ChangedLines) -> HeadLines:
        if isinstance(lines, HeadLines):
            return lines
        if isinstance(lines, BuiltContext):
            # A context stored before hunk_lines: its added lines are the lines known.
            return cls({**lines.changed_lines, **lines.hunk_lines}, lines.head_line_counts)
        return cls(lines)

    def key(self, path: str) -> str | None:
        """The diff's own spelling of `path` (`./a.py`, `b/a.py` are `a.py`); None: the
        diff does not touch it."""
        if path in self.hunks:
            return path
        normal = normalize_path(path)
        return normal if normal in self.hunks else None


@dataclass(frozen=True)
class Placed:
    """Where a finding's lines end up: (start, end) - a single line as (line, None), a
    file-level finding as (None, None) - what was done, why, and whether they are lines of
    the head outside every hunk."""

    lines: Lines
    outcome: AnchorOutcome
    reason: Reason | None = None
    outside_diff: bool = False


def place(
    path: str, start: int | None, end: int | None, lines: BuiltContext | HeadLines | ChangedLines
) -> Placed:
    """The lines (start, end) of a finding on `path`, checked against the head."""
    if start is None:
        return Placed((None, None), "kept")
    head = HeadLines.of(lines)
    first, last = (start, end) if end is not None and end >= start else (start, start)
    key = head.key(path)
    if key is None:
        return Placed((None, None), "file-level", "not-in-change")
    runs = head.hunks[key]
    count = head.line_counts.get(key)
    reason: Reason
    if count is not None:
        top = max([count, *(b for _, b in runs)])  # the last line the file has
        if first >= 1 and last <= top:
            return Placed((start, end), "kept", outside_diff=not _touches(first, last, runs))
        lo, hi = max(first, 1), min(last, top)
        if lo <= hi:
            clipped = (lo, hi if hi > lo else None)
            return Placed(clipped, "clipped", "past-end", not _touches(lo, hi, runs))
        reason = "past-end"
    else:
        overlaps = [(max(a, first), min(b, last)) for a, b in runs if a <= last and b >= first]
        if sum(b - a + 1 for a, b in overlaps) == last - first + 1:
            return Placed((start, end), "kept")
        if overlaps:
            lo, hi = max(overlaps, key=lambda r: (r[1] - r[0], -r[0]))
            return Placed((lo, hi if hi > lo else None), "clipped", "unknown-length")
        reason = "unknown-length"
    nearest = _nearest(first, last, runs)
    if nearest is not None:
        return Placed((nearest, None), "moved", reason)
    return Placed((None, None), "file-level", reason)


def anchor(
    path: str, start: int | None, end: int | None, lines: BuiltContext | HeadLines | ChangedLines
) -> tuple[Lines, AnchorOutcome]:
    """(start, end) of a finding on `path` checked against the head, and what was done."""
    placed = place(path, start, end, lines)
    return placed.lines, placed.outcome


def _touches(first: int, last: int, runs: Sequence[tuple[int, int]]) -> bool:
    return any(a <= last and b >= first for a, b in runs)


def _nearest(first: int, last: int, runs: Sequence[tuple[int, int]]) -> int | None:
    """The hunk line closest to [first, last] within NEAR lines (the earlier on a tie)."""
    best: tuple[int, int] | None = None  # (distance, line)
    for a, b in runs:
        candidate = (a - last, a) if a > last else (first - b, b)
        if candidate[0] <= NEAR and (best is None or candidate < best):
            best = candidate
    return best[1] if best is not None else None


Tally = Counter[tuple[AnchorOutcome, Reason | None]]


def _anchored(item: _M, head: HeadLines, tally: Tally | None) -> _M:
    path = getattr(item, "path", None)
    start, end = getattr(item, "start_line", None), getattr(item, "end_line", None)
    if not path or start is None:
        return item
    placed = place(path, start, end, head)
    if tally is not None:
        tally[(placed.outcome, placed.reason)] += 1
    update: dict[str, object] = {}
    if "outside_diff" in type(item).model_fields:  # merged and top findings; not a seat's
        update["outside_diff"] = placed.outside_diff
    if placed.outcome != "kept":
        update.update(start_line=placed.lines[0], end_line=placed.lines[1])
        if getattr(item, "replacement", None) is not None:  # it was for the lines cited
            update["replacement"] = None
    if all(getattr(item, k) == v for k, v in update.items()):
        return item
    return item.model_copy(update=update)


def anchor_advisory(advisory: Advisory, lines: BuiltContext | HeadLines | ChangedLines) -> Advisory:
    """The advisory with every finding (merged, top, and each seat's own) anchored to the
    head in `lines` (the review's context); a note says how many merged findings were
    changed and why. A context without a changed file (no diff to check against) leaves
    the advisory as it is."""
    head = HeadLines.of(lines)
    if not head.hunks:
        return advisory
    tally: Tally = Counter()
    findings = [_anchored(f, head, tally) for f in advisory.findings]
    top = [_anchored(t, head, None) for t in advisory.top_findings]
    seats = []
    for seat in advisory.seats:
        if seat.assessment is not None and seat.assessment.findings:
            own = [_anchored(f, head, None) for f in seat.assessment.findings]
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


_DONE: dict[AnchorOutcome, str] = {
    "moved": "moved to the nearest line of the diff",
    "clipped": "clipped to the lines the file has",
    "file-level": "made file-level",
}
_WHY: dict[Reason, str] = {
    "past-end": "the lines cited are not in the file at head",
    "unknown-length": "the lines cited are not in the diff, and the file at head was not read",
    "not-in-change": "the file is not part of this change",
}


def anchors_note(tally: Mapping[tuple[AnchorOutcome, Reason | None], int]) -> str | None:
    """e.g. "Anchors: 1 finding moved to the nearest line of the diff, 1 finding made
    file-level (the lines cited are not in the file at head); 2 findings made file-level
    (the file is not part of this change)."; None when every anchor held (on lines
    outside the diff too: their location says so)."""
    groups = []
    for reason, why in _WHY.items():
        parts = []
        for outcome, done in _DONE.items():
            n = tally.get((outcome, reason), 0)
            if outcome == "clipped" and reason == "unknown-length":
                done = "clipped to the lines of the diff"
            if n:
                parts.append(f"{_count(n)} {done}")
        if parts:
            groups.append(f"{', '.join(parts)} ({why})")
    if not groups:
        return None
    return f"Anchors: {'; '.join(groups)}."


def _count(n: int) -> str:
    return f"{n} finding" if n == 1 else f"{n} findings"


# -- the diff's lines, where a review comment may go -----------------------------------------


@dataclass(frozen=True)
class DiffLines:
    """The diff's right side: each file's hunks as (first, last) line ranges, and the text
    of every line in them; `changed`, when given, limits placements to the lines of the
    hunks of the diff the review read, added and context (`BuiltContext.hunk_lines`)."""

    hunks: Mapping[str, Sequence[tuple[int, int]]]
    text: Mapping[str, Mapping[int, str]]
    changed: Mapping[str, Sequence[tuple[int, int]]] | None = None

    @classmethod
    def from_diff(
        cls, diff_text: str, changed: Mapping[str, Sequence[tuple[int, int]]] | None = None
    ) -> DiffLines:
        hunks: dict[str, list[tuple[int, int]]] = {}
        text: dict[str, dict[int, str]] = {}
        for parsed in parse_diff(diff_text):
            if parsed.info.binary or not parsed.hunks:
                continue
            path = parsed.info.path
            ranges, lines = hunks.setdefault(path, []), text.setdefault(path, {})
            for hunk in parsed.hunks:
                number = hunk.target_start
                for line in hunk.lines:
                    if line[:1] in ("+", " ", ""):
                        lines[number] = line[1:]
                        number += 1
                if number > hunk.target_start:
                    ranges.append((hunk.target_start, number - 1))
        return cls(hunks=hunks, text=text, changed=changed or None)

    def line(self, path: str, number: int | None) -> str | None:
        if number is None:
            return None
        return self.text.get(path, {}).get(number)

    def _hunk(self, path: str, number: int) -> tuple[int, int] | None:
        return next((h for h in self.hunks.get(path, ()) if h[0] <= number <= h[1]), None)

    def _read(self, path: str, number: int) -> bool:
        """Is `number` a line of a hunk of the diff the review read?"""
        if self.changed is None:
            return True
        return any(a <= number <= b for a, b in self.changed.get(path, ()))

    def placement(
        self, path: str, start: int | None, end: int | None
    ) -> tuple[int | None, int] | None:
        """(start_line or None, line) GitHub accepts for the finding's lines, or None."""
        if start is None:
            return None
        last = end if end is not None and end >= start else start
        hunk = self._hunk(path, last)
        if hunk is None or not self._read(path, last):
            return None
        if last > start and hunk[0] <= start and self._read(path, start):
            return start, last
        return None, last

    def has_anchor(self, path: str, key: str) -> bool:
        return any(anchor_key(path, text) == key for text in self.text.get(path, {}).values())

    def still_there(self, row: PrFinding) -> bool:
        """Is the finding's anchored line in the diff with the text it was raised on?"""
        if row.line is None:
            return row.path in self.hunks
        return any(
            fingerprint(row.path, row.title, text) == row.fingerprint
            for text in self.text.get(row.path, {}).values()
        )


def anchor_key(path: str, code_line: str | None) -> str:
    line = " ".join((code_line or "").split())
    return hashlib.sha256(f"{path}\0{line}".encode()).hexdigest()[:16]
