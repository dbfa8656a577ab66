"""`build_context`: a pull request in, the packed context and its signals out.

The one composition of the package: redact, parse, classify, read, signal, rank, widen,
discover related material, pack. No network I/O here: files come through `read_file`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from bot.context.classify import exclusion, glob_match, is_test_path, language_of
from bot.context.diff import Hunk, ParsedFile, decode_diff, parse_diff
from bot.context.models import (
    BuiltContext,
    ChangedFile,
    GuidanceSource,
    Omitted,
    PullRequestMeta,
    ReadFile,
    Signals,
)
from bot.context.pack import Item, Packer, chunk_lines
from bot.context.prose import clean_untrusted, show_bidi
from bot.context.redact import Redactor
from bot.context.related import FileReader, Related, discover, guidance
from bot.context.signals import compute_signals, file_areas
from bot.context.widen import Span, widen
from bot.tokens import TokenEstimator, default_estimator

DEFAULT_BUDGET = 60_000
MAX_HEAD_READS = 300
DESCRIPTION_SHARE = 0.1  # of the usable budget, at most
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
) -> BuiltContext:
    """`read_file` reads the change's own tree (the head); the repository's guidance comes
    from `guidance_from` when given (a pull request's default branch: the PR's changes to
    README or AGENTS.md are reviewed in the diff, not obeyed as guidance), else from the
    same tree as the change."""
    estimator = estimator or default_estimator()
    redactor = Redactor()
    files = [_classify(f, ignore_globs) for f in parse_diff(redactor.redact(decode_diff(diff)))]
    reader = FileReader(read_file, redactor)
    heads = await _heads(files, reader)
    files = [_with_language(f, heads) for f in files]
    areas_of = {f.path: file_areas(f) for f in files}
    signals = compute_signals(files, heads, areas_of)
    ranked = _rank(files, signals, areas_of)
    sendable = [f for f in ranked if f.info.excluded is None and not f.info.binary]
    if not sendable:  # nothing else to read: generated, vendored and lock files go in
        sendable = [f for f in ranked if not f.info.binary]
    # paths.ignore means "not this": not as related material either.
    visible = [p for p in repo_files if not _ignored(p, ignore_globs)]
    related = await discover(sendable, heads, visible, reader)
    texts = await reader.texts([r.path for r in related])
    guides = _guides(guidance_from, visible, ignore_globs, [f.path for f in files])
    guide_reader = reader if guidance_from is None else FileReader(guidance_from.read, redactor)
    guide_texts = await guide_reader.texts([r.path for r in guides])
    usable = budget_tokens - math.ceil(budget_tokens * estimator.margin)
    packer = Packer(estimator, usable)
    packer.omitted += _listed_not_sent(ranked, sendable)
    title = clean_untrusted(meta.title, redactor)
    packer.tier(_description(meta, redactor), share=max(int(usable * DESCRIPTION_SHARE), 200))
    packer.tier([_diff_item(f) for f in sendable])
    packer.tier([i for f in sendable if (i := _code_item(f, heads)) is not None])
    packer.tier([_file_item(r, texts[r.path]) for r in related if texts.get(r.path)])
    packer.tier([_file_item(r, guide_texts[r.path]) for r in guides if guide_texts.get(r.path)])
    failures = {**reader.failures, **guide_reader.failures}
    packer.omitted += [
        Omitted(path=p, reason=f"could not be read ({kind})") for p, kind in failures.items()
    ]
    return BuiltContext(
        title=title,
        sections=packer.sections,
        omitted=packer.omitted,
        signals=signals,
        redactions=redactor.total,
        redaction_kinds=dict(sorted(redactor.counts.items())),
        tokens=sum(s.tokens for s in packer.sections),
        budget=budget_tokens,
        usable=usable,
        files=[f.info for f in files],
        changed_lines=_changed_lines(files),
    )


def _changed_lines(files: list[ParsedFile]) -> dict[str, list[tuple[int, int]]]:
    numbers: dict[str, set[int]] = {}
    for f in files:  # a path the diff names twice gets the lines of both
        numbers.setdefault(f.path, set()).update(n for n, _ in f.added_lines)
    return {path: runs_of(found) for path, found in numbers.items()}


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


def _with_language(parsed: ParsedFile, heads: dict[str, str]) -> ParsedFile:
    if parsed.info.language is not None:
        return parsed
    language = language_of(parsed.path, _first_line(parsed, heads.get(parsed.path, "")))
    return _update(parsed, language=language) if language else parsed


def _ignored(path: str, ignore: Sequence[str]) -> bool:
    return any(glob_match(g, path) for g in ignore)


def _first_line(parsed: ParsedFile, head: str) -> str:
    if head:
        return head.split("\n", 1)[0]
    first = parsed.added_lines[0] if parsed.added_lines else None
    return first[1] if first and first[0] == 1 else ""


async def _heads(files: list[ParsedFile], reader: FileReader) -> dict[str, str]:
    """Changed files at head: read where the diff shows only part of them; an added file
    is all in the diff."""
    heads = {
        f.path: "\n".join(text for _, text in f.added_lines)
        for f in files
        if f.info.change == "added" and f.hunks and f.info.excluded is None
    }
    wanted = [
        f.path
        for f in files
        if f.info.change in ("modified", "renamed", "copied")
        and f.hunks
        and f.info.excluded is None
        and not f.info.binary
    ]
    heads.update(await reader.texts(wanted[:MAX_HEAD_READS]))
    return heads


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


def _rank(
    files: list[ParsedFile], signals: Signals, areas_of: dict[str, set[str]]
) -> list[ParsedFile]:
    """Riskiest first, then the bigger change, then by path (deterministic)."""
    risky: dict[str, int] = {}
    for pattern in signals.risky_patterns:
        risky[pattern.path] = risky.get(pattern.path, 0) + 1
    trojan = {loc.path for loc in signals.trojan_source}

    def score(f: ParsedFile) -> tuple[int, int, str]:
        info = f.info
        risk = 20 * (f.path in trojan) + 5 * min(risky.get(f.path, 0), 4)
        risk += sum(w for area, w in _AREA_RISK.items() if area in areas_of[f.path])
        risk += 1 if info.is_test else 3 if info.language else 0
        risk -= 2 if info.change == "deleted" else 0
        return (-risk, -(info.added + info.deleted), f.path)

    return sorted(files, key=score)


def _listed_not_sent(ranked: list[ParsedFile], sendable: list[ParsedFile]) -> list[Omitted]:
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


# Said once in every diff section's heading, so a model reads the gutter right.
GUTTER_LEGEND = (
    "gutter: the new-side line number of + and context lines (cite these), the old-side "
    "number of - lines"
)


def _diff_item(parsed: ParsedFile) -> Item:
    chunks = [show_bidi("".join(f"{line}\n" for line in parsed.header))] if parsed.header else []
    unit_of = [0] * len(chunks)
    width = _gutter_width(parsed.hunks)
    for done, hunk in enumerate(parsed.hunks, start=1):
        body = numbered_lines(hunk, width)
        pieces = [show_bidi(c) for c in chunk_lines([hunk.header, *body])]
        chunks += pieces
        unit_of += [done - 1] * (len(pieces) - 1) + [done]
    return Item(
        "diff", parsed.path, _diff_why(parsed.info), chunks, "hunks", len(parsed.hunks), unit_of
    )


def _gutter_width(hunks: list[Hunk]) -> int:
    """Digits of the largest line number the file's hunks reach (at least 4): one width
    per file, so the code lines up."""
    last = max(
        (max(h.source_start + h.source_length, h.target_start + h.target_length) for h in hunks),
        default=0,
    )
    return max(4, len(str(last)))


def numbered_lines(hunk: Hunk, width: int = 4) -> list[str]:
    """The hunk's body with a gutter: `  86 + added`, `  12 - removed`, `  40   context`
    (new-side numbers for added and context lines, old-side for removed ones); a
    `\\ No newline` marker gets a blank gutter."""
    old, new = hunk.source_start, hunk.target_start
    out: list[str] = []
    for line in hunk.lines:
        kind, text = line[:1], line[1:]
        if kind == "+":
            out.append(_gutter(new, width, "+", text))
            new += 1
        elif kind == "-":
            out.append(_gutter(old, width, "-", text))
            old += 1
        elif kind == "\\":
            out.append(f"{'':>{width}}   {line}")
        else:  # context (a blank body line is an empty context line)
            out.append(_gutter(new, width, " ", text))
            old, new = old + 1, new + 1
    return out


def _gutter(number: int, width: int, mark: str, text: str) -> str:
    # An empty line gets no trailing blanks; any other text is kept exactly.
    return f"{number:>{width}} {mark} {text}" if text else f"{number:>{width}} {mark}".rstrip()


def _diff_why(info: ChangedFile) -> str:
    parts: list[str] = [info.change if not info.mode_only else "mode changed"]
    if info.old_path:
        parts.append(f"from {info.old_path}")
    parts.append(f"+{info.added} -{info.deleted}")
    if info.excluded:
        parts.append(f"{_EXCLUSION_REASONS[info.excluded]}, sent because nothing else changed")
    if info.non_utf8:
        parts.append("not valid UTF-8")
    if info.parse_error:
        parts.append("malformed diff")
    return ", ".join(parts) + f"; {GUTTER_LEGEND}"


def _code_item(parsed: ParsedFile, heads: dict[str, str]) -> Item | None:
    text = heads.get(parsed.path)
    if text is None or parsed.info.change == "added":
        return None  # an added file is all in its diff
    spans = widen(parsed.path, parsed.info.language, text, _changed_ranges(parsed.hunks))
    shown = [(h.target_start, h.target_start + h.target_length - 1) for h in parsed.hunks]
    # A span the diff already shows whole adds nothing.
    spans = [s for s in spans if not any(a <= s.start and s.end <= b for a, b in shown)]
    if not spans:
        return None
    lines = text.split("\n")
    chunks: list[str] = []
    for span in spans:
        body = lines[span.start - 1 : span.end]
        chunks += [show_bidi(c) for c in chunk_lines([_caption(span), *body])]
    labels = "; ".join(dict.fromkeys(s.label for s in spans))
    return Item("code", parsed.path, f"around the change: {labels}"[:300], chunks)


def _caption(span: Span) -> str:
    return f"@@ lines {span.start}-{span.end} at head: {span.label} @@"


def _changed_ranges(hunks: list[Hunk]) -> list[tuple[int, int]]:
    """Per hunk, the head lines its changes touch (a pure deletion: where it happened)."""
    ranges = []
    for hunk in hunks:
        number, first, last = hunk.target_start, None, None
        for line in hunk.lines:
            kind = line[:1]
            if kind in ("+", "-"):
                first = number if first is None else first
                last = number if kind == "+" else max(last or number, number)
            if kind not in ("-", "\\"):
                number += 1
        if first is not None and last is not None:
            ranges.append((first, last))
    return ranges


def _file_item(related: Related, text: str) -> Item:
    lines = text.removesuffix("\n").split("\n")
    return Item(related.kind, related.path, related.why, chunk_lines(lines))
