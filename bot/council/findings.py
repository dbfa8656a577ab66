"""Merging the seats' findings: one finding per issue, attributed to every seat that raised it.

Two findings are the same issue when all three hold:
- same file (paths compared after dropping `./`, a leading `/` and diff prefixes `a/`, `b/`);
- overlapping lines, with a slack of `LINE_SLACK` lines because models misplace ranges by a
  line or two. A finding without lines is file-wide: it overlaps only another file-wide
  finding, never a line-anchored one, because "somewhere in this file" says too little to
  claim two reviewers saw the same thing (a duplicate row costs less than a wrong merge);
- similar titles: Jaccard similarity of their content words (lower-cased, stop words and
  plural/verb endings dropped) at least `TITLE_JACCARD`, or, when they share at least two
  content words, an overlap coefficient (shared / smaller set) of at least `TITLE_OVERLAP`
  (a terse title contained in a longer one).

Pairs are joined with union-find, so the result does not depend on the order of the input.
The merged finding keeps the highest severity, the longest detail and suggestion, the title
of its most severe (then most detailed) member, and the union of the line ranges.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.council.advisory import SEVERITY_ORDER, MergedFinding
from bot.council.schemas import Finding
from bot.council.words import STOP_WORDS

__all__ = [
    "LINE_SLACK",
    "TITLE_JACCARD",
    "TITLE_OVERLAP",
    "content_words",
    "merge_findings",
    "normalize_path",
    "same_issue",
]

LINE_SLACK = 2
TITLE_JACCARD = 0.5
TITLE_OVERLAP = 0.75

_WORD = re.compile(r"[a-z0-9_]+")


def _stem(word: str) -> str:
    # Just enough to make "queries"/"query" and "leaks"/"leaking"/"leaked" meet.
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> frozenset[str]:
    """Lower-cased, stemmed words of `text` without stop words."""
    return frozenset(
        _stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS and len(w) > 1
    )


def same_issue(a: str, b: str) -> bool:
    """Whether two titles name the same issue (see the module docstring)."""
    return _similar_words(content_words(a), content_words(b), a, b)


def _similar_words(wa: frozenset[str], wb: frozenset[str], a: str, b: str) -> bool:
    if not wa or not wb:
        return a.strip().lower() == b.strip().lower()
    shared = len(wa & wb)
    if shared / len(wa | wb) >= TITLE_JACCARD:
        return True
    return shared >= 2 and shared / min(len(wa), len(wb)) >= TITLE_OVERLAP


def normalize_path(path: str) -> str:
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    if path.startswith(("a/", "b/")) and len(path) > 2:
        path = path[2:]
    return path.lstrip("/")


@dataclass(frozen=True)
class _Key:
    """What the comparison needs, computed once per finding."""

    path: str
    start: int | None
    end: int | None
    words: frozenset[str]
    title: str

    @classmethod
    def of(cls, f: Finding) -> _Key:
        end = (f.end_line or f.start_line) if f.start_line is not None else None
        return cls(normalize_path(f.path), f.start_line, end, content_words(f.title), f.title)

    def lines_overlap(self, other: _Key) -> bool:
        if self.start is None or other.start is None or self.end is None or other.end is None:
            return self.start is None and other.start is None
        return self.start <= other.end + LINE_SLACK and other.start <= self.end + LINE_SLACK

    def same(self, other: _Key) -> bool:
        return (
            self.path == other.path
            and self.lines_overlap(other)
            and _similar_words(self.words, other.words, self.title, other.title)
        )


def _clusters(items: Sequence[Finding]) -> list[list[int]]:
    keys = [_Key.of(f) for f in items]
    parent = list(range(len(items)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            if keys[i].same(keys[j]):
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(items)):
        groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _rank(f: Finding) -> tuple[int, int, str]:
    # Most severe, then most detailed, then alphabetical title: a stable representative.
    return (SEVERITY_ORDER[f.severity], -len(f.detail), f.title)


def _longest(values: Iterable[str | None]) -> str | None:
    present = [v for v in values if v and v.strip()]
    return max(present, key=len) if present else None


def _merge(members: Sequence[tuple[str, Finding]]) -> MergedFinding:
    findings = [f for _, f in members]
    best = min(findings, key=_rank)
    starts = [f.start_line for f in findings if f.start_line is not None]
    ends = [f.end_line or f.start_line for f in findings if f.start_line is not None]
    start, end = (min(starts), max(e for e in ends if e is not None)) if starts else (None, None)
    raised_by = list(dict.fromkeys(seat for seat, _ in members))
    return MergedFinding(
        severity=best.severity,
        path=normalize_path(best.path),
        start_line=start,
        end_line=end if end != start else None,
        title=best.title.strip(),
        detail=_longest(f.detail for f in findings) or "",
        suggestion=_longest(f.suggestion for f in findings),
        raised_by=raised_by,
        consensus=len(raised_by),
    )


def _order(f: MergedFinding) -> tuple[int, int, str, int, str]:
    line = f.start_line if f.start_line is not None else 1 << 30
    return (SEVERITY_ORDER[f.severity], -f.consensus, f.path, line, f.title)


def merge_findings(per_seat: Sequence[tuple[str, Sequence[Finding]]]) -> list[MergedFinding]:
    """Merge every seat's findings; order: severity, consensus (desc), path, line, title."""
    flat = [(seat, f) for seat, findings in per_seat for f in findings]
    groups = _clusters([f for _, f in flat])
    merged = [_merge([flat[i] for i in sorted(group)]) for group in groups]
    return sorted(merged, key=_order)
