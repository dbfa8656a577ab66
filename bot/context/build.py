"""`build_context`: a pull request in, the packed context and its signals out.

The one composition of the package: scan, classify, rank, choose, then redact and parse
only what was chosen, read, signal, widen, discover related material, pack. The work and
memory follow what can be sent, not the size of the diff. No network I/O here: files come
through `read_file`.
"""

from __future__ import annotations

import asyncio
import math
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.context.bysymbol import symbol_context
from bot.context.classify import exclusion, glob_match, is_test_path, language_of
from bot.context.diff import Hunk, ParsedFile, decode_diff, iter_diff, parse_diff
from bot.context.imports import imports_of
from bot.context.manifests import dependency_changes, reads_dependencies
from bot.context.models import (
    BuiltContext,
    ChangedFile,
    GuidanceSource,
    Omitted,
    PullRequestMeta,
    ReadFile,
    Section,
)
from bot.context.nameindex import Indexing
from bot.context.pack import (
    Item,
    Packer,
    chunk_lines,
    not_included,
    title_text,
)
from bot.context.prose import NOT_INCLUDED_HEADING, clean_untrusted
from bot.context.redact import Redactor
from bot.context.related import (
    READ_CONCURRENCY,
    FileReader,
    Related,
    discover,
    guidance,
    named_paths,
)
from bot.context.sections import (
    RELATED_DECAY,
    RELATED_VALUE,
    change_words,
    code_item,
    diff_item,
    file_item,
    guide_item,
    named_items,
    names_of_change,
)
from bot.context.signals import FileFacts, compute_signals, file_facts, is_code
from bot.tokens import TokenEstimator, default_estimator

DEFAULT_BUDGET = 60_000
MAX_HEAD_READS = 300
DESCRIPTION_SHARE = 0.1  # of the usable budget, at most
GUIDANCE_SHARE = 0.15  # of the usable budget, at most, for README, CONTRIBUTING, ADRs...
GUIDANCE_RATIO = 0.2  # ...and of the rest of the material (tokens) at most
GUIDANCE_FLOOR = 400  # tokens guidance may take however small the change
NOT_INCLUDED_SHARE = 0.03  # kept for the "Not included" list
NOT_INCLUDED_MIN = 100  # tokens
NOT_INCLUDED_SLACK = 8  # tokens: the second packing's list may differ a little
MATERIAL_FACTOR = 4  # budgets of diff, in rank order, chunked and valued at most
TESTS_VALUE = 15.0  # a changed file's tests, when the symbol analysis ran
SHORT_IMPORT = 30  # lines: an imported file the analysis did not reach is sent this short
REST_VALUE = 8.0  # what the changed files import that the analysis did not reach
EXTEND_WHEN = 0.6  # hunks get more lines of the head when the diff takes at most this share
# What a chunk is worth: bot/context/sections.py; here, how a file's rank weighs on it.
RANK_DECAY = 0.98
TEST_WEIGHT = 0.45
EXCLUDED_WEIGHT = 0.1  # a lock file's small change; generated files when nothing else changed
SMALL_LOCK_CHANGE = 20  # changed lines
_EXCLUSION_REASONS = {
    "lock": "lock file",
    "generated": "generated file",
    "vendored": "vendored file",
    "ignored": "matches paths.ignore",
}
# Rank weights: how much each touched area makes a file worth reading first.
_AREA_RISK = {
    "security": 8, "database": 4, "ci-cd": 4, "infrastructure": 4, "dependencies": 3,
    "public-api": 3, "concurrency": 3, "performance": 2,
}  # fmt: skip


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
    # Choose first: every file is scanned for its facts (what ranking, signals and the
    # "Not included" list need) and its lines dropped; only the files chosen are parsed
    # again, redacted, for their text.
    files = _scanned(text, ignore_globs)
    reader = FileReader(read_file, redactor)
    wanted = [f for f in files if _reads_head(f.info)][:MAX_HEAD_READS]
    # A head can tell the language of a file whose path does not (a shebang): read first.
    early = {f.path for f in wanted if f.info.language is None}
    heads = await reader.texts([f.path for f in wanted if f.path in early])
    files = _with_languages(files, heads, text)
    wanted = [f for f in files if _reads_head(f.info)][:MAX_HEAD_READS]  # the same, as now
    ranked = _rank(files)
    chosen = [f for f in ranked if _sent(f)]
    if not [f for f in chosen if f.info.excluded is None]:
        # Nothing else to read: generated, vendored and lock files go in.
        chosen = [f for f in ranked if not f.info.binary]
    usable = budget_tokens - math.ceil(budget_tokens * estimator.margin)
    # A diff many times the budget is not chunked, valued and packed whole: the files past
    # `MATERIAL_FACTOR` budgets of diff (in rank order) are listed unread, unredacted.
    considered, unconsidered = _considered(chosen, estimator, usable * MATERIAL_FACTOR)
    kept = {f.path for f in considered}
    heads, imports = await _heads(wanted, kept, heads, early, reader)
    files = _with_imports(files, heads, imports, text)
    signals = compute_signals([f.facts for f in files], heads)
    sendable = [_redacted(f, text, redactor) for f in considered]
    for f in unconsidered:
        redactor.counts.update(f.path_redactions or {})  # its path is listed, redacted
    heads.update(_added_heads(sendable))
    # paths.ignore means "not this": not as related material either.
    visible = [p for p in repo_files if not _ignored(p, ignore_globs)]
    # Discovery reads many files to find a few (importers, tests): through the index's
    # reader when the deployment gives one (no request a file past an archive's limit).
    scan = (
        reader if indexing is None or indexing.read is None else FileReader(indexing.read, redactor)
    )
    related = await discover(sendable, heads, visible, scan)
    texts = await scan.texts([r.path for r in related])
    guides = _guides(guidance_from, visible, ignore_globs, [f.path for f in files])
    if guidance_from is None:
        # From the change's own tree, a changed guidance file is already there: its diff
        # and the rest of it at head. (From the default branch it is the rules as they
        # were, which the change is measured against: kept.)
        sent = {f.path for f in sendable}
        guides = [g for g in guides if g.path not in sent]
    guide_reader = reader if guidance_from is None else FileReader(guidance_from.read, redactor)
    guide_texts = await guide_reader.texts([r.path for r in guides])
    title = clean_untrusted(meta.title, redactor)
    weights = _weights(sendable)
    named = named_paths(sendable, visible)
    named_texts = await reader.texts([n.path for n in named if n.kind != "listing"])
    room = usable * 4  # characters: more than one budget could hold of any one file
    diffs = [
        diff_item(
            f, _diff_why(f.info), heads, weights[f.path], signals, extend=False, room_chars=room
        )
        for f in sendable
    ]
    # Each hunk gets more context lines from the head only when the diff leaves room: under
    # pressure, more hunks matter more than longer ones.
    size = estimator.estimate_chars(sum(len(c) for i in diffs for c in i.chunks))
    extend = size <= EXTEND_WHEN * usable
    if extend:
        diffs = [
            diff_item(
                f, _diff_why(f.info), heads, weights[f.path], signals, extend=True, room_chars=room
            )
            for f in sendable
        ]
    # Context by symbol: the changed symbols, what they use, who uses them (one item per
    # file); the generic related files only where it did not run.
    # The tests of the changed files stay `discover`'s (found by name, shown where they
    # meet the change's names); the analysis brings the rest.
    tests_of = {r.path for r in related if r.kind == "test" and r.why.startswith("tests ")}
    by_symbol = await symbol_context(
        sendable,
        heads,
        _changed_lines(files),
        visible,
        read_file,
        reader,
        weights,
        extend,
        skip=tests_of,
        indexing=indexing,
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
    items += named_items(named, named_texts, visible, names)
    items += [
        i
        for n, r in enumerate(r for r in related if texts.get(r.path))
        if (i := file_item(r, texts[r.path], _related_value(r, by_symbol.ran, n), names))
    ]
    words = change_words([f.path for f in files])
    about = [r for r in guides if guide_texts.get(r.path)]
    guide_items = [
        guide_item(r, guide_texts[r.path], words, names.changed, n) for n, r in enumerate(about)
    ]
    items += [i for i in guide_items if i is not None]
    off_topic = [
        Omitted(path=r.path, reason="guidance: no section is about the changed areas")
        for r, i in zip(about, guide_items, strict=True)
        if i is None
    ]
    # The material is in the items now: the texts it came from go (memory follows what
    # is sent, not what was read).
    del sendable, heads, texts, guide_texts, named_texts
    reader.forget_all()
    scan.forget_all()
    guide_reader.forget_all()
    failures = {**scan.failures, **reader.failures, **guide_reader.failures}
    unread = [Omitted(path=p, reason=f"could not be read ({kind})") for p, kind in failures.items()]
    plan = _Plan(
        estimator,
        usable - estimator.estimate(title_text(title)),
        _description(meta, redactor),
        items,
        _listed_not_sent(ranked, considered + unconsidered)
        + unconsidered_omitted(unconsidered)
        + by_symbol.omitted
        + off_topic,
        unread,
    )
    # The "Not included" list is charged: a first packing keeps a share for it; a second
    # keeps what the list then takes, so the room it did not need goes to the context.
    sections, omitted, room = plan.pack(max(NOT_INCLUDED_MIN, int(usable * NOT_INCLUDED_SHARE)))
    needed = _listing_tokens(omitted, estimator) + NOT_INCLUDED_SLACK
    if needed < room:
        sections, omitted, _ = plan.pack(needed)
    built = BuiltContext(
        title=title,
        sections=sections,
        omitted=omitted,
        signals=signals,
        redactions=redactor.total,
        redaction_kinds=dict(sorted(redactor.counts.items())),
        tokens=sum(s.tokens for s in sections),
        budget=budget_tokens,
        usable=usable,
        files=[f.info for f in files],
    )
    # Set, not validated (a copy of every run of a huge diff): built as the field's type.
    built.changed_lines = _changed_lines(files)
    return built


@dataclass
class _Plan:
    """Everything to pack, packed for a given room for the "Not included" list."""

    estimator: TokenEstimator
    usable: int  # the budget less the margin and the title block
    description: list[Item]
    items: list[Item]
    listed: list[Omitted]  # changed files listed, not sent
    unread: list[Omitted]

    def pack(self, room: int) -> tuple[list[Section], list[Omitted], int]:
        """The sections, the omitted list as sent, and the room it was packed with."""
        packer = Packer(self.estimator, self.usable)
        kept = packer.reserve(room)
        legend = packer.reserve(self.estimator.estimate(f"; {GUTTER_LEGEND}"))
        packer.omitted += self.listed
        share = max(int(self.usable * DESCRIPTION_SHARE), 200)
        packer.tier(self.description, share=share)
        packer.by_value(self.items, caps={"guidance": self.guidance_cap(packer)})
        packer.omitted += self.unread
        omitted = not_included(packer.omitted, self.estimator, kept + packer.left)
        return _with_legend(packer.sections, legend), omitted, kept

    def guidance_cap(self, packer: Packer) -> int:
        """What guidance may take: a share of the rest of the material, so that a small
        change is not read beside pages of README (at least `GUIDANCE_FLOOR` tokens), and
        never more than `GUIDANCE_SHARE` of the budget."""
        material = sum(
            sum(packer.costs(i)) + packer.overhead(i) for i in self.items if i.kind != "guidance"
        )
        share = max(GUIDANCE_FLOOR, int(material * GUIDANCE_RATIO))
        return min(share, int(self.usable * GUIDANCE_SHARE))


def _listing_tokens(omitted: list[Omitted], estimator: TokenEstimator) -> int:
    if not omitted:
        return 0
    lines = "".join(f"- {o.path}: {o.reason}\n" for o in omitted)
    return estimator.estimate(f"{NOT_INCLUDED_HEADING}\n{lines}")


def _changed_lines(files: list[_Changed]) -> dict[str, list[tuple[int, int]]]:
    runs: dict[str, list[tuple[int, int]]] = {}
    twice: set[str] = set()
    for f in files:  # a path the diff names twice gets the lines of both
        pairs = list(zip(f.added_runs[::2], f.added_runs[1::2], strict=True))
        if f.path in runs:
            twice.add(f.path)
            runs[f.path] += pairs
        else:
            runs[f.path] = pairs
    for path in twice:
        runs[path] = runs_of({n for a, b in runs[path] for n in range(a, b + 1)})
    return runs


def runs_of(numbers: set[int]) -> list[tuple[int, int]]:
    """Line numbers as inclusive runs of consecutive lines: {2, 3, 4, 9} -> [(2, 4), (9, 9)]."""
    runs: list[tuple[int, int]] = []
    for number in sorted(numbers):
        if runs and number <= runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], max(runs[-1][1], number))
        else:
            runs.append((number, number))
    return runs


# --- classification and reading -------------------------------------------------------


@dataclass
class _Changed:
    """A changed file before choosing: its facts, where its text is in the diff, no lines."""

    facts: FileFacts
    start: int  # offsets of its text in the diff
    end: int
    chars: int  # its hunks' lines, as `_considered` counts them
    line_one: str  # the text of its added line 1 ("" if none)
    first_added: str  # the text of its first added line ("" if none)
    has_hunks: bool
    added_runs: array[int]  # added line numbers as runs: first, last, first, last...
    path_redactions: Counter[str] | None  # secrets its path(s) had

    @property
    def info(self) -> ChangedFile:
        return self.facts.info

    @property
    def path(self) -> str:
        return self.facts.info.path


def _scanned(text: str, ignore: Sequence[str]) -> list[_Changed]:
    """Every file of the diff, one at a time: classified, its facts taken, its lines let go.
    Its paths are redacted (they are listed); its dependency changes, read from the diff's
    lines, come from its redacted text; nothing else of its text is kept."""
    files: list[_Changed] = []
    heads_wanted = 0
    for parsed, start, end in iter_diff(text):
        parsed, path_redactions = _redacted_paths(parsed)
        parsed = _classify(parsed, ignore)
        reads_head = _reads_head(parsed.info) and heads_wanted < MAX_HEAD_READS
        heads_wanted += _reads_head(parsed.info)
        dependencies = None
        if reads_dependencies(parsed.path):
            # A throwaway redactor: this text is not sent, only the names read from it.
            again = parse_diff(Redactor().redact(text[start:end]))
            hunks = again[0].hunks if len(again) == 1 else []
            dependencies = dependency_changes(parsed.path, hunks)
        facts = file_facts(parsed, dependencies, with_imports=not reads_head)
        added = parsed.added_lines
        files.append(
            _Changed(
                facts=facts,
                start=start,
                end=end,
                chars=sum(len(line) + 8 for hunk in parsed.hunks for line in hunk.lines),
                line_one=_first_line(parsed, ""),
                first_added=added[0][1] if added else "",
                has_hunks=bool(parsed.hunks),
                added_runs=_runs_array(added),
                path_redactions=path_redactions,
            )
        )
    return files


def _runs_array(added: list[tuple[int, str]]) -> array[int]:
    out: array[int] = array("q")
    for a, b in runs_of({n for n, _ in added}):
        out.extend((a, b))
    return out


def _redacted_paths(parsed: ParsedFile) -> tuple[ParsedFile, Counter[str] | None]:
    """The file with its paths redacted, and what was found in them (None: nothing)."""
    redactor = Redactor()
    info = parsed.info
    path = redactor.redact(info.path)
    old_path = redactor.redact(info.old_path) if info.old_path else info.old_path
    if not redactor.counts:
        return parsed, None
    return _update(parsed, path=path, old_path=old_path), redactor.counts


def _with_languages(files: list[_Changed], heads: dict[str, str], text: str) -> list[_Changed]:
    """Files whose language only their head tells (a shebang): their facts taken again."""
    out = []
    for f in files:
        language = f.info.language
        if language is None:
            first = f.first_added if f.info.change == "added" else heads.get(f.path, "")
            first = first.split("\n", 1)[0] if first else f.line_one
            language = language_of(f.path, first)
        out.append(f if language == f.info.language else _again(f, text, language=language))
    return out


def _with_imports(
    files: list[_Changed], heads: dict[str, str], imports: dict[str, list[str]], text: str
) -> list[_Changed]:
    """The import names of the heads read and let go; a code file whose head could not be
    read: those of its added lines."""
    out = []
    for f in files:
        if f.facts.imports is not None or not is_code(f.info) or heads.get(f.path):
            out.append(f)
        elif f.path in imports:
            out.append(replace(f, facts=replace(f.facts, imports=imports[f.path])))
        else:
            out.append(_again(f, text))
    return out


def _again(f: _Changed, text: str, **changes: object) -> _Changed:
    """The file's facts taken again from its text (unredacted: facts only)."""
    again = parse_diff(text[f.start : f.end])
    if len(again) != 1:
        return f
    parsed = ParsedFile(f.info.model_copy(update=changes), *_body(again[0]))
    return replace(f, facts=file_facts(parsed, f.facts.dependencies))


def _body(parsed: ParsedFile) -> tuple[list[str], list[Hunk], list[tuple[int, str]], list[str]]:
    return parsed.header, parsed.hunks, parsed.added_lines, parsed.removed_lines


def _redacted(f: _Changed, text: str, redactor: Redactor) -> ParsedFile:
    """A chosen file parsed again from its own text, redacted as a whole (a private key
    block spans lines); its classification as scanned."""
    again = parse_diff(redactor.redact(text[f.start : f.end]))
    if len(again) != 1:  # redaction cannot split a file; but never send its text unredacted
        return ParsedFile(f.info, [], [], [], [])
    return ParsedFile(f.info, *_body(again[0]))


def _added_heads(files: list[ParsedFile]) -> dict[str, str]:
    """An added file is all in the diff: its head is its added lines (redacted)."""
    return {
        f.path: "\n".join(text for _, text in f.added_lines)
        for f in files
        if f.info.change == "added" and f.hunks and f.info.excluded is None
    }


def _reads_head(info: ChangedFile) -> bool:
    return (
        info.change in ("modified", "renamed", "copied")
        and info.hunks > 0
        and info.excluded is None
        and not info.binary
    )


def _update(parsed: ParsedFile, **changes: object) -> ParsedFile:
    info = parsed.info.model_copy(update=changes)
    return ParsedFile(info, parsed.header, parsed.hunks, parsed.added_lines, parsed.removed_lines)


def _classify(parsed: ParsedFile, ignore: Sequence[str]) -> ParsedFile:
    head = "\n".join(text for _, text in parsed.added_lines[:40])
    return _update(
        parsed,
        is_test=is_test_path(parsed.path),
        excluded=exclusion(parsed.path, head, ignore),
        language=language_of(parsed.path, _first_line(parsed, "")),
    )


def _ignored(path: str, ignore: Sequence[str]) -> bool:
    return any(glob_match(g, path) for g in ignore)


def _first_line(parsed: ParsedFile, head: str) -> str:
    if head:
        return head.split("\n", 1)[0]
    first = parsed.added_lines[0] if parsed.added_lines else None
    return first[1] if first and first[0] == 1 else ""


async def _heads(
    wanted: list[_Changed],
    kept: set[str],
    heads: dict[str, str],
    early: set[str],
    reader: FileReader,
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Changed files at head, where the diff shows only part of them (an added file is
    all in the diff: see `_added_heads`): those considered, read and kept; the others
    read a few at a time for their import names (what signals need), and let go."""
    imports: dict[str, list[str]] = {}
    for f in wanted:  # those read already (for their language): each file is read once
        head = heads.get(f.path)
        if f.path not in kept and head and is_code(f.info):
            imports[f.path] = imports_of(head, f.info.language)
    heads = {p: t for p, t in heads.items() if p in kept}
    reader.forget([f.path for f in wanted if f.path not in kept])
    for n in range(0, len(wanted), READ_CONCURRENCY):
        batch = [f for f in wanted[n : n + READ_CONCURRENCY] if f.path not in early]
        heads.update(await reader.texts([f.path for f in batch if f.path in kept]))
        others = [f for f in batch if f.path not in kept]
        found = await asyncio.gather(*(reader.peek(f.path) for f in others))
        for f, head in zip(others, found, strict=True):
            if head and is_code(f.info):
                imports[f.path] = imports_of(head, f.info.language)
    # Failures listed in the order the heads are wanted, as if read at once.
    order = {f.path: n for n, f in enumerate(wanted)}
    failures = sorted(reader.failures.items(), key=lambda kv: order.get(kv[0], len(order)))
    reader.failures = dict(failures)
    return heads, imports


def _guides(
    source: GuidanceSource | None, visible: list[str], ignore: Sequence[str], changed: list[str]
) -> list[Related]:
    """The guidance files of the change's own tree, or of `source` (each says where from)."""
    if source is None:
        return guidance(visible, changed)
    files = [p for p in source.files if not _ignored(p, ignore)]
    found = guidance(files, changed)
    return [Related(g.path, g.kind, f"{g.why}, as on {source.branch}") for g in found]


# --- ranking ---------------------------------------------------------------------------


def _rank(files: list[_Changed]) -> list[_Changed]:
    """Riskiest first, then the bigger change, then by path (deterministic)."""
    risky: dict[str, int] = {}
    areas_of: dict[str, set[str]] = {}
    for f in files:
        for pattern in f.facts.risky:
            risky[pattern.path] = risky.get(pattern.path, 0) + 1
        areas_of[f.path] = f.facts.areas
    trojan = {loc.path for f in files for loc in f.facts.trojan}

    def score(f: _Changed) -> tuple[int, int, str]:
        info = f.info
        risk = 20 * (f.path in trojan) + 5 * min(risky.get(f.path, 0), 4)
        risk += sum(w for area, w in _AREA_RISK.items() if area in areas_of[f.path])
        risk += 1 if info.is_test else 3 if info.language else 0
        risk -= 2 if info.change == "deleted" else 0
        return (-risk, -(info.added + info.deleted), f.path)

    return sorted(files, key=score)


def _considered(
    sendable: list[_Changed], estimator: TokenEstimator, bound: int
) -> tuple[list[_Changed], list[_Changed]]:
    """The files whose diffs are packed (in rank order, until their diffs reach `bound`
    tokens), and the rest."""
    spent = 0
    for n, changed in enumerate(sendable):
        if spent > bound:
            return sendable[:n], sendable[n:]
        # A file counts for at most one budget: one huge file cannot push the rest out.
        spent += min(estimator.estimate_chars(changed.chars), bound // MATERIAL_FACTOR)
    return sendable, []


def unconsidered_omitted(files: list[_Changed]) -> list[Omitted]:
    return [
        Omitted(
            path=f.path,
            reason=f"diff (+{f.info.added} -{f.info.deleted}): not read, the diff before it "
            f"is already {MATERIAL_FACTOR} times the budget",
        )
        for f in files
    ]


def _sent(parsed: _Changed) -> bool:
    """Ordinary files are sent; of the excluded, a lock file's small change too (a new
    dependency is one line of it; reviewers comment on that line), at the lowest value."""
    info = parsed.info
    if info.binary:
        return False
    if info.excluded == "lock":
        return info.added + info.deleted <= SMALL_LOCK_CHANGE
    return info.excluded is None


def _listed_not_sent(ranked: list[_Changed], sendable: list[_Changed]) -> list[Omitted]:
    sent = {f.path for f in sendable}
    omitted = []
    for f in ranked:
        if f.path in sent:
            continue
        if f.info.binary:
            omitted.append(Omitted(path=f.path, reason="binary file: no text to show"))
        elif f.info.excluded:
            reason = _EXCLUSION_REASONS[f.info.excluded]
            omitted.append(Omitted(path=f.path, reason=f"{reason}: listed, not sent"))
    return omitted


# --- items -----------------------------------------------------------------------------


def _description(meta: PullRequestMeta, redactor: Redactor) -> list[Item]:
    """The PR's own words, each cleaned (branch names are the author's words too)."""

    def clean(text: str) -> str:
        return clean_untrusted(text, redactor)

    parts = []
    if meta.base_ref or meta.head_ref:
        parts.append(f"Merging {clean(meta.head_ref) or '?'} into {clean(meta.base_ref) or '?'}")
    body = clean(meta.body)
    if body:
        parts.append(body)
    commits = [c for c in map(clean, meta.commit_messages) if c]
    if commits:
        parts.append("Commits:\n" + "\n".join(_bullet(c) for c in commits))
    comments = [c for c in map(clean, meta.comments) if c]
    if comments:
        parts.append("Comments:\n" + "\n".join(_bullet(c) for c in comments))
    if not parts:
        return []
    lines = "\n\n".join(parts).split("\n")
    return [Item("description", None, "the PR's own description", chunk_lines(lines))]


def _bullet(text: str) -> str:
    first, *rest = text.split("\n")
    return "\n".join([f"- {first}", *(f"  {line}" for line in rest)])


# Said once, in the first diff section's heading, so a model reads the gutter right (the
# lines of code and file sections carry theirs as context lines do).
GUTTER_LEGEND = (
    "gutter: the new-side line number of + and context lines and of every line of the other "
    "sections' files (cite these), the old-side number of - lines"
)


def _with_legend(sections: list[Section], legend: int) -> list[Section]:
    """The gutter explained once, in the first diff section's heading (its cost reserved)."""
    for n, section in enumerate(sections):
        if section.kind == "diff":
            why = f"{section.why}; {GUTTER_LEGEND}"
            first = section.model_copy(update={"why": why, "tokens": section.tokens + legend})
            return [*sections[:n], first, *sections[n + 1 :]]
    return sections


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


def _diff_why(info: ChangedFile) -> str:
    parts: list[str] = [info.change if not info.mode_only else "mode changed"]
    if info.old_path:
        parts.append(f"from {info.old_path}")
    parts.append(f"+{info.added} -{info.deleted}")
    if info.excluded == "lock" and info.added + info.deleted <= SMALL_LOCK_CHANGE:
        parts.append("lock file, a small change: sent")
    elif info.excluded:
        parts.append(f"{_EXCLUSION_REASONS[info.excluded]}, sent because nothing else changed")
    if info.non_utf8:
        parts.append("not valid UTF-8")
    if info.parse_error:
        parts.append("malformed diff")
    return ", ".join(parts)


def _weights(ranked: list[ParsedFile]) -> dict[str, float]:
    """How much each file's material is worth, from its rank: source files by rank; tests
    after the source they test (a test file weighs less than any source file near it)."""
    weights: dict[str, float] = {}
    source = test = 0
    for parsed in ranked:
        if parsed.info.excluded is not None:
            weights[parsed.path] = EXCLUDED_WEIGHT
        elif parsed.info.is_test:
            weights[parsed.path] = TEST_WEIGHT * RANK_DECAY**test
            test += 1
        else:
            weights[parsed.path] = max(RANK_DECAY**source, 0.5)
            source += 1
    return weights
