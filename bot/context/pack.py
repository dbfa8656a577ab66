"""Packing ranked items into a token budget: whole lines only, deterministic, never over.

Items come in tiers (description, changed code, widened code, related files, guidance),
each tier in rank order. Within a tier every item first gets a fair share (so one huge
file cannot starve the rest), then the items fill what is left in rank order. An item is
always a prefix of its chunks, and a chunk is whole lines, so nothing is cut mid-line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.context.models import Omitted, Section, SectionKind
from bot.tokens import TokenEstimator

CHUNK_LINES = 50
MIN_SHARE = 200  # tokens: below this a share shows too little to be worth a heading
# Characters of heading and fence `render_context` puts around a section's text.
FENCE_CHARS = 220


@dataclass
class Item:
    kind: SectionKind
    path: str | None
    why: str
    chunks: list[str]  # each is whole lines ending in "\n"
    unit: str = "lines"  # what `chunks` count as, for the omitted note
    units: int = 0  # how many units the item has (lines, hunks)
    unit_of: list[int] = field(default_factory=list)  # units each chunk completes


@dataclass
class _Taken:
    item: Item
    count: int = 0  # chunks taken
    cost: int = 0  # tokens charged, heading and note included


def chunk_lines(lines: list[str], size: int = CHUNK_LINES) -> list[str]:
    """Lines (without newlines) grouped into chunks of whole lines."""
    return [
        "".join(f"{line}\n" for line in lines[i : i + size]) for i in range(0, len(lines), size)
    ]


class Packer:
    def __init__(self, estimator: TokenEstimator, usable: int) -> None:
        self.estimator = estimator
        self.estimate = estimator.estimate
        self.left = max(usable, 0)
        self.sections: list[Section] = []
        self.omitted: list[Omitted] = []

    def frame(self, item: Item) -> int:
        """Tokens of the heading and fence around the item's text."""
        heading = len(item.kind) * 2 + len(item.path or "") + len(item.why)
        return self.estimator.estimate_chars(heading + FENCE_CHARS)

    def overhead(self, item: Item) -> int:
        # The "not included" note a partial item may carry is charged up front.
        return self.frame(item) + self.estimate(_note(item, 10**9))

    def tier(self, items: list[Item], *, share: int | None = None) -> None:
        """Pack one tier; `share` caps what any item gets in the first pass."""
        if not items:
            return
        taken = [_Taken(item) for item in items]
        fair = share if share is not None else max(self.left // len(items), MIN_SHARE)
        for t in taken:
            self._grow(t, limit=fair)
        if share is None:
            for t in taken:
                self._grow(t, limit=None)
        for t in taken:
            self._emit(t)

    def _grow(self, t: _Taken, *, limit: int | None) -> None:
        chunks = t.item.chunks
        while t.count < len(chunks):
            cost = self.estimate(chunks[t.count]) + (0 if t.count else self.overhead(t.item))
            if cost > self.left or (limit is not None and t.cost + cost > limit):
                return
            t.count += 1
            t.cost += cost
            self.left -= cost

    def _emit(self, t: _Taken) -> None:
        item = t.item
        total = _units(item, len(item.chunks))
        if t.count == 0:
            size = sum(self.estimate(c) for c in item.chunks)
            self.omitted.append(
                Omitted(
                    path=item.path or item.kind,
                    reason=f"{item.kind} ({item.why}): did not fit the budget ({size:,} tokens)",
                )
            )
            return
        text = "".join(item.chunks[: t.count])
        shown = _units(item, t.count)
        if t.count < len(item.chunks):
            text += _note(item, total - shown)
            self.omitted.append(
                Omitted(
                    path=item.path or item.kind,
                    reason=f"{item.kind}: {total - shown:,} of {total:,} {item.unit} did not "
                    "fit the budget",
                )
            )
        tokens = self.estimate(text) + self.frame(item)
        self.sections.append(
            Section(kind=item.kind, path=item.path, why=item.why, text=text, tokens=tokens)
        )


def _units(item: Item, count: int) -> int:
    if item.unit_of:
        return item.unit_of[count - 1] if count else 0
    return sum(c.count("\n") for c in item.chunks[:count])


def _note(item: Item, missing: int) -> str:
    return f"[... {missing:,} more {item.unit} not included: over the token budget]\n"
