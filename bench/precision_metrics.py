"""The metrics of bench/context_precision.py, over plain data: which lines of which files a
context shows (head-side line numbers per path), and what the change's reader needs (found
by bench/precision_truth.py).

- definition recall: of the definitions the change's added lines use, the share shown (one
  of the name's candidate definitions with its signature line and the next five all shown);
- reference recall: of the (changed symbol, other file referencing it) pairs, the share with
  a shown line that references the symbol;
- noise share: of the shown lines, the share that is none of: a line of the diff's hunks, a
  line of a used definition or of a changed symbol, a line within `NEAR_REFERENCE` lines of
  a reference (in the referencing file). Shown lines are head-side lines, plus the removed
  lines the diff shows (diff lines, never noise).

Each is None when there is nothing to count (no used definition, no referencing file,
nothing shown): such a change is left out of that metric's median and mean.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

SIGNATURE_LINES = 6  # a definition is "shown" when its signature line and the next five are
NEAR_REFERENCE = 15  # lines either side of a reference that are about it


@dataclass(frozen=True)
class Definition:
    path: str
    name: str
    start: int  # first line, 1-based (its decorators, its `export`)
    signature: int  # its def/func/class line
    end: int

    @property
    def lines(self) -> range:
        return range(self.start, self.end + 1)

    @property
    def head_lines(self) -> range:
        """Its signature line and the next five (within the definition)."""
        return range(self.signature, min(self.signature + SIGNATURE_LINES - 1, self.end) + 1)


@dataclass(frozen=True)
class UsedDefinition:
    """A name the change uses and the definitions it may mean (1 to `AMBIGUOUS`)."""

    name: str
    family: str
    candidates: tuple[Definition, ...]


@dataclass(frozen=True)
class Reference:
    """A file that references a changed symbol, and the lines where it does."""

    symbol: str
    path: str
    lines: frozenset[int]


Lines = Mapping[str, Set[int]]


def definition_recall(used: Sequence[UsedDefinition], shown: Lines) -> float | None:
    """Share of the used definitions shown: one of its candidates' signature line and the
    next five lines all shown. None when the change uses none."""
    if not used:
        return None
    hits = sum(
        1 for u in used if any(set(d.head_lines) <= shown.get(d.path, set()) for d in u.candidates)
    )
    return hits / len(used)


def reference_recall(references: Sequence[Reference], shown: Lines) -> float | None:
    """Share of the (symbol, referencing file) pairs with a referencing line shown. None
    when there are no referencing files."""
    if not references:
        return None
    hits = sum(1 for r in references if r.lines & shown.get(r.path, set()))
    return hits / len(references)


def needed_lines(
    diff_lines: Lines,
    used: Sequence[UsedDefinition],
    changed: Sequence[Definition],
    references: Sequence[Reference],
    near: int = NEAR_REFERENCE,
) -> dict[str, set[int]]:
    """The lines that are about the change: the diff's, the used definitions' and the
    changed symbols' own lines, and those within `near` lines of a reference."""
    needed: dict[str, set[int]] = {p: set(lines) for p, lines in diff_lines.items()}
    for d in [c for u in used for c in u.candidates] + list(changed):
        needed.setdefault(d.path, set()).update(d.lines)
    for r in references:
        bucket = needed.setdefault(r.path, set())
        for line in r.lines:
            bucket.update(range(max(1, line - near), line + near + 1))
    return needed


def noise_share(shown: Lines, needed: Lines, removed: int = 0) -> float | None:
    """Share of the shown lines that are not needed; `removed`: the diff's removed lines
    shown (no head line has them; they are diff lines, so never noise). None when nothing
    is shown."""
    total = sum(len(lines) for lines in shown.values()) + removed
    if not total:
        return None
    noise = sum(len(set(lines) - set(needed.get(path, ()))) for path, lines in shown.items())
    return noise / total


def median_and_mean(values: Sequence[float | None]) -> tuple[float | None, float | None, int]:
    """Median and mean of the values that are not None, and how many there were."""
    kept = [v for v in values if v is not None]
    if not kept:
        return None, None, 0
    return statistics.median(kept), statistics.fmean(kept), len(kept)
