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

Beyond that title rule, two candidates (same file, overlapping lines: `candidate_pair`) are
the same issue when the chair says so, or, when it did not answer, when their wording is
similar enough:

- The chair's merge groups (`MergeCandidate` ids F1, F2, ... sent once per deliberation,
  `resolve_groups`) join findings only where they are candidates of each other: a group is
  split into its connected parts of the candidate graph (same file, overlapping lines), an
  unknown id is ignored, an id in two groups stays in the first. The title rule still
  joins near-identical titles the chair left apart.
- The fallback (`text_similarity`, used when there are no groups: the chair's call failed,
  was invalid after its re-ask, or the budget did not allow it): the cosine of the two
  findings' term vectors over title and detail, a title term weighted `TITLE_WEIGHT` (2)
  and a detail term 1. Terms are content words with a stronger stemming than the title
  rule's (a final "e" and a doubled consonant dropped: "logging"/"logs", "updated"/"update"
  meet), words every finding uses dropped (`_GENERIC`: "missing", "without", "no", ...),
  and a few families of words reviewers use interchangeably mapped to one term
  (`_FAMILIES`: "unbounded"/"no cap"/"no limit"/"forever", "token"/"secret"/"credential",
  "race"/"lock"/"thread-unsafe", ...). They merge at `TEXT_COSINE` (0.55) or above.
  Calibrated on `tests/unit/council/test_findings.py::CALIBRATION`: four issues each worded
  three ways by hand as models word them (different titles and details), and six different
  issues on the same lines as one of them (same file, same code: "secret logged on every
  retry" beside "retry has no bound"). At title weight 2 the same-issue pairs scored
  0.28-0.84 (three of the four issues join all three wordings, through at least two
  pairs each; the SQL injection joins two of three), the different-issue pairs 0.27-0.51:
  0.55 is the lowest threshold that keeps every different-issue pair apart with a margin
  (a wrong merge hides a finding; a missed one only repeats it). Title weight 1 separated
  worse (different-issue pairs up to 0.54).

Pairs are joined with union-find, so the result does not depend on the order of the input.
The merged finding keeps the highest severity, the longest detail and suggestion, the title
of its most severe (then most detailed) member, and the union of the line ranges.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.council.advisory import SEVERITY_ORDER, MergedFinding
from bot.council.schemas import Finding
from bot.council.words import STOP_WORDS

__all__ = [
    "LINE_SLACK",
    "TEXT_COSINE",
    "TITLE_JACCARD",
    "TITLE_OVERLAP",
    "TITLE_WEIGHT",
    "FindingKey",
    "MergeCandidate",
    "candidate_pair",
    "content_words",
    "merge_candidates",
    "merge_findings",
    "normalize_path",
    "resolve_groups",
    "same_issue",
    "text_similarity",
]

LINE_SLACK = 2
TITLE_JACCARD = 0.5
TITLE_OVERLAP = 0.75
TITLE_WEIGHT = 2.0
TEXT_COSINE = 0.55

# A finding as the chair's merge groups name it: (seat id, index in that seat's findings).
FindingKey = tuple[str, int]

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


# Words any finding may use, whatever its issue: they say nothing about which issue it is.
_GENERIC = frozenset(
    {
        "no", "not", "without", "miss", "missing", "never", "nothing", "noth", "instead",
        "use", "so", "when", "all", "every", "each", "full", "one", "two", "once", "there",
        "call", "code", "line", "function", "method", "value", "new", "make", "cause",
        "lead", "allow", "let", "get", "set", "issue", "problem", "change",
    }
)  # fmt: skip
# Families of words reviewers use interchangeably for one thing, each mapped to one term.
_FAMILIES: dict[str, tuple[str, ...]] = {
    "bound": (
        "bound", "unbound", "cap", "limit", "maximum", "max", "indefinite", "indefinitely",
        "forever", "infinite", "endless",
    ),
    "log": ("log", "logger", "logging", "logged", "logs", "print"),
    "secret": ("secret", "token", "credential", "password", "bearer", "authorization"),
    "leak": ("leak", "expos", "expose", "reveal", "plain"),
    "race": (
        "race", "racy", "concurrent", "concurrently", "thread", "synchronization",
        "synchroniz", "lock", "unsafe", "atomic",
    ),
    "inject": (
        "inject", "injection", "interpolat", "interpolate", "formatt", "format", "unsanitiz",
        "sanitiz", "escap", "concatenat",
    ),
    "retry": ("retry", "retri", "attempt", "backoff"),
    "fail": ("fail", "failure", "error", "exception", "raise"),
    "write": ("write", "written", "wrote", "mutat", "updat", "update", "modif"),
}  # fmt: skip
_FAMILY = {word: term for term, words in _FAMILIES.items() for word in words}


def _strong_stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    else:
        for suffix in ("ing", "ed", "es", "s", "e"):
            if len(word) > len(suffix) + 2 and word.endswith(suffix) and not word.endswith("ss"):
                word = word[: -len(suffix)]
                break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # "logg" -> "log", "formatt" -> "format"
    return word


def _terms(text: str) -> frozenset[str]:
    """The similarity's terms of `text` (see the module docstring)."""
    out: set[str] = set()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in STOP_WORDS or word in _GENERIC or len(word) < 2:
            continue
        stem = _strong_stem(word)
        term = _FAMILY.get(word) or _FAMILY.get(stem) or stem
        if term not in _GENERIC:
            out.add(term)
    return frozenset(out)


def _vector(title: str, detail: str) -> dict[str, float]:
    vector = dict.fromkeys(_terms(detail), 1.0)
    for term in _terms(title):
        vector[term] = vector.get(term, 0.0) + TITLE_WEIGHT
    return vector


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(weight * b.get(term, 0.0) for term, weight in a.items())
    norms = math.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))
    return dot / norms


def text_similarity(a: Finding, b: Finding) -> float:
    """0-1: how alike two findings' title and detail read (the fallback's measure)."""
    return _cosine(_vector(a.title, a.detail), _vector(b.title, b.detail))


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
    vector: dict[str, float]

    @classmethod
    def of(cls, f: Finding) -> _Key:
        end = (f.end_line or f.start_line) if f.start_line is not None else None
        return cls(
            normalize_path(f.path),
            f.start_line,
            end,
            content_words(f.title),
            f.title,
            _vector(f.title, f.detail),
        )

    def lines_overlap(self, other: _Key) -> bool:
        if self.start is None or other.start is None or self.end is None or other.end is None:
            return self.start is None and other.start is None
        return self.start <= other.end + LINE_SLACK and other.start <= self.end + LINE_SLACK

    def candidate(self, other: _Key) -> bool:
        """Same file and overlapping lines: the pair may be one issue."""
        return self.path == other.path and self.lines_overlap(other)

    def same(self, other: _Key, *, by_text: bool) -> bool:
        if not self.candidate(other):
            return False
        if _similar_words(self.words, other.words, self.title, other.title):
            return True
        return by_text and _cosine(self.vector, other.vector) >= TEXT_COSINE


def candidate_pair(a: Finding, b: Finding) -> bool:
    """Whether two findings are in the same file on overlapping lines (`LINE_SLACK`), a
    file-wide one only with another file-wide one: the pairs the chair is asked about."""
    return _Key.of(a).candidate(_Key.of(b))


class _Forest:
    """Union-find over 0..n-1."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def root(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, i: int, j: int) -> None:
        self.parent[self.root(j)] = self.root(i)

    def groups(self) -> list[list[int]]:
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.root(i), []).append(i)
        return list(out.values())


def _joined(keys: Sequence[_Key], group: Sequence[int]) -> list[tuple[int, int]]:
    """The candidate pairs (same file, overlapping lines) within `group`: joined along
    them only, a part of the group connected to the rest by none stays apart."""
    pairs: list[tuple[int, int]] = []
    members = list(dict.fromkeys(group))
    for n, i in enumerate(members):
        for j in members[n + 1 :]:
            if keys[i].candidate(keys[j]):
                pairs.append((i, j))
    return pairs


def _clusters(
    items: Sequence[Finding], groups: Sequence[Sequence[int]] | None = None
) -> list[list[int]]:
    keys = [_Key.of(f) for f in items]
    forest = _Forest(len(items))
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            if keys[i].same(keys[j], by_text=groups is None):
                forest.join(i, j)
    for group in groups or ():
        for i, j in _joined(keys, group):
            forest.join(i, j)
    return forest.groups()


@dataclass(frozen=True)
class MergeCandidate:
    """A finding the chair is asked about: it has at least one candidate partner."""

    id: str  # "F1", "F2", ... in the order of the seats and their findings
    seat: str
    index: int  # in the seat's findings
    finding: Finding

    @property
    def key(self) -> FindingKey:
        return (self.seat, self.index)


def merge_candidates(
    per_seat: Sequence[tuple[str, Sequence[Finding]]],
) -> list[MergeCandidate]:
    """The findings that share a file and overlapping lines with another finding (of any
    seat, its own included), numbered F1, F2, ...; empty: nothing to ask the chair."""
    flat = [(seat, i, f) for seat, findings in per_seat for i, f in enumerate(findings)]
    keys = [_Key.of(f) for _, _, f in flat]
    paired = {
        n
        for a in range(len(keys))
        for b in range(a + 1, len(keys))
        if keys[a].candidate(keys[b])
        for n in (a, b)
    }
    chosen = [flat[n] for n in sorted(paired)]
    return [MergeCandidate(f"F{n + 1}", seat, i, f) for n, (seat, i, f) in enumerate(chosen)]


def resolve_groups(
    candidates: Sequence[MergeCandidate], groups: Iterable[Sequence[str]]
) -> list[list[FindingKey]]:
    """The chair's groups of ids as findings: unknown ids ignored, an id already in an
    earlier group ignored, each group split into its parts connected by candidate pairs
    (same file, overlapping lines); what joins fewer than two findings is dropped."""
    by_id = {c.id.casefold(): c for c in candidates}
    keys = [_Key.of(c.finding) for c in candidates]
    index = {c.id: n for n, c in enumerate(candidates)}
    used: set[str] = set()
    out: list[list[FindingKey]] = []
    for group in groups:
        members: list[int] = []
        for raw in group:
            found = by_id.get(raw.strip().casefold())
            if found is None or found.id in used:
                continue
            used.add(found.id)
            members.append(index[found.id])
        forest = _Forest(len(candidates))
        for i, j in _joined(keys, members):
            forest.join(i, j)
        parts: dict[int, list[int]] = {}
        for n in members:
            parts.setdefault(forest.root(n), []).append(n)
        out += [[candidates[n].key for n in part] for part in parts.values() if len(part) > 1]
    return out


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
        replacement=_replacement(findings, start, end if end != start else None),
        raised_by=raised_by,
        consensus=len(raised_by),
    )


def _replacement(findings: Sequence[Finding], start: int | None, end: int | None) -> str | None:
    """A seat's replacement code, only when it is for exactly the merged lines."""
    for f in sorted(findings, key=_rank):
        if f.replacement is not None and (f.start_line, f.end_line or None) == (start, end):
            return f.replacement
    return None


def _order(f: MergedFinding) -> tuple[int, int, str, int, str]:
    line = f.start_line if f.start_line is not None else 1 << 30
    return (SEVERITY_ORDER[f.severity], -f.consensus, f.path, line, f.title)


def merge_findings(
    per_seat: Sequence[tuple[str, Sequence[Finding]]],
    groups: Sequence[Sequence[FindingKey]] | None = None,
) -> list[MergedFinding]:
    """Merge every seat's findings; order: severity, consensus (desc), path, line, title.

    `groups`: the chair's merge groups (`resolve_groups`), each a list of (seat, index in
    its findings); they join only findings that are candidates of each other, and a key
    naming no finding is ignored. None: the chair gave none, so the text similarity is the
    fallback (see the module docstring)."""
    flat = [(seat, f) for seat, findings in per_seat for f in findings]
    at = {
        (seat, i): n
        for n, (seat, i) in enumerate(
            (seat, i) for seat, findings in per_seat for i in range(len(findings))
        )
    }
    indexed = None
    if groups is not None:
        indexed = [[at[k] for k in group if k in at] for group in groups]
    clusters = _clusters([f for _, f in flat], indexed)
    merged = [_merge([flat[i] for i in sorted(cluster)]) for cluster in clusters]
    return sorted(merged, key=_order)
