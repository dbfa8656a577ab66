"""Which head-side lines of which files a packed context shows the seats.

Read back from the sections' text, the way a reader of the context finds them: a diff line
carries its new-side number in the gutter (removed lines carry old-side numbers and are not
head lines); a code section or a file sent in parts starts each run with a caption
`@@ lines A-B ...@@`; a file sent from its top shows lines 1, 2, ... until a
"[... not included" note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.context.models import Section

# `  86 + text`, `  40   text`; an empty context line is the number alone (no trailing blanks).
_GUTTER = re.compile(r"^ *(\d+)(?: [+ ](?: |$)|$)")
_CAPTION = re.compile(r"^@@ lines (\d+)-(\d+)\b.*@@$")
_NOTE = "[... "


def shown_lines(sections: Iterable[Section]) -> dict[str, set[int]]:
    """Path -> the head-side line numbers its sections show."""
    shown: dict[str, set[int]] = {}
    for section in sections:
        if section.path is None:
            continue
        found = shown.setdefault(section.path, set())
        if section.kind == "diff":
            found.update(_diff_lines(section.text))
        else:
            found.update(_file_lines(section.text))
    return {path: lines for path, lines in shown.items() if lines}


def _diff_lines(text: str) -> set[int]:
    lines = set()
    for line in text.split("\n"):
        match = _GUTTER.match(line)
        if match:
            lines.add(int(match.group(1)))
    return lines


def _file_lines(text: str) -> set[int]:
    lines: set[int] = set()
    number: int | None = 1  # a file from its top, until a caption says otherwise
    last: int | None = None
    for line in text.removesuffix("\n").split("\n"):
        caption = _CAPTION.match(line)
        if caption:
            number, last = int(caption.group(1)), int(caption.group(2))
            continue
        if line.startswith(_NOTE):
            number = None  # lines not shown, until the next caption
            continue
        if number is None or (last is not None and number > last):
            continue
        lines.add(number)
        number += 1
    return lines
