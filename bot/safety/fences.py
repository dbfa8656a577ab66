"""Which fenced code blocks are trusted as code.

Code is kept verbatim only in fenced blocks whose every line is indented at least as much
as the opening fence: GitHub then sees the same block whatever container the text lands
in. Everything else, inline code included, is treated as prose: pairing of inline code
spans depends on block structure this module does not parse, and guessing it wrong would
let HTML through. The cost is cosmetic (`<b>` inside an inline code span disappears).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A line that would open a fence (after indentation and quote markers): escaped in prose.
FENCE_LIKE = re.compile(r"^([ \t]*(?:>[ \t]*)*)(?=`{3}|~{3})", re.MULTILINE)
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}(?=[^`]*$)|~{3,})")


def _indent(line: str) -> int:
    """Leading indentation in columns, tabs to the next multiple of 4 (as CommonMark)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


@dataclass(frozen=True)
class _Fence:
    indent: int
    char: str
    length: int

    def closes(self, line: str) -> bool:
        # CommonMark measures a closer's indent from the container; accepting up to the
        # opener's indent + 3 closes no later than GitHub would (closing early is safe).
        rest = line.strip(" \t")
        return (
            _indent(line) <= self.indent + 3
            and len(rest) >= self.length
            and rest == self.char * len(rest)
        )

    def closer(self) -> str:
        return " " * self.indent + self.char * self.length


def _block_end(lines: list[str], start: int, fence: _Fence) -> tuple[int, bool | None]:
    """Index of the closing line (or len(lines) if unclosed) and whether it closed.

    None instead of a bool when the line at the index is indented less than the opener:
    then the block may end early on GitHub (a list item closing), so it is not trusted as
    code, and neither is any fence between (`segments` goes on from that line, so every
    line is looked at a bounded number of times).
    """
    for j in range(start + 1, len(lines)):
        if fence.closes(lines[j]):
            return j, True
        if lines[j].strip() and _indent(lines[j]) < fence.indent:
            return j, None
    return len(lines), False


def segments(text: str) -> list[tuple[bool, str]]:
    """Split into (is_code, text) pieces; code pieces are whole, closed fenced blocks."""
    lines = text.split("\n")
    pieces: list[tuple[bool, str]] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if m is None:
            prose.append(lines[i])
            i += 1
            continue
        fence = _Fence(len(m.group(1)), m.group(2)[0], len(m.group(2)))
        stop, closed = _block_end(lines, i, fence)
        if closed is None:  # not trusted: prose up to the line that cut it short
            prose += lines[i:stop]
            i = stop
            continue
        if prose:
            pieces.append((False, "\n".join(prose)))
            prose = []
        block = lines[i : stop + 1] if closed else [*lines[i:stop], fence.closer()]
        pieces.append((True, "\n".join(block)))
        i = stop + 1
    if prose or not pieces:
        pieces.append((False, "\n".join(prose)))
    return pieces
