"""`build_context`: a pull request in, the packed context and its signals out.

The one composition of the package: scan, classify, rank, choose, then redact and parse
only what was chosen, read, signal, widen, discover related material, pack. The work and
memory follow what can be sent, not the size of the diff. No network I/O here: files come
through `read_file`. The changed-file scan and ranking are bot/context/changed.py, the
packing plan bot/context/plan.py; here, the guidance files found and what the related
files are worth.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Mapping, Sequence
from typing import NamedTuple

from bot.context.bysymbol import SymbolContext, symbol_context
from bot.context.changed import (
    MATERIAL_FACTOR,
    MAX_HEAD_READS,
    Changed,
    added_heads,
    changed_lines,
    consider,
    diff_why,
    head_line_counts,
    hunk_lines,
    is_sent,
    listed_not_sent,
    rank,
    rank_weights,
    read_heads,
    reads_head,
    redacted,
    scanned,
    unconsidered_omitted,
    with_imports,
    with_languages,
)
from bot.context.classify import glob_match
from bot.context.diff import ParsedFile, decode_diff
from bot.context.excerpt import ChangeNames
from bot.context.guides import change_words, guide_item
from bot.context.models import (
    BuiltContext,
    GuidanceSource,
    Omitted,
    PullRequestMeta,
    ReadFile,
    Section,
    Signals,
)
from bot.context.nameindex import Indexing
from bot.context.pack import Item, title_text
from bot.context.plan import Plan, description, listing_tokens
from bot.context.prose import clean_untrusted
from bot.context.redact import Redactor
from bot.context.related import (
    MAX_FILE_BYTES,
    FileReader,
    Named,
    Related,
    discover,
    guidance,
    named_paths,
)
from bot.context.sections import (
    RELATED_DECAY,
    RELATED_VALUE,
    code_item,
    diff_item,
    file_item,
    named_items,
    names_of_change,
)
from bot.context.signals import compute_signals
from bot.tokens import TokenEstimator, default_estimator

# What other modules import from here (bot/context/__init__.py and the tests).
__all__ = ["DEFAULT_BUDGET", "MATERIAL_FACTOR", "build_context"]

DEFAULT_BUDGET = 60_000
NOT_INCLUDED_SHARE = 0.03  # kept for the "Not included" list
NOT_INCLUDED_MIN = 100  # tokens
NOT_INCLUDED_SLACK = 8  # tokens: the second packing's list may differ a little
TESTS_VALUE = 15.0  # a changed file's tests, when the symbol analysis ran
SHORT_IMPORT = 30  # lines: an imported file the analysis did not reach is sent this short
REST_VALUE = 8.0  # what the changed files import that the analysis did not reach
EXTEND_WHEN = 0.6  # hunks get more lines of the head when the diff takes at most this share


async def build_context(
    meta: PullRequestMeta,
    diff: str | bytes,
    repo_files: Sequence[str],
    read_file: ReadFile,
    *,
    budget_tokens: int = DEFAULT_BUDGET,
    ignore_globs: Sequence[str] = (),
    estimator: TokenEstimator | None = None,
    guidance_from: GuidanceSource | None = None,
    indexing: Indexing | None = None,
) -> BuiltContext:
    """`read_file` reads the change's own tree (the head); the repository's guidance comes
    from `guidance_from` when given (a pull request's default branch: the PR's changes to
    README or AGENTS.md are reviewed in the diff, not obeyed as guidance), else from the
    same tree as the change. `indexing`: how the symbol analysis's name index reads the
    tree (bot/context/nameindex.py `Indexing`: a blob cache, `git grep`, a bounded reader)."""
    estimator = estimator or default_estimator()
    redactor = Redactor()
    text = decode_diff(diff)
    usable = budget_tokens - math.ceil(budget_tokens * estimator.margin)
    reader = FileReader(read_file, redactor)
    chosen, sendable, heads = await _choose(
        meta, text, ignore_globs, reader, redactor, estimator, usable
    )
    # paths.ignore means "not this": not as related material either.
    visible = [p for p in repo_files if not _ignored(p, ignore_globs)]
    # Discovery reads many files to find a few (importers, tests): through the index's
    # reader when the deployment gives one (no request a file past an archive's limit).
    scan = (
        reader if indexing is None or indexing.read is None else FileReader(indexing.read, redactor)
    )
    guide_reader = reader if guidance_from is None else FileReader(guidance_from.read, redactor)
    material = await _gather(
        sendable, heads, chosen.files, visible, ignore_globs, guidance_from,
        readers=(scan, guide_reader, reader),
    )  # fmt: skip
    title = clean_untrusted(meta.title, redactor)
    items, left_out = await _compose(
        chosen, sendable, heads, material, visible, read_file, reader, usable, estimator, indexing
    )
    # The material is in the items now: the texts it came from go (memory follows what
    # is sent, not what was read).
    del sendable, heads, material
    reader.forget_all()
    scan.forget_all()
    guide_reader.forget_all()
    unread = _unread([scan, reader, guide_reader], {f.path for f in chosen.files})
    plan = Plan(
        estimator,
        usable - estimator.estimate(title_text(title)),
        description(meta, redactor),
        items,
        listed_not_sent(chosen.ranked, chosen.considered + chosen.unconsidered)
        + unconsidered_omitted(chosen.unconsidered)
        + left_out,
        unread,
    )
    sections, omitted = _packed(plan, usable, estimator)
    return _built(title, sections, omitted, chosen, redactor, budget_tokens, usable)


class _Chosen(NamedTuple):
    """The change's files as scanned (facts, no lines), ranked, and split into those
    considered and those listed unread; its signals; its heads' line counts."""

    files: list[Changed]
    ranked: list[Changed]
    considered: list[Changed]
    unconsidered: list[Changed]
    signals: Signals
    line_counts: dict[str, int]


async def _choose(
    meta: PullRequestMeta,
    text: str,
    ignore_globs: Sequence[str],
    reader: FileReader,
    redactor: Redactor,
    estimator: TokenEstimator,
    usable: int,
) -> tuple[_Chosen, list[ParsedFile], dict[str, str]]:
    """Choose first: every file is scanned for its facts (what ranking, signals and the
    "Not included" list need) and its lines dropped; only the files chosen are parsed
    again, redacted, for their text (returned with the heads read)."""
    files = scanned(text, ignore_globs)
    wanted = [f for f in files if reads_head(f.info)][:MAX_HEAD_READS]
    # A head can tell the language of a file whose path does not (a shebang): read first.
    early = {f.path for f in wanted if f.info.language is None}
    heads = await reader.texts([f.path for f in wanted if f.path in early])
    files = with_languages(files, heads, text)
    wanted = [f for f in files if reads_head(f.info)][:MAX_HEAD_READS]  # the same, as now
    ranked = rank(files)
    chosen = [f for f in ranked if is_sent(f)]
    if not [f for f in chosen if f.info.excluded is None]:
        # Nothing else to read: generated, vendored and lock files go in.
        chosen = [f for f in ranked if not f.info.binary]
    # A diff many times the budget is not chunked, valued and packed whole: the files past
    # `MATERIAL_FACTOR` budgets of diff (in rank order) are listed unread, unredacted.
    considered, unconsidered = consider(chosen, estimator, usable * MATERIAL_FACTOR)
    kept = {f.path for f in considered}
    heads, imports = await read_heads(wanted, kept, heads, early, reader)
    files = with_imports(files, heads, imports, text)
    signals = compute_signals([f.facts for f in files], heads, meta)
    sendable = [redacted(f, text, redactor) for f in considered]
    for f in unconsidered:
        redactor.counts.update(f.path_redactions or {})  # its path is listed, redacted
    heads.update(added_heads(sendable))
    line_counts = head_line_counts(files, heads)  # before the heads are let go
    return _Chosen(files, ranked, considered, unconsidered, signals, line_counts), sendable, heads


class _Material(NamedTuple):
    """What the change is read with, and the texts read of it."""

    related: list[Related]
    texts: dict[str, str]
    guides: list[Related]
    guide_texts: dict[str, str]
    named: list[Named]
    named_texts: dict[str, str]


async def _gather(
    sendable: list[ParsedFile],
    heads: dict[str, str],
    files: list[Changed],
    visible: list[str],
    ignore_globs: Sequence[str],
    guidance_from: GuidanceSource | None,
    *,
    readers: tuple[FileReader, FileReader, FileReader],
) -> _Material:
    """The related files `discover` finds, the guidance files and the files the change
    names by path, read through `readers`: the discovery's, the guidance's, the change's."""
    scan, guide_reader, reader = readers
    related = await discover(sendable, heads, visible, scan)
    texts = await scan.texts([r.path for r in related])
    guides = _guides(guidance_from, visible, ignore_globs, [f.path for f in files])
    if guidance_from is None:
        # From the change's own tree, a changed guidance file is already there: its diff
        # and the rest of it at head. (From the default branch it is the rules as they
        # were, which the change is measured against: kept.)
        sent = {f.path for f in sendable}
        guides = [g for g in guides if g.path not in sent]
    guide_texts = await guide_reader.texts([r.path for r in guides])
    named = named_paths(sendable, visible)
    named_texts = await reader.texts([n.path for n in named if n.kind != "listing"])
    return _Material(related, texts, guides, guide_texts, named, named_texts)


async def _compose(
    chosen: _Chosen,
    sendable: list[ParsedFile],
    heads: dict[str, str],
    material: _Material,
    visible: list[str],
    read_file: ReadFile,
    reader: FileReader,
    usable: int,
    estimator: TokenEstimator,
    indexing: Indexing | None,
) -> tuple[list[Item], list[Omitted]]:
    """The items to pack - the diffs; context by symbol (the changed symbols, what they
    use, who uses them: one item per file), or the changed files' code where it did not
    run; the files the change names; the related files; the guidance - and what the
    analysis, the tests and the guidance leave out, listed."""
    weights = rank_weights(sendable)
    diffs, extend = _diff_items(sendable, heads, weights, chosen.signals, usable, estimator)
    # The tests of the changed files stay `discover`'s (found by name, shown where they
    # meet the change's names); the analysis brings the rest.
    related, texts = material.related, material.texts
    tests_of = {r.path for r in related if r.kind == "test" and r.why.startswith("tests ")}
    by_symbol = await _by_symbol(
        symbol_context(
            sendable,
            heads,
            changed_lines(chosen.files),
            visible,
            read_file,
            reader,
            weights,
            extend,
            skip=tests_of,
            indexing=indexing,
        )
    )
    items: list[Item] = list(diffs)
    if by_symbol.ran:
        items += by_symbol.items
        # Of `discover`: the changed files' tests, and what they import that the analysis
        # did not reach (last); not their importers (the references are).
        related = [
            r
            for r in related
            if r.path not in by_symbol.covered
            and (r.path in tests_of or _short_import(r, texts.get(r.path)))
        ]
    else:
        items += [
            i for f in sendable if (i := code_item(f, heads, weights[f.path], extend)) is not None
        ]
    # Related files are shown where they meet the change's names, never from their top.
    names = names_of_change(sendable, heads)
    items += named_items(material.named, material.named_texts, visible, names)
    related_items, untouched = _related_items(related, texts, by_symbol.ran, tests_of, names)
    changed = [f.path for f in chosen.files]
    about, off_topic = _guide_items(material.guides, material.guide_texts, changed, names)
    return [*items, *related_items, *about], by_symbol.omitted + untouched + off_topic


def _built(
    title: str,
    sections: list[Section],
    omitted: list[Omitted],
    chosen: _Chosen,
    redactor: Redactor,
    budget_tokens: int,
    usable: int,
) -> BuiltContext:
    built = BuiltContext(
        title=title,
        sections=sections,
        omitted=omitted,
        signals=chosen.signals,
        redactions=redactor.total,
        redaction_kinds=dict(sorted(redactor.counts.items())),
        tokens=sum(s.tokens for s in sections),
        budget=budget_tokens,
        usable=usable,
        files=[f.info for f in chosen.files],
    )
    # Set, not validated (a copy of every run of a huge diff): built as the field's type.
    built.changed_lines = changed_lines(chosen.files)
    built.hunk_lines = hunk_lines(chosen.files)
    built.head_line_counts = chosen.line_counts
    return built


def _diff_items(
    sendable: list[ParsedFile],
    heads: Mapping[str, str],
    weights: Mapping[str, float],
    signals: Signals,
    usable: int,
    estimator: TokenEstimator,
) -> tuple[list[Item], bool]:
    """The changed files' diffs, and whether their hunks got more context lines from the
    head: only when the diff leaves room (under pressure, more hunks matter more than
    longer ones)."""
    room = usable * 4  # characters: more than one budget could hold of any one file

    def items(extend: bool) -> list[Item]:
        return [
            diff_item(
                f, diff_why(f.info), heads, weights[f.path], signals, extend=extend, room_chars=room
            )
            for f in sendable
        ]

    diffs = items(False)
    size = estimator.estimate_chars(sum(len(c) for i in diffs for c in i.chunks))
    extend = size <= EXTEND_WHEN * usable
    return (items(True) if extend else diffs), extend


async def _by_symbol(analysis: Awaitable[SymbolContext]) -> SymbolContext:
    """A flaw in the analysis of one odd file costs its by-symbol context, not the review:
    the generic related files are sent instead, and the list says so."""
    try:
        return await analysis
    except (RecursionError, ValueError, LookupError, UnicodeError) as error:
        failed = Omitted(path="context by symbol", reason=f"not run ({type(error).__name__})")
        return SymbolContext([], set(), [failed], False)


def _related_items(
    related: list[Related],
    texts: Mapping[str, str],
    by_symbol: bool,
    tests_of: set[str],
    names: ChangeNames,
) -> tuple[list[Item], list[Omitted]]:
    """The related files shown where they meet the change's names. After the analysis
    (`by_symbol`), a changed file's tests are shown where they name a changed symbol; one
    that names none is listed (its test callers are the references already)."""
    narrow = ChangeNames(changed=names.changed)
    items: list[Item] = []
    untouched: list[Omitted] = []
    for n, r in enumerate(r for r in related if texts.get(r.path)):
        only = by_symbol and r.path in tests_of
        value = _related_value(r, by_symbol, n)
        item = file_item(r, texts[r.path], value, narrow if only else names, glimpse=not only)
        if item is not None:
            items.append(item)
        elif only:
            why = f"{r.why}: no line names a changed symbol"
            untouched.append(Omitted(path=r.path, reason=f"test ({why})"))
    return items, untouched


def _guide_items(
    guides: list[Related], texts: Mapping[str, str], changed: list[str], names: ChangeNames
) -> tuple[list[Item], list[Omitted]]:
    """The guidance files' sections about the changed areas; the files with none, listed."""
    words = change_words(changed)
    about = [r for r in guides if texts.get(r.path)]
    items = [guide_item(r, texts[r.path], words, names.changed, n) for n, r in enumerate(about)]
    off_topic = [
        Omitted(path=r.path, reason="guidance: no section is about the changed areas")
        for r, i in zip(about, items, strict=True)
        if i is None
    ]
    return [i for i in items if i is not None], off_topic


def _unread(readers: Sequence[FileReader], diffed: set[str]) -> list[Omitted]:
    """The files `readers` could not read, then those over the size limit (a changed one
    still has its diff sent)."""
    failures = {path: kind for reader in readers for path, kind in reader.failures.items()}
    unread = [Omitted(path=p, reason=f"could not be read ({kind})") for p, kind in failures.items()]
    large = sorted(set().union(*(reader.too_large for reader in readers)))
    limit = f"over the {MAX_FILE_BYTES // 1000} KB file size limit"
    unread += [
        Omitted(
            path=p, reason=f"{limit}: " + ("only its diff is sent" if p in diffed else "not read")
        )
        for p in large
    ]
    return unread


def _packed(
    plan: Plan, usable: int, estimator: TokenEstimator
) -> tuple[list[Section], list[Omitted]]:
    """The "Not included" list is charged: a first packing keeps a share for it; a second
    keeps what the list then takes, so the room it did not need goes to the context."""
    sections, omitted, room = plan.pack(max(NOT_INCLUDED_MIN, int(usable * NOT_INCLUDED_SHARE)))
    needed = listing_tokens(omitted, estimator) + NOT_INCLUDED_SLACK
    if needed < room:
        sections, omitted, _ = plan.pack(needed)
    return sections, omitted


def _ignored(path: str, ignore: Sequence[str]) -> bool:
    return any(glob_match(g, path) for g in ignore)


def _guides(
    source: GuidanceSource | None, visible: list[str], ignore: Sequence[str], changed: list[str]
) -> list[Related]:
    """The guidance files of the change's own tree, or of `source` (each says where from)."""
    if source is None:
        return guidance(visible, changed)
    files = [p for p in source.files if not _ignored(p, ignore)]
    found = guidance(files, changed)
    return [Related(g.path, g.kind, f"{g.why}, as on {source.branch}") for g in found]


def _short_import(related: Related, text: str | None) -> bool:
    """A file a changed file imports, short enough to be sent whole."""
    lines = text.count("\n") + 1 if text else SHORT_IMPORT + 1
    return related.why.startswith("imported by ") and lines <= SHORT_IMPORT


def _related_value(related: Related, by_symbol: bool, rank: int) -> float:
    """`discover`'s files by rank; after the symbol analysis, its tests, then the rest."""
    if not by_symbol:
        return RELATED_VALUE * RELATED_DECAY**rank
    value = TESTS_VALUE if related.kind == "test" else REST_VALUE
    return value * RELATED_DECAY**rank
