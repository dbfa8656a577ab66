"""The changed files of a diff before choosing: scanned, classified, ranked, chosen.

`scanned` takes every file of the diff once, for its facts (what ranking, signals and the
"Not included" list need), and lets its lines go; `rank` orders them, riskiest first;
`consider` keeps, in rank order, the files whose diffs are packed; `redacted` parses a
chosen file again from its own text, redacted. Also: the heads read for the files the diff
shows only in part (`read_heads`), what each file's material is worth by its rank
(`rank_weights`), the added lines of each file as runs (`changed_lines`, `runs_of`), and
what anchors check a finding against: each file's hunk lines at head (`hunk_lines`) and
its length where it is known (`head_line_counts`). The composition is
bot/context/build.py `build_context`.
"""

from __future__ import annotations

import asyncio
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.context.classify import exclusion, is_test_path, language_of
from bot.context.diff import Hunk, ParsedFile, iter_diff, parse_diff
from bot.context.imports import imports_of
from bot.context.manifests import dependency_changes, reads_dependencies
from bot.context.models import ChangedFile, Omitted
from bot.context.redact import Redactor
from bot.context.related import READ_CONCURRENCY, FileReader
from bot.context.signals import FileFacts, file_facts, is_code
from bot.tokens import TokenEstimator

MAX_HEAD_READS = 300
MATERIAL_FACTOR = 4  # budgets of diff, in rank order, chunked and valued at most
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
    "minified": "minified file (lines over 1,000 characters)",
    "lfs": "Git LFS pointer (its content is stored outside the repository)",
}
# Rank weights: how much each touched area makes a file worth reading first.
_AREA_RISK = {
    "security": 8, "database": 4, "ci-cd": 4, "infrastructure": 4, "dependencies": 3,
    "public-api": 3, "concurrency": 3, "performance": 2,
}  # fmt: skip


# --- classification and reading -------------------------------------------------------


@dataclass
class Changed:
    """A changed file before choosing: its facts, where its text is in the diff, no lines."""

    facts: FileFacts
    start: int  # offsets of its text in the diff
    end: int
    chars: int  # its hunks' lines, as `consider` counts them
    line_one: str  # the text of its added line 1 ("" if none)
    first_added: str  # the text of its first added line ("" if none)
    has_hunks: bool
    added_runs: array[int]  # added line numbers as runs: first, last, first, last...
    hunk_runs: array[int]  # each hunk's head-side lines (added and context): first, last...
    path_redactions: Counter[str] | None  # secrets its path(s) had

    @property
    def info(self) -> ChangedFile:
        return self.facts.info

    @property
    def path(self) -> str:
        return self.facts.info.path


def scanned(text: str, ignore: Sequence[str]) -> list[Changed]:
    """Every file of the diff, one at a time: classified, its facts taken, its lines let go.
    Its paths are redacted (they are listed); its dependency changes, read from the diff's
    lines, come from its redacted text; nothing else of its text is kept."""
    files: list[Changed] = []
    heads_wanted = 0
    for parsed, start, end in iter_diff(text):
        parsed, path_redactions = _redacted_paths(parsed)
        parsed = _classify(parsed, ignore)
        head_read = reads_head(parsed.info) and heads_wanted < MAX_HEAD_READS
        heads_wanted += reads_head(parsed.info)
        dependencies = None
        if reads_dependencies(parsed.path):
            # A throwaway redactor: this text is not sent, only the names read from it.
            again = parse_diff(Redactor().redact(text[start:end]))
            hunks = again[0].hunks if len(again) == 1 else []
            dependencies = dependency_changes(parsed.path, hunks)
        facts = file_facts(parsed, dependencies, with_imports=not head_read)
        added = parsed.added_lines
        files.append(
            Changed(
                facts=facts,
                start=start,
                end=end,
                chars=sum(len(line) + 8 for hunk in parsed.hunks for line in hunk.lines),
                line_one=_first_line(parsed, ""),
                first_added=added[0][1] if added else "",
                has_hunks=bool(parsed.hunks),
                added_runs=_runs_array(added),
                hunk_runs=_hunks_array(parsed.hunks),
                path_redactions=path_redactions,
            )
        )
    return files


def _runs_array(added: list[tuple[int, str]]) -> array[int]:
    out: array[int] = array("q")
    for a, b in runs_of({n for n, _ in added}):
        out.extend((a, b))
    return out


def _hunks_array(hunks: list[Hunk]) -> array[int]:
    out: array[int] = array("q")
    for hunk in hunks:
        # As bot/context/diff.py numbers them: a "+" or context line is a head line.
        head = sum(1 for line in hunk.lines if line[:1] in ("+", " ", ""))
        if head:
            out.extend((hunk.target_start, hunk.target_start + head - 1))
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


def with_languages(files: list[Changed], heads: dict[str, str], text: str) -> list[Changed]:
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


def with_imports(
    files: list[Changed], heads: dict[str, str], imports: dict[str, list[str]], text: str
) -> list[Changed]:
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


def _again(f: Changed, text: str, **changes: object) -> Changed:
    """The file's facts taken again from its text (unredacted: facts only)."""
    again = parse_diff(text[f.start : f.end])
    if len(again) != 1:
        return f
    parsed = ParsedFile(f.info.model_copy(update=changes), *_body(again[0]))
    return replace(f, facts=file_facts(parsed, f.facts.dependencies))


def _body(parsed: ParsedFile) -> tuple[list[str], list[Hunk], list[tuple[int, str]], list[str]]:
    return parsed.header, parsed.hunks, parsed.added_lines, parsed.removed_lines


def redacted(f: Changed, text: str, redactor: Redactor) -> ParsedFile:
    """A chosen file parsed again from its own text, redacted as a whole (a private key
    block spans lines); its classification as scanned."""
    again = parse_diff(redactor.redact(text[f.start : f.end]))
    if len(again) != 1:  # redaction cannot split a file; but never send its text unredacted
        return ParsedFile(f.info, [], [], [], [])
    return ParsedFile(f.info, *_body(again[0]))


def added_heads(files: list[ParsedFile]) -> dict[str, str]:
    """An added file is all in the diff: its head is its added lines (redacted)."""
    return {
        f.path: "\n".join(text for _, text in f.added_lines)
        for f in files
        if f.info.change == "added" and f.hunks and f.info.excluded is None
    }


def reads_head(info: ChangedFile) -> bool:
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


def _first_line(parsed: ParsedFile, head: str) -> str:
    if head:
        return head.split("\n", 1)[0]
    first = parsed.added_lines[0] if parsed.added_lines else None
    return first[1] if first and first[0] == 1 else ""


async def read_heads(
    wanted: list[Changed],
    kept: set[str],
    heads: dict[str, str],
    early: set[str],
    reader: FileReader,
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Changed files at head, where the diff shows only part of them (an added file is
    all in the diff: see `added_heads`): those considered, read and kept; the others
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


# --- ranking ---------------------------------------------------------------------------


def rank(files: list[Changed]) -> list[Changed]:
    """Riskiest first, then the bigger change, then by path (deterministic)."""
    risky: dict[str, int] = {}
    areas_of: dict[str, set[str]] = {}
    for f in files:
        for pattern in f.facts.risky:
            risky[pattern.path] = risky.get(pattern.path, 0) + 1
        areas_of[f.path] = f.facts.areas
    trojan = {loc.path for f in files for loc in f.facts.trojan}

    def score(f: Changed) -> tuple[int, int, str]:
        info = f.info
        risk = 20 * (f.path in trojan) + 5 * min(risky.get(f.path, 0), 4)
        risk += sum(w for area, w in _AREA_RISK.items() if area in areas_of[f.path])
        risk += 1 if info.is_test else 3 if info.language else 0
        risk -= 2 if info.change == "deleted" else 0
        return (-risk, -(info.added + info.deleted), f.path)

    return sorted(files, key=score)


def consider(
    sendable: list[Changed], estimator: TokenEstimator, bound: int
) -> tuple[list[Changed], list[Changed]]:
    """The files whose diffs are packed (in rank order, until their diffs reach `bound`
    tokens), and the rest."""
    spent = 0
    for n, changed in enumerate(sendable):
        if spent > bound:
            return sendable[:n], sendable[n:]
        # A file counts for at most one budget: one huge file cannot push the rest out.
        spent += min(estimator.estimate_chars(changed.chars), bound // MATERIAL_FACTOR)
    return sendable, []


def unconsidered_omitted(files: list[Changed]) -> list[Omitted]:
    return [
        Omitted(
            path=f.path,
            reason=f"diff (+{f.info.added} -{f.info.deleted}): not read, the diff before it "
            f"is already {MATERIAL_FACTOR} times the budget",
        )
        for f in files
    ]


def is_sent(parsed: Changed) -> bool:
    """Ordinary files are sent; of the excluded, a lock file's small change too (a new
    dependency is one line of it; reviewers comment on that line), at the lowest value."""
    info = parsed.info
    if info.binary:
        return False
    if info.excluded == "lock":
        return info.added + info.deleted <= SMALL_LOCK_CHANGE
    return info.excluded is None


def listed_not_sent(ranked: list[Changed], sendable: list[Changed]) -> list[Omitted]:
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


def diff_why(info: ChangedFile) -> str:
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


def rank_weights(ranked: list[ParsedFile]) -> dict[str, float]:
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


# --- changed lines ---------------------------------------------------------------------


def changed_lines(files: list[Changed]) -> dict[str, list[tuple[int, int]]]:
    return _runs_by_path(files, added=True)


def hunk_lines(files: list[Changed]) -> dict[str, list[tuple[int, int]]]:
    """Per file of the diff, the head-side lines of its hunks (added and context lines)
    as runs (a file with none, deleted or binary: [])."""
    return _runs_by_path(files, added=False)


def _runs_by_path(files: list[Changed], *, added: bool) -> dict[str, list[tuple[int, int]]]:
    runs: dict[str, list[tuple[int, int]]] = {}
    twice: set[str] = set()
    for f in files:  # a path the diff names twice gets the lines of both
        flat = f.added_runs if added else f.hunk_runs
        pairs = list(zip(flat[::2], flat[1::2], strict=True))
        if f.path in runs:
            twice.add(f.path)
            runs[f.path] += pairs
        else:
            runs[f.path] = pairs
    for path in twice:
        runs[path] = runs_of({n for a, b in runs[path] for n in range(a, b + 1)})
    return runs


def head_line_counts(files: list[Changed], heads: dict[str, str]) -> dict[str, int]:
    """How many lines each changed file has at head, where that is known: an added file's
    are its hunk's, a deleted file has none, another's are counted in its head as read
    (`heads`; redaction keeps the lines). A file whose head was not read is not listed; a
    path the diff names twice has the longer of its two."""
    counts: dict[str, int] = {}
    for f in files:
        text = heads.get(f.path)
        if f.info.change == "deleted":
            count = 0
        elif f.info.change == "added" and f.hunk_runs:
            count = max(f.hunk_runs[1::2])
        elif text is not None:
            count = text.count("\n") + (0 if not text or text.endswith("\n") else 1)
        else:
            continue
        counts[f.path] = max(count, counts.get(f.path, 0))
    return counts


def runs_of(numbers: set[int]) -> list[tuple[int, int]]:
    """Line numbers as inclusive runs of consecutive lines: {2, 3, 4, 9} -> [(2, 4), (9, 9)]."""
    runs: list[tuple[int, int]] = []
    for number in sorted(numbers):
        if runs and number <= runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], max(runs[-1][1], number))
        else:
            runs.append((number, number))
    return runs
