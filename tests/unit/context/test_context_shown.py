"""Reading back which head lines a packed context shows (what bench/coverage.py counts)."""

from __future__ import annotations

from bot.context.models import Section
from bot.context.shown import shown_lines


def section(kind: str, path: str, text: str) -> Section:
    return Section(kind=kind, path=path, why="", text=text, tokens=1)


def test_diff_lines_count_on_the_new_side_only() -> None:
    text = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -9,4 +9,4 @@\n"
        "   9   keep\n  10 - gone\n  10 + added\n  11\n  12   last\n"
    )
    assert shown_lines([section("diff", "m.py", text)]) == {"m.py": {9, 10, 11, 12}}


def test_code_runs_start_at_their_captions_and_stop_at_notes() -> None:
    text = (
        "@@ lines 40-41 at head: def f @@\nline forty\nline forty-one\n"
        "@@ lines 90-90 at head: the rest of the file @@\nninety\n"
        "[... 12 more lines not included: over the token budget]\n"
    )
    assert shown_lines([section("code", "m.py", text)]) == {"m.py": {40, 41, 90}}


def test_a_file_from_its_top_counts_from_line_one() -> None:
    text = "one\ntwo\nthree\n[... 5 more lines not included: over the token budget]\n"
    shown = shown_lines([section("related", "r.py", text), section("diff", "m.py", "x\n")])
    assert shown == {"r.py": {1, 2, 3}}  # a diff with no gutter shows no numbered line
