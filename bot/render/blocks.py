"""The Markdown blocks every renderer of a comment builds with: clipping at sentence
boundaries, a table cell, an inline line, a collapsed section, a table, capped parts, and
the collapsed sections' caps. Pure: stdlib and `bot.safety`."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.safety.markdown import sanitize_inline

__all__ = [
    "CELL",
    "ITEM",
    "SECTION_CAPS",
    "capped",
    "cell",
    "clip",
    "count",
    "details",
    "inline",
    "table",
]

# Each collapsed section's cap (characters of its body).
SECTION_CAPS: dict[str, int] = {
    "findings": 12_000,
    "synthesis": 5_000,
    "assessment": 4_000,
    "discussion": 8_000,
    "cost": 1_500,
    "debate": 4_000,  # each of the debate report's sections (bot.render.debate)
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
