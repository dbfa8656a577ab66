"""The packed diff carries line numbers: a model reads line 86 off the gutter, never counts."""

from __future__ import annotations

import asyncio

from bot.context import BuiltContext, PullRequestMeta, build_context
from bot.tokens import TokenEstimator

NEW_FILE = "".join(f"+value_{n} = {n}\n" for n in range(1, 91))
DIFF = (
    "diff --git a/app/new.py b/app/new.py\n"
    "new file mode 100644\n"
    "--- /dev/null\n"
    "+++ b/app/new.py\n"
    "@@ -0,0 +1,90 @@\n" + NEW_FILE + "diff --git a/app/old.py b/app/old.py\n"
    "--- a/app/old.py\n"
    "+++ b/app/old.py\n"
    "@@ -10,5 +10,5 @@ def f():\n"
    " a = 1\n"
    " b = 2\n"
    "-c = 3\n"
    "+c = 4\n"
    "\n"
    " d = 5\n"
)


async def _read(path: str) -> bytes | None:
    return None


def build(diff: str = DIFF, budget: int = 60_000) -> BuiltContext:
    return asyncio.run(
        build_context(
            PullRequestMeta(title="t"),
            diff,
            [],
            _read,
            budget_tokens=budget,
            estimator=TokenEstimator(),
        )
    )


def section(built: BuiltContext, path: str) -> str:
    (found,) = [s for s in built.sections if s.kind == "diff" and s.path == path]
    return found.text


def test_a_new_files_line_86_is_labelled_86() -> None:
    lines = section(build(), "app/new.py").split("\n")
    assert "  86 + value_86 = 86" in lines
    assert "   1 + value_1 = 1" in lines
    assert "@@ -0,0 +1,90 @@" in lines  # hunk headers stay


def test_removed_lines_carry_the_old_number_and_context_the_new() -> None:
    lines = section(build(), "app/old.py").split("\n")
    assert "@@ -10,5 +10,5 @@ def f():" in lines
    assert "  10   a = 1" in lines
    assert "  11   b = 2" in lines
    assert "  12 - c = 3" in lines
    assert "  12 + c = 4" in lines
    assert "  13" in lines  # an empty context line: its number, no trailing blanks
    assert "  14   d = 5" in lines


def test_old_and_new_numbers_part_after_a_deletion() -> None:
    diff = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n"
        "@@ -100,4 +100,2 @@\n keep\n-gone1\n-gone2\n kept\n"
    )
    lines = section(build(diff), "m.py").split("\n")
    assert lines[-5:] == [" 100   keep", " 101 - gone1", " 102 - gone2", " 101   kept", ""]


def test_the_gutter_is_explained_once_in_the_first_diff_heading() -> None:
    built = build()
    diffs = [s for s in built.sections if s.kind == "diff"]
    assert len(diffs) == 2
    legend = (
        "; gutter: the new-side line number of + and context lines and of every line of the "
        "other sections' files (cite these), the old-side number of - lines"
    )
    assert diffs[0].why.endswith(legend)
    assert legend not in diffs[1].why  # said once: not a hundred times on a large PR


def test_the_gutter_is_charged_to_the_budget() -> None:
    built = build()
    estimator = TokenEstimator()
    (new,) = [s for s in built.sections if s.path == "app/new.py"]
    assert new.tokens >= estimator.estimate(new.text)
    assert built.tokens <= built.usable
    # A budget that held the bare diff but not the gutter leaves hunks out, not over.
    tight = build(budget=400)
    assert tight.tokens <= tight.usable


def test_changed_lines_are_the_added_lines_per_file() -> None:
    built = build()
    assert built.changed_lines == {"app/new.py": [(1, 90)], "app/old.py": [(12, 12)]}
