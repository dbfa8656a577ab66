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

Beyond that title rule, findings are the same issue when the chair says so, or, when it
did not answer, two candidates (same file, overlapping lines: `candidate_pair`) whose
wording is similar enough:

- The chair's merge groups (`MergeCandidate` ids F1, F2, ... sent once per deliberation,
  checked by bot/council/merge_groups.py). The chair is shown the candidates, and the
  findings elsewhere (another file, or other lines of the same file) that may be one issue
  with another finding: the title rule, a code name both titles give (`code_names`:
  `get_by_id`, `Doc.save`, `fetchAll`, `run()`), or a cosine of at least
  `ELSEWHERE_COSINE` (0.4). On the calibration set below, 11 of the 12 same-issue pairs
  score 0.41 or more (each issue's three wordings joined) and no pair of two different
  issues in different code more than 0.21; pairs of different issues in the same code
  (0.27-0.51) may be shown, the chair tells them apart. At most `ELSEWHERE_MAX` (12)
  findings are added that way, the most alike pairs first, so the prompt stays small. A
  group may span files; the code refuses only what is clearly wrong, and says so (a
  `GroupRefusal`, carried to the advisory's notes): an id the chair was not shown, an id
  an earlier group already merged, and a join of findings that share nothing - two
  findings are linked (`linked_parts`) when they are in one file, their titles share a
  term (the cosine's terms: stemmed, word families joined), they name one code name, or
  they read alike (`ELSEWHERE_COSINE`). A group whose findings fall into parts with no
  link between them is merged part by part. The title rule still joins near-identical
  titles the chair left apart.
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
The merged finding keeps the highest severity and the title of its most severe (then most
detailed) member, the representative. Its members fall into places (joined by candidate
pairs: one file, overlapping lines); the finding keeps the representative's place - the
union of its line ranges, the longest detail and suggestion of its members, a replacement
for exactly those lines - and lists every other place in `also_at` (`path:L10-L20`), never
folding another file's or a distant range's lines into its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bot.council.advisory import SEVERITY_ORDER, MergedFinding, format_location
from bot.council.schemas import Finding
from bot.council.words import STOP_WORDS

__all__ = [
    "ELSEWHERE_COSINE",
    "ELSEWHERE_MAX",
    "LINE_SLACK",
    "TEXT_COSINE",
    "TITLE_JACCARD",
    "TITLE_OVERLAP",
    "TITLE_WEIGHT",
    "FindingKey",
    "MergeCandidate",
    "candidate_pair",
    "code_names",
    "content_words",
    "linked_parts",
    "merge_candidates",
    "merge_findings",
    "normalize_path",
    "same_issue",
    "text_similarity",
]

LINE_SLACK = 2
TITLE_JACCARD = 0.5
TITLE_OVERLAP = 0.75
TITLE_WEIGHT = 2.0
TEXT_COSINE = 0.55
ELSEWHERE_COSINE = 0.4
ELSEWHERE_MAX = 12

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


# A word in backticks, or a word of code: dotted, snake_case, camelCase or called.
_CODE = re.compile(r"`([^`\s]+)`|([A-Za-z_][\w.]*\w)(\()?")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
# Names every language's findings give, whatever the issue.
_COMMON_NAMES = frozenset({"none", "null", "nil", "true", "false", "self", "this", "undefined"})


def code_names(title: str) -> frozenset[str]:
    """The names of code a title gives, lower-cased: `get_by_id`, `Doc.save`, `fetchAll`,
    `run()`, anything in backticks; a dotted name also gives its snake_case and camelCase
    parts (`DocumentService.get_by_id`: `get_by_id`). Plain words are not names."""
    out: set[str] = set()
    for quoted, word, called in _CODE.findall(title):
        name = (quoted or word).strip(".()")
        parts = name.split(".")
        dotted = len(parts) > 1 and all(len(part) > 1 for part in parts)
        if quoted or called or dotted or "_" in name or _CAMEL.search(name):
            out.add(name.lower())
            if dotted:
                out.update(p.lower() for p in parts if "_" in p or _CAMEL.search(p))
    return frozenset(n for n in out if len(n) > 1 and n not in _COMMON_NAMES)


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
    terms: frozenset[str]  # of the title
    names: frozenset[str]  # code names in the title

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
            _terms(f.title),
            code_names(f.title),
        )

    def lines_overlap(self, other: _Key) -> bool:
        if self.start is None or other.start is None or self.end is None or other.end is None:
            return self.start is None and other.start is None
        return self.start <= other.end + LINE_SLACK and other.start <= self.end + LINE_SLACK

    def candidate(self, other: _Key) -> bool:
        """Same file and overlapping lines: the pair may be one issue."""
        return self.path == other.path and self.lines_overlap(other)

    def alike(self, other: _Key) -> float:
        """How likely the pair is one issue wherever it is: 1 for similar titles or a code
        name in both, else the cosine; below `ELSEWHERE_COSINE`: not alike."""
        if self.names & other.names or _similar_words(
            self.words, other.words, self.title, other.title
        ):
            return 1.0
        return _cosine(self.vector, other.vector)

    def linked(self, other: _Key) -> bool:
        """Whether a chair's group may join the pair: it shares a file, a title term, a
        code name, or reads alike."""
        return (
            self.path == other.path
            or bool(self.terms & other.terms)
            or self.alike(other) >= ELSEWHERE_COSINE
        )

    def same(self, other: _Key, *, by_text: bool) -> bool:
        if not self.candidate(other):
            return False
        if _similar_words(self.words, other.words, self.title, other.title):
            return True
        return by_text and _cosine(self.vector, other.vector) >= TEXT_COSINE


def candidate_pair(a: Finding, b: Finding) -> bool:
    """Whether two findings are in the same file on overlapping lines (`LINE_SLACK`), a
    file-wide one only with another file-wide one: the pairs the chair is always asked
    about, and the places of one merged finding."""
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


def _parts(
    keys: Sequence[_Key], members: Sequence[int], joined: Callable[[_Key, _Key], bool]
) -> list[list[int]]:
    """`members` (indices into `keys`) in the parts that pairs of them join: `joined` is
    `_Key.candidate` (one place) or `_Key.linked` (a chair's group)."""
    forest = _Forest(len(members))
    for a in range(len(members)):
        for b in range(a + 1, len(members)):
            if joined(keys[members[a]], keys[members[b]]):
                forest.join(a, b)
    return [[members[n] for n in part] for part in forest.groups()]


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
        for j in group[1:]:
            forest.join(group[0], j)
    return forest.groups()


def linked_parts(findings: Sequence[Finding]) -> list[list[int]]:
    """The parts (indices into `findings`) a chair's group of them is joined in: two
    findings are linked when they share a file, a title term, a code name, or read alike
    (see the module docstring)."""
    keys = [_Key.of(f) for f in findings]
    return _parts(keys, range(len(keys)), _Key.linked)


@dataclass(frozen=True)
class MergeCandidate:
    """A finding the chair is asked about: it may be one issue with another finding."""

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
    seat, its own included), and at most `ELSEWHERE_MAX` more that are alike with a finding
    elsewhere (`_Key.alike`, the most alike pairs first), numbered F1, F2, ... in seat
    order; empty: nothing to ask the chair."""
    flat = [(seat, i, f) for seat, findings in per_seat for i, f in enumerate(findings)]
    keys = [_Key.of(f) for _, _, f in flat]
    paired: set[int] = set()
    elsewhere: list[tuple[float, int, int]] = []
    for a in range(len(keys)):
        for b in range(a + 1, len(keys)):
            if keys[a].candidate(keys[b]):
                paired.update((a, b))
            elif (score := keys[a].alike(keys[b])) >= ELSEWHERE_COSINE:
                elsewhere.append((-score, a, b))
    chosen, added = set(paired), 0
    for _, a, b in sorted(elsewhere):
        new = {a, b} - chosen
        if added + len(new) <= ELSEWHERE_MAX:
            chosen |= new
            added += len(new)
    listed = [flat[n] for n in sorted(chosen)]
    return [MergeCandidate(f"F{n + 1}", seat, i, f) for n, (seat, i, f) in enumerate(listed)]


def _rank(f: Finding) -> tuple[int, int, str]:
    # Most severe, then most detailed, then alphabetical title: a stable representative.
    return (SEVERITY_ORDER[f.severity], -len(f.detail), f.title)


def _longest(values: Iterable[str | None]) -> str | None:
    present = [v for v in values if v and v.strip()]
    return max(present, key=len) if present else None


def _span(findings: Sequence[Finding]) -> tuple[int | None, int | None]:
    """The union of the findings' lines: (start, end), end None for one line or none."""
    starts = [f.start_line for f in findings if f.start_line is not None]
    ends = [f.end_line or f.start_line for f in findings if f.start_line is not None]
    if not starts:
        return None, None
    start, end = min(starts), max(e for e in ends if e is not None)
    return start, end if end != start else None


def _merge(members: Sequence[tuple[str, Finding]]) -> MergedFinding:
    findings = [f for _, f in members]
    keys = [_Key.of(f) for f in findings]
    # The representative: `_rank`, then its place, so a tie does not depend on the order.
    first = min(
        range(len(findings)), key=lambda n: (_rank(findings[n]), keys[n].path, keys[n].start or 0)
    )
    best = findings[first]
    places = _parts(keys, range(len(findings)), _Key.candidate)
    here = [findings[n] for n in next(p for p in places if first in p)]
    start, end = _span(here)
    also: set[tuple[str, int, int]] = set()
    for place in places:
        if first not in place:
            at = _span([findings[n] for n in place])
            if at[0] is not None or keys[place[0]].path != keys[first].path:
                also.add((keys[place[0]].path, at[0] or 0, at[1] or 0))
    raised_by = list(dict.fromkeys(seat for seat, _ in members))
    return MergedFinding(
        severity=best.severity,
        path=normalize_path(best.path),
        start_line=start,
        end_line=end,
        title=best.title.strip(),
        detail=_longest(f.detail for f in here) or "",
        suggestion=_longest(f.suggestion for f in here),
        replacement=_replacement(here, start, end),
        raised_by=raised_by,
        consensus=len(raised_by),
        also_at=[format_location(p, s or None, e or None) for p, s, e in sorted(also)],
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

    `groups`: the chair's merge groups as bot/council/merge_groups.py kept them, each a
    list of (seat, index in its findings) joined whole, across files too; a key naming no
    finding is ignored. None: the chair gave none, so the text similarity is the fallback
    (see the module docstring)."""
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
