"""Context by symbol: the items `build_context` sends from a `SymbolAnalysis`
(bot/context/symbolic.py).

In value order (what the ranking keeps under pressure): the changed symbols, each whole
definition around the hunks (in the changed file's "code" item, with a few lines around
each hunk and nothing else of the file); the definitions they use (a short one whole; a
long one its signature and the next lines, its docstring, a class's fields); then the
callers of the changed symbols (per referencing file, the enclosing definition of its
first references, at most `CALLER_LINES` lines a file). One item per file: its ranges are
the parts of one numbered excerpt, each captioned with what it is and why it is there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bot.context.diff import ParsedFile
from bot.context.models import Omitted, ReadFile, SectionKind
from bot.context.nameindex import Indexing
from bot.context.pack import Item
from bot.context.related import FileReader
from bot.context.sections import (
    CODE_CHUNK_LINES,
    Part,
    changed_ranges,
    extend_hunks,
    head_lines,
    matches,
    numbered_item,
)
from bot.context.symbolic import SymbolAnalysis, SymbolReferences, UsedDefinition
from bot.context.symbols import CLASS_KINDS, ChangedSymbol, Definition
from bot.context.widen import widen

CHANGED_VALUE = 60.0  # a changed symbol's whole definition
CLASS_REST_VALUE = 20.0  # the rest of a long changed class, past its header and fields
LONG_CLASS = 120  # lines: a changed class this long is not sent whole first
HUNK_VALUE = 50.0  # the few lines around a hunk outside any changed symbol
USED_VALUE = 38.0  # a definition the change uses
CALLER_VALUE = 30.0  # the enclosing definition of a reference to a changed symbol
CALLER_TEST_VALUE = 18.0
CALLER_OTHER_VALUE = 10.0  # configuration, documentation
DECAY = 0.97  # each further definition or referencing file, in order
AROUND_HUNK = 5  # lines kept on each side of a hunk outside its changed symbols
AROUND_STATEMENT = 20  # ...and of the statement holding it, at most, either side
SHORT_DEFINITION = 40  # lines: a used definition this short is shown whole
SIGNATURE_NEXT = 8  # lines after a long definition's signature
CALLER_LINES = 40  # lines shown at most per referencing file
CALLER_SITES = 2  # references per file whose enclosing definitions are shown
SHORT_CALLER = 25  # lines: an enclosing definition this short is shown whole
AROUND_REFERENCE = 8  # lines either side of a reference in a longer one
USED_PER_FILE = 30  # used definitions followed, at most, per changed file
_ROLE_VALUE = {"code": CALLER_VALUE, "test": CALLER_TEST_VALUE}


@dataclass
class _Ranges:
    """The ranges of one file to show: (first, last, label, value)."""

    kind: SectionKind
    whys: list[str] = field(default_factory=list)
    ranges: list[tuple[int, int, str, float]] = field(default_factory=list)

    def add(self, first: int, last: int, label: str, value: float) -> None:
        if last >= first:
            self.ranges.append((first, last, label, value))


@dataclass
class SymbolContext:
    """What the analysis brings: items, the paths they cover, the bounds it met."""

    items: list[Item]
    covered: set[str]  # files shown by these items (changed files included)
    omitted: list[Omitted]
    ran: bool  # some changed file had changed symbols


async def symbol_context(
    changed: Sequence[ParsedFile],
    heads: Mapping[str, str],
    changes: Mapping[str, list[tuple[int, int]]],
    repo_files: Sequence[str],
    read_file: ReadFile,
    reader: FileReader,
    weights: Mapping[str, float],
    extended: bool,
    *,
    skip: set[str] | frozenset[str] = frozenset(),
    indexing: Indexing | None = None,
) -> SymbolContext:
    """The changed files' code items and the used and referencing files' items; `skip`:
    files left to other items (the changed files' tests, found by name); `indexing`: how
    the name index reads the tree (bot/context/nameindex.py)."""
    runs = {p: r for p, r in changes.items() if p in heads and r}
    how = indexing or Indexing()
    analysis = SymbolAnalysis(
        repo_files,
        how.read or read_file,
        dict(heads),
        runs,
        blob_sha=how.blob_sha,
        cache=how.cache,
        grep=how.grep,
    )
    code = [p for p in changed if p.path in runs and p.info.excluded is None]
    files: dict[str, _Ranges] = {}
    symbols: list[ChangedSymbol] = []
    for parsed in code:
        weight = weights.get(parsed.path, 1.0)
        mine = analysis.changed_symbols(parsed.path)
        ranges = files.setdefault(parsed.path, _Ranges("code"))
        for s in mine:
            d = s.definition
            if d.kind in CLASS_KINDS and d.end - d.start + 1 > LONG_CLASS:
                # A long class changed in its header or fields: those first; the rest of
                # it (its changed methods are symbols of their own) below the diff's hunks.
                head = min(d.fields_end or d.signature_end, d.start + 3 * SHORT_DEFINITION)
                head = max(head, min(d.end, d.signature_end + SIGNATURE_NEXT))
                label = _label(d, "changed", d.start, head) + ", its header and fields"
                ranges.add(d.start, head, label, CHANGED_VALUE * weight)
                ranges.add(head + 1, d.end, _label(d, "changed"), CLASS_REST_VALUE * weight)
                continue
            ranges.add(d.start, d.end, _label(d, "changed"), CHANGED_VALUE * weight)
        symbols += mine
    if not symbols:
        return SymbolContext([], set(), [], False)
    omitted = await _used(analysis, code, files)
    for refs in await analysis.references(symbols):
        _add_references(files, refs)
        omitted += _bounds(refs)
    items = await _items(files, changed, heads, reader, weights, extended, skip)
    note = how.unsearched() if how.unsearched is not None else None
    if note:
        omitted.append(Omitted(path="name index", reason=note))
    return SymbolContext(items, set(files) - set(skip), omitted, True)


async def _used(
    analysis: SymbolAnalysis, code: Sequence[ParsedFile], files: dict[str, _Ranges]
) -> list[Omitted]:
    """The definitions the changed files use, added to `files`; the names not resolved."""
    omitted: list[Omitted] = []
    used_all: list[UsedDefinition] = []
    for parsed in code:
        result = await analysis.resolve_used(parsed.path)
        used_all += result.used[:USED_PER_FILE]
        for u in result.unresolved:
            omitted.append(Omitted(path=f"`{u.name}`", reason=f"not resolved: {u.why}"))
    for n, used in enumerate(used_all):
        for d in used.definitions[:1]:
            target = files.setdefault(d.path, _Ranges("related"))
            _add_definition(target, d, used.why, USED_VALUE * DECAY**n)
    return omitted


def _bounds(refs: SymbolReferences) -> list[Omitted]:
    if refs.skipped:
        return [Omitted(path=f"`{refs.name}`", reason=f"references not followed: {refs.skipped}")]
    if refs.bounded:
        shown = f"named in {refs.seen:,} files; {len(refs.files)} shown"
        return [Omitted(path=f"`{refs.name}`", reason=f"references bounded: {shown}")]
    return []


async def _items(
    files: dict[str, _Ranges],
    changed: Sequence[ParsedFile],
    heads: Mapping[str, str],
    reader: FileReader,
    weights: Mapping[str, float],
    extended: bool,
    skip: set[str] | frozenset[str],
) -> list[Item]:
    """One item per file: a changed file's code item, another file's excerpt."""
    changed_by_path = {p.path: p for p in changed}
    texts = await reader.texts([p for p in files if p not in changed_by_path and p not in skip])
    items: list[Item] = []
    for path, wanted in files.items():
        parsed = changed_by_path.get(path)
        item: Item | None = None
        if path in skip:
            continue
        if parsed is not None:
            item = _code_item(parsed, heads.get(path), wanted, extended, weights.get(path, 1.0))
        elif path in texts:
            item = _file_item(path, texts[path], wanted)
        if item is not None:
            items.append(item)
    return items


def _label(d: Definition, what: str, first: int | None = None, last: int | None = None) -> str:
    a, b = first or d.start, last or d.end
    return f"{what} {d.kind} `{d.qualified}`, lines {a}-{b}"


def _add_definition(target: _Ranges, d: Definition, why: str, value: float) -> None:
    size = d.end - d.start + 1
    if why not in target.whys:
        target.whys.append(why)
    if size <= SHORT_DEFINITION:
        target.add(d.start, d.end, f"{_label(d, '')[1:]}, {why}", value)
        return
    last = min(d.end, d.signature_end + SIGNATURE_NEXT)
    target.add(d.start, last, f"{_label(d, '', d.start, last)[1:]}, {why}", value)
    if d.doc is not None:
        target.add(d.doc[0], d.doc[1], f"docstring of `{d.qualified}`", value * 0.9)
    if d.kind in CLASS_KINDS and d.fields_end is not None:
        end = min(d.fields_end, d.start + 3 * SHORT_DEFINITION)
        target.add(d.start, end, f"fields of `{d.qualified}`", value * 0.95)


def _add_references(files: dict[str, _Ranges], refs: SymbolReferences) -> None:
    for n, ref in enumerate(refs.files):
        kind: SectionKind = "test" if ref.role == "test" else "related"
        target = files.setdefault(ref.path, _Ranges(kind))
        if ref.why not in target.whys:
            target.whys.append(ref.why)
        value = _ROLE_VALUE.get(ref.role, CALLER_OTHER_VALUE) * DECAY**n
        left = CALLER_LINES
        for site in ref.sites[:CALLER_SITES]:
            if left <= 0:
                break
            e = site.enclosing
            if e is None or e.path != ref.path:
                first, last = max(1, site.line - 3), site.line + 3
                label = f"line {site.line}, {ref.why}"
            else:
                label = f"{_label(e, '', e.start, e.end)[1:]}, {ref.why}"
                first, last = e.start, min(e.end, e.start + left - 1)
                if e.end - e.start >= SHORT_CALLER or site.line > last:
                    # A long enclosing definition: its signature, and the lines around the
                    # reference.
                    head = min(e.signature_end, e.start + 4)
                    target.add(first, head, label, value)
                    left -= head - first + 1
                    first = max(head + 1, site.line - AROUND_REFERENCE)
                    last = min(e.end, site.line + AROUND_REFERENCE)
            target.add(first, last, label, value)
            left -= last - first + 1
            value *= 0.9


def _parts(wanted: list[tuple[int, int, str, float]], total: int, skip: set[int]) -> list[Part]:
    """Each line once, with the best range holding it; runs of at most `CODE_CHUNK_LINES`."""
    owner: dict[int, tuple[float, str]] = {}
    for first, last, label, value in sorted(wanted, key=lambda w: -w[3]):
        for n in range(max(first, 1), min(last, total) + 1):
            if n not in skip:
                owner.setdefault(n, (value, label))
    parts: list[Part] = []
    for n in sorted(owner):
        value, label = owner[n]
        if parts:
            p = parts[-1]
            if n == p.last + 1 and p.label == label and n - p.first < CODE_CHUNK_LINES:
                parts[-1] = Part(p.first, n, label, p.value, p.needs)
                continue
        joined = bool(parts) and parts[-1].last == n - 1 and parts[-1].label == label
        needs = len(parts) - 1 if joined else -1
        parts.append(Part(n, n, label, value * (0.98 if joined else 1.0), needs))
    return parts


def _code_item(
    parsed: ParsedFile, text: str | None, wanted: _Ranges, extended: bool, weight: float
) -> Item | None:
    """A changed file's head lines the diff does not show: its changed symbols, a few
    lines around each hunk, the callers in it of its changed symbols."""
    if text is None or parsed.info.change == "added":
        return None
    lines = head_lines(text)
    changes = changed_ranges(parsed.hunks)
    if not changes or not all(matches(h, lines) for h in parsed.hunks):
        return None
    in_diff: set[int] = set()
    for hunk in extend_hunks(parsed.hunks, lines if extended else None):
        in_diff.update(range(hunk.target_start, hunk.target_start + hunk.target_length))
    ranges = list(wanted.ranges)
    symbols = [(r[0], r[1]) for r in wanted.ranges if r[2].startswith("changed")]
    for a, b in changes:
        ranges.append((a - AROUND_HUNK, b + AROUND_HUNK, "around the change", HUNK_VALUE * weight))
    # A hunk in no changed symbol (a module-level table, a schema object, a config block):
    # the statement that holds it, as the widener finds it, up to `AROUND_STATEMENT` lines
    # on each side of the hunk.
    loose = [(a, b) for a, b in changes if not any(f <= a and b <= t for f, t in symbols)]
    for span in widen(parsed.path, parsed.info.language, text, loose) if loose else []:
        near = [(a, b) for a, b in loose if span.start <= b and a <= span.end]
        if not near:
            continue  # a deletion past the file's end: the widener clamped it
        first = max(span.start, min(a for a, _ in near) - AROUND_STATEMENT)
        last = min(span.end, max(b for _, b in near) + AROUND_STATEMENT)
        ranges.append((first, last, span.label, HUNK_VALUE * weight * 0.9))
    parts = _parts(ranges, len(lines), in_diff)
    if not parts:
        return None
    labels = [r[2] for r in wanted.ranges if r[2].startswith("changed")]
    why = "; ".join(dict.fromkeys(labels)) or "around the change"
    return numbered_item("code", parsed.path, why[:300], lines, parts)


def _file_item(path: str, text: str, wanted: _Ranges) -> Item | None:
    lines = head_lines(text.removesuffix("\n") + "\n")
    parts = _parts(wanted.ranges, len(lines), set())
    if not parts:
        return None
    why = "; ".join(wanted.whys)[:300] or "used by the change"
    return numbered_item(wanted.kind, path, why, lines, parts)


__all__ = ["SymbolContext", "symbol_context"]
