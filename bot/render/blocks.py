"""The blocks every renderer builds with. Markdown: clipping at sentence boundaries, a table
cell, an inline line, a bullet list, a block quote, a collapsed section, a table, capped
parts, and the collapsed sections' caps. Plain: model text as one terminal line (`plain`)
and a place in the form a terminal or an editor opens (`place`). And the key two texts
count as the same point by (`norm`). Pure: stdlib, `bot.safety` and the advisory's
location format (`bot.council.advisory.format_location`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.council.advisory import format_location
from bot.safety import strip_invisible
from bot.safety.markdown import quote_markdown, sanitize_inline

__all__ = [
    "CELL",
    "ITEM",
    "SECTION_CAPS",
    "bullets",
    "capped",
    "cell",
    "clip",
    "count",
    "details",
    "inline",
    "norm",
    "pct",
    "place",
    "plain",
    "quote",
    "table",
]

# Each collapsed section's cap (characters of its body).
SECTION_CAPS: dict[str, int] = {
    "findings": 12_000,
    "synthesis": 5_000,
    "assessment": 4_000,
    "discussion": 8_000,
    "cost": 1_500,
}
CELL = 300
ITEM = 1_000

# --- clipping at sentence boundaries ---------------------------------------------------------

_SENTENCE_END = re.compile(r"[.!?…](?=[\"')\]]*(\s|$))[\"')\]]*|\n")


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: whole sentences (or lines), then " …" where the
    rest was left out. Only a first sentence longer than `limit` is cut, at a word."""
    text = text.strip()
    if len(text) <= limit:
        return text
    room = limit - 2  # for " …"
    cut = 0
    for m in _SENTENCE_END.finditer(text):
        if m.end() > room:
            break
        cut = m.end()
    kept = text[:cut].rstrip()
    if kept:  # (text clipped before already ends "…": said once)
        return kept if kept.endswith("…") else kept + " …"
    words = text[: limit - 1]
    space = words.rfind(" ")
    if space > limit // 3:
        words = words[:space]
    return words.rstrip(" ,;:-") + "…"


def cell(text: str | None, limit: int = CELL) -> str:
    """Model text as one table cell: sanitized, one line, `|` escaped."""
    one_line = " ".join((text or "").split())
    return sanitize_inline(clip(one_line, limit)).replace("|", "\\|") or " "


def inline(text: str, limit: int = ITEM) -> str:
    return sanitize_inline(clip(" ".join(text.split()), limit))


def plain(text: str | None, limit: int = ITEM) -> str:
    """Model text on one terminal line: invisible and control characters gone, whitespace
    collapsed (no Markdown: a terminal prints it as it is)."""
    return " ".join(clip(strip_invisible(text or ""), limit).split())


def place(
    path: str | None,
    start_line: int | None,
    end_line: int | None = None,
    outside_diff: bool = False,
) -> str:
    """`path:10`, `path:10-20` or `path` (the advisory's `format_location` in the form
    terminals and editors open: the terminal and the transcript page show it), "-" for no
    path (None); `path:196 (outside the diff)` for head lines no hunk of the diff shows."""
    if path is None:
        return "-"
    return format_location(path, start_line, end_line, line_prefix="", outside_diff=outside_diff)


def bullets(items: Sequence[str], limit: int = ITEM) -> str:
    return "\n".join(f"- {inline(i, limit)}" for i in items if i.strip())


def quote(text: str, limit: int) -> str:
    """Model prose of several lines as a block quote (`bot.safety.quote_markdown`): no
    heading, table, rule, fence or HTML of it can pass for the comment's own."""
    return quote_markdown(clip(text, limit))


def norm(text: str) -> str:
    """`text` as the key it counts as the same point by: case, punctuation and spacing
    aside."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def pct(fraction: float) -> str:
    return f"{round(fraction * 100)}%"


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def details(summary: str, body: str) -> str:
    # The blank lines let GitHub render Markdown inside the HTML block.
    return f"<details>\n<summary>{summary}</summary>\n\n{body.strip()}\n\n</details>"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def capped(parts: Sequence[str], cap: int, noun: str = "item", sep: str = "\n") -> str:
    """Whole parts while they fit in `cap`, then a line saying how many were left out."""
    out: list[str] = []
    used = 0
    room = cap - 80  # for the line saying what was left out
    for i, part in enumerate(parts):
        if used + len(part) + len(sep) > room:
            if not out:  # a first part alone too long: its whole sentences or lines
                out.append(clip(part, room))
                i += 1
            left = len(parts) - i
            if left:
                out.append(f"\n_…{count(left, noun)} left out for length._")
            break
        out.append(part)
        used += len(part) + len(sep)
    return sep.join(out)
