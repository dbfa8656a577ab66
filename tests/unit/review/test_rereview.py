"""Incremental re-review: the new commits' hunks that are in the PR's diff, what the
earlier findings became, the diff rebuilt from the files API, and how the advisory says it."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.council.advisory import Advisory, Resolution
from bot.council.scope import EarlierFinding, LargeDiff, Rereview, ReviewScope, SkippedFile
from bot.github.fetch import PullFile
from bot.github.files_diff import refusal, skipped_reason
from bot.render.checks import render_check_run
from bot.render.markdown import render_comment, visible_text
from bot.review.fingerprints import fingerprint
from bot.review.rereview import (
    FORCE_PUSHED,
    FindingTracking,
    added_lines,
    removed_lines,
    restrict,
    touched_files,
)
from bot.store.findings import PrFinding, RaisedFinding
from tests.support.github_server import tree_diff

BASE = {"app/calc.py": b"def add(a, b):\n    return a + b\n"}
OLD_HEAD = {
    "app/calc.py": b"def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n",
    "app/loop.py": b"def retry(fn):\n    while True:\n        fn()\n",
}
NEW_HEAD = {
    "app/calc.py": (
        b"def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n"
        b"        raise ZeroDivisionError\n    return a / b\n\n\ndef mean(xs):\n"
        b"    return sum(xs) / len(xs)\n"
    ),
    "app/loop.py": OLD_HEAD["app/loop.py"],
}
README = {"README.md": b"# Calc\n"}


def test_restrict_keeps_the_new_commits_hunks_of_the_pr_diff() -> None:
    pr_diff = tree_diff(BASE, NEW_HEAD)
    compare = tree_diff(OLD_HEAD, NEW_HEAD)
    restricted = restrict(compare, pr_diff)
    assert "+    if b == 0:" in restricted and "+    return sum(xs) / len(xs)" in restricted
    assert "app/loop.py" not in restricted  # unchanged since the last review


def test_a_base_merge_contributes_nothing() -> None:
    """The merge brings README.md and a base change to calc.py's first lines; neither is
    in the PR's diff (it starts at the merge base, which the merge moved)."""
    merged_base = {**BASE, **README, "app/calc.py": b"def add(a, b):\n    return b + a\n"}
    head = {**OLD_HEAD, **README}
    head["app/calc.py"] = OLD_HEAD["app/calc.py"].replace(b"a + b", b"b + a")
    pr_diff = tree_diff(merged_base, head)
    compare = tree_diff(OLD_HEAD, head)
    assert "README.md" in compare and "b + a" in compare
    assert restrict(compare, pr_diff) == ""


def test_a_file_without_a_patch_in_the_comparison_keeps_the_pr_diffs_entry() -> None:
    pr_diff = tree_diff(BASE, NEW_HEAD)
    compare = (
        "diff --git a/app/calc.py b/app/calc.py\n"
        "Binary files a/app/calc.py and b/app/calc.py differ\n"
    )
    assert "+    return sum(xs) / len(xs)" in restrict(compare, pr_diff)


def test_lines_touched_by_the_new_commits() -> None:
    compare = tree_diff(OLD_HEAD, NEW_HEAD)
    touched = removed_lines(compare)["app/calc.py"]
    assert 6 in touched  # a guard inserted just above `return a / b` (old line 6)
    assert 2 not in touched
    assert touched_files(compare) == {"app/calc.py"}
    added = added_lines(compare)["app/calc.py"]
    assert added[6] == "    if b == 0:" and added[12] == "    return sum(xs) / len(xs)"


def _pr_finding(path: str, line: int | None, title: str, text: str | None) -> PrFinding:
    return PrFinding(
        repo="o/r",
        pr_number=1,
        fingerprint=fingerprint(path, title, text),
        path=path,
        line=line,
        title=title,
        severity="major",
        status="open",
        first_deliberation_id="d1",
        last_deliberation_id="d1",
        head_sha="a" * 40,
        fixed_sha=None,
        review_comment_id=None,
        thread_node_id=None,
        updated_at=datetime.now(UTC),
    )


def test_fixed_still_open_and_new() -> None:
    compare = tree_diff(OLD_HEAD, NEW_HEAD)
    division = _pr_finding("app/calc.py", 6, "Division by zero", "    return a / b")
    loop = _pr_finding("app/loop.py", 2, "Unbounded retry loop", "    while True:")
    gone = _pr_finding("app/calc.py", 2, "Wrong sum", "    return a - b")  # text not at head
    restricted = restrict(compare, tree_diff(BASE, NEW_HEAD))
    tracking = FindingTracking(
        added=added_lines(restricted),
        since="a" * 40,
        commits=2,
        open_before=[division, loop, gone],
        head_lines={p: NEW_HEAD[p].decode().splitlines() for p in NEW_HEAD},
        removed=removed_lines(compare),
        touched=touched_files(compare),
        reviewed_files={"app/calc.py"},
    )
    new = RaisedFinding(
        fingerprint=fingerprint(
            "app/calc.py", "Mean of empty list", tracking.code_line("app/calc.py", 12)
        ),
        path="app/calc.py",
        line=12,
        title="Mean of empty list",
        severity="major",
    )
    assert tracking.code_line("app/calc.py", 12) == "    return sum(xs) / len(xs)"
    fixed, rereview = tracking.outcome([new], known={division.fingerprint, loop.fingerprint})
    assert set(fixed) == {division.fingerprint, gone.fingerprint}
    assert [f.title for f in rereview.of("open")] == ["Unbounded retry loop"]
    assert [f.title for f in rereview.of("new")] == ["Mean of empty list"]
    # Raised again: still open, not fixed, not new.
    again = RaisedFinding(
        fingerprint=division.fingerprint,
        path="app/calc.py",
        line=8,
        title="Division by zero",
        severity="major",
    )
    fixed, rereview = tracking.outcome([again], known={division.fingerprint})
    assert division.fingerprint not in fixed and not rereview.of("new")


def test_skipped_reasons_and_refusal() -> None:
    binary = PullFile(path="logo.png", status="modified", additions=0, deletions=0)
    huge = PullFile(path="big.csv", status="added", additions=30_000, deletions=0)
    moved = PullFile(path="b.py", status="renamed", additions=0, deletions=0, previous_path="a.py")
    shown = PullFile(
        path="a.py", status="modified", additions=1, deletions=0, patch="@@ -1 +1,2 @@\n x\n+y"
    )
    assert skipped_reason(binary) == "binary"
    assert skipped_reason(huge) == "too large for GitHub to show"
    assert skipped_reason(moved) is None and skipped_reason(shown) is None
    assert refusal("Sorry, the diff exceeded the maximum number of lines (20000).") == (
        "more than 20,000 lines"
    )
    assert refusal("Sorry, the diff exceeded the maximum number of files (300).") == (
        "more than 300 files"
    )


def _advisory(scope: ReviewScope) -> Advisory:
    return Advisory(
        deliberation_id="d",
        protocol="quick",
        topic="t",
        resolution=Resolution.APPROVED,
        scope=scope,
    )


def test_the_comment_and_check_run_say_what_was_reviewed() -> None:
    rereview = Rereview(
        since="abc1234" + "0" * 33,
        commits=2,
        findings=[
            EarlierFinding(
                path="app/calc.py",
                line=6,
                title="Division by zero",
                severity="major",
                status="fixed",
            ),
            EarlierFinding(
                path="app/x.py", line=1, title="Other", severity="minor", status="fixed"
            ),
            EarlierFinding(
                path="app/loop.py", line=2, title="Unbounded retry", severity="major", status="open"
            ),
            EarlierFinding(
                path="app/calc.py", line=12, title="Mean", severity="major", status="new"
            ),
        ],
    )
    skipped = [SkippedFile(path=f"bin/{i}.png", reason="binary") for i in range(5)]
    large = LargeDiff(refused="more than 300 files", files=412, skipped=skipped)
    advisory = _advisory(ReviewScope(rereview=rereview, large_diff=large))
    comment = render_comment(advisory)
    seen = visible_text(comment)
    assert "Re-review of 2 new commits** (since `abc1234`)" in seen
    assert "Earlier findings: 2 fixed, 1 still open; 1 new." in seen
    assert "Division by zero" not in seen and "Division by zero" in comment  # collapsed
    assert (
        "Built from the files API: GitHub refused the diff (more than 300 files); "
        "5 files had no patch" in seen
    )
    assert "`bin/4.png` (binary)" in comment and "`bin/4.png`" not in seen
    summary = render_check_run(advisory, gate="verdict", comment_url=None).summary
    assert "Re-review of 2 new commits" in summary and "2 fixed, 1 still open; 1 new" in summary
    assert "Built from the files API" in summary and "`bin/0.png` (binary)" in summary


def test_few_skipped_files_are_named_on_the_line_and_a_force_push_says_why() -> None:
    large = LargeDiff(
        refused="more than 20,000 lines",
        files=12,
        skipped=[SkippedFile(path="logo.png", reason="binary")],
    )
    reason = FORCE_PUSHED.format(sha="abc1234")
    seen = visible_text(
        render_comment(_advisory(ReviewScope(large_diff=large, full_review_reason=reason)))
    )
    assert "1 file had no patch and was not reviewed: `logo.png` (binary)." in seen
    assert "**Full review:** the reviewed head abc1234 was rewritten (force-push)" in seen
    assert render_comment(_advisory(ReviewScope())) == render_comment(
        Advisory(deliberation_id="d", protocol="quick", topic="t", resolution=Resolution.APPROVED)
    )
