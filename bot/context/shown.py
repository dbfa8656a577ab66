"""Which head-side lines of which files a packed context shows the seats.

Each section carries them (`Section.lines`, set by the packer from the chunks it took: see
bot/context/pack.py), so nothing is read back from the text: a diff section shows the
new-side lines of its added and context lines (its removed lines carry old-side numbers and
are not head lines, so they are not in it); a code, related, test, named-file or guidance
section shows its numbered lines; the description and a directory listing show none.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.context.models import Section


def shown_lines(sections: Iterable[Section]) -> dict[str, set[int]]:
    """Path -> the head-side line numbers its sections show (a path with none is absent)."""
    shown: dict[str, set[int]] = {}
    for section in sections:
        for path, runs in section.lines.items():
            found = shown.setdefault(path, set())
            for first, last in runs:
                found.update(range(first, last + 1))
    return {path: lines for path, lines in shown.items() if lines}


def shown_ranges(sections: Iterable[Section]) -> dict[str, list[tuple[int, int]]]:
    """Path -> the same lines as inclusive runs [(first, last), ...], in order."""
    out: dict[str, list[tuple[int, int]]] = {}
    for path, lines in shown_lines(sections).items():
        runs: list[tuple[int, int]] = []
        for number in sorted(lines):
            if runs and number == runs[-1][1] + 1:
                runs[-1] = (runs[-1][0], number)
            else:
                runs.append((number, number))
        out[path] = runs
    return out
