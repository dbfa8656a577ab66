"""Which head lines a packed context shows (what bench/context_precision.py and
bot/evaluate/coverage.py count): the sections' own `lines`, never read back from text."""

from __future__ import annotations

from bot.context.models import Section
from bot.context.shown import shown_lines, shown_ranges


def section(
    kind: str, path: str | None, text: str, lines: dict[str, list[tuple[int, int]]]
) -> Section:
    return Section(kind=kind, path=path, why="", text=text, tokens=1, lines=lines)


def test_the_lines_are_the_sections_own_runs_joined_per_path() -> None:
    sections = [
        section("diff", "m.py", "whatever the text says", {"m.py": [(9, 12)]}),
        section("code", "m.py", "", {"m.py": [(1, 3), (13, 14)]}),
        section("related", "r.py", "", {"r.py": [(40, 41), (90, 90)]}),
    ]
    assert shown_lines(sections) == {"m.py": {1, 2, 3, 9, 10, 11, 12, 13, 14}, "r.py": {40, 41, 90}}
    assert shown_ranges(sections) == {"m.py": [(1, 3), (9, 14)], "r.py": [(40, 41), (90, 90)]}


def test_text_that_looks_numbered_counts_for_nothing() -> None:
    """The old read-back counted a related file's lines 1, 2, 3 from its text; a section
    that shows no file line (the description, a listing) is absent, whatever its text."""
    numbered = "@@ lines 1-3 of r.py @@\n   1   one\n   2   two\n   3   three\n"
    sections = [
        section("description", None, numbered, {}),
        section("related", "docs/", "docs/a.md\n", {}),
    ]
    assert shown_lines(sections) == {}
