"""Where a merged finding is: its location and the other places of the same issue.

When the chair merges findings across files, or across distant lines of one file
(bot/council/findings.py), the merged finding keeps one location - the representative's -
and lists each other place in `MergedFinding.also_at` as `format_location` wrote it
(`path:L10-L20`, `path:L10`, or `path` for a file-wide finding). The renderers show them
("also at api_app.py:L618") and the outcome memory (bot/review/outcomes.py) reads them back
as places.
"""

from __future__ import annotations

import re

from bot.council.advisory import MergedFinding, format_location

__all__ = ["Place", "also_at_text", "parse_location", "places"]

# (path, start line, end line): (path, None, None) for a file-wide place.
Place = tuple[str, int | None, int | None]

_LINES = re.compile(r":L(\d+)(?:-L(\d+))?$")


def parse_location(text: str) -> Place:
    """`path:L10-L20` -> (path, 10, 20), `path:L10` -> (path, 10, None), `path` -> (path,
    None, None): the inverse of `format_location` with its default prefix."""
    found = _LINES.search(text)
    if found is None:
        return text, None, None
    start, end = int(found.group(1)), found.group(2)
    return text[: found.start()], start, int(end) if end is not None else None


def places(f: MergedFinding) -> list[Place]:
    """The finding's location first, then each place in `also_at`."""
    return [(f.path, f.start_line, f.end_line), *(parse_location(a) for a in f.also_at)]


def also_at_text(f: MergedFinding, *, line_prefix: str = "L") -> str:
    """ "also at api_app.py:L618, b.py" (`line_prefix=""`: "api_app.py:618"), or "" when
    the finding is at one place. The paths are the seats' text: render them sanitized."""
    if not f.also_at:
        return ""
    where = [format_location(*parse_location(a), line_prefix=line_prefix) for a in f.also_at]
    return "also at " + ", ".join(where)
