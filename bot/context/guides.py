"""Guidance in parts: the sections of README, CONTRIBUTING, agent instructions and ADRs
that are about a change (they name one of its symbols or a word of its paths), as numbered
excerpts for the packer (bot/context/pack.py), valued below the change's code, its callers
and its tests (bot/context/bysymbol.py)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Set
from pathlib import PurePosixPath

from bot.context.pack import CHUNK_LINES, Item
from bot.context.related import Related
from bot.context.sections import Part, head_lines, numbered_item

GUIDE_VALUE = 9.0  # at most 13.5 with its mentions: below tests (15), above the rest (8)
COMMON_PATH_WORDS = frozenset(
    {"src", "lib", "main", "test", "tests", "index", "init", "__init__", "utils", "util",
     "common", "core", "internal", "github", "workflows", "docs", "readme", "json", "yaml",
     "yml", "python", "java", "scripts"}
)  # fmt: skip


def change_words(paths: list[str]) -> set[str]:
    """The words of the changed paths (directories, file stems) a guidance section can
    mention, lower-cased; common words left out."""
    words: set[str] = set()
    for path in paths:
        for part in re.split(r"[/._-]+", path.lower()):
            if len(part) >= 4 and part not in COMMON_PATH_WORDS:
                words.add(part)
    return words


def guide_item(
    related: Related, text: str, words: set[str], names: Set[str], rank: int
) -> Item | None:
    """The parts of a guidance document (its Markdown sections, at most `CHUNK_LINES` lines
    each, each captioned with its heading) that are about the change: those that name one of
    its symbols (`names`) or a word of its paths (`words`), the more such mentions the more
    valuable; and, of agent instructions (AGENTS.md, CLAUDE.md, Copilot's), the opening part,
    which states rules for any change. None when no part qualifies. Guidance counts as
    neither definition nor reference: the builder caps what it may take in all."""
    lines = head_lines(text.removesuffix("\n") + "\n")
    standing = PurePosixPath(related.path).name.upper() in _INSTRUCTIONS
    parts = []
    heading = ""
    for n, (first, last) in enumerate(markdown_sections(lines)):
        if lines[first - 1].startswith("#"):
            heading = " ".join(lines[first - 1].lstrip("#").split())[:60]
        body = "\n".join(lines[first - 1 : last])
        hits = sum(1 for w in words if w in body.lower())
        hits += 2 * sum(1 for name in _mentioned(body) if name in names)
        if not hits and not (standing and n == 0):
            continue
        value = GUIDE_VALUE * (0.9**rank) * (0.97**n) * (1.0 + min(hits, 4) / 8)
        parts.append(Part(first, last, heading, value))
    if not parts:
        return None
    item = numbered_item(related.kind, related.path, related.why, lines, parts)
    item.units = len(lines)
    item.left_out = "in sections not about the changed areas"
    return item


_INSTRUCTIONS = frozenset({"AGENTS.MD", "CLAUDE.MD", "COPILOT-INSTRUCTIONS.MD"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def _mentioned(text: str) -> set[str]:
    """The identifier-like words of a text (four characters or more)."""
    return set(_WORD.findall(text))


def markdown_sections(lines: list[str]) -> list[tuple[int, int]]:
    """Line ranges of a Markdown text's sections (split at headings), each at most
    `CHUNK_LINES` lines."""
    starts = [1] + [n for n, line in enumerate(lines, start=1) if n > 1 and line.startswith("#")]
    bounds = [*starts, len(lines) + 1]
    out: list[tuple[int, int]] = []
    for first, nxt in itertools.pairwise(bounds):
        for start in range(first, nxt, CHUNK_LINES):
            out.append((start, min(start + CHUNK_LINES, nxt) - 1))
    return [r for r in out if r[0] <= r[1]]
