"""The figures bench/context_precision.py reports: its metrics on a hand-made context, and
the ground truth it computes from a real (tiny) git repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.precision_metrics import (
    Definition,
    Reference,
    UsedDefinition,
    definition_recall,
    needed_lines,
    noise_share,
    reference_recall,
)
from bench.precision_truth import Blobs, Checkout, diff_lines, ground_truth

# A change to app.py that calls `load` (store.py, lines 10-30) and `parse` (two
# definitions: text.py 1-4 and other.py 50-60), changing `handle` (app.py 5-12), which
# views.py references on line 40 and cli.py on line 3.
LOAD = UsedDefinition("load", "python", (Definition("store.py", "load", 10, 11, 30),))
PARSE = UsedDefinition(
    "parse",
    "python",
    (Definition("text.py", "parse", 1, 1, 4), Definition("other.py", "parse", 50, 50, 60)),
)
HANDLE = Definition("app.py", "handle", 5, 5, 12)
VIEWS = Reference("handle", "views.py", frozenset({40}))
CLI = Reference("handle", "cli.py", frozenset({3}))


def test_a_definition_counts_when_its_signature_and_the_next_five_lines_are_shown() -> None:
    shown = {"store.py": set(range(11, 17)), "other.py": set(range(50, 55))}
    assert definition_recall([LOAD, PARSE], shown) == 0.5  # parse: one line short
    shown["other.py"].add(55)
    assert definition_recall([LOAD, PARSE], shown) == 1.0  # either of its definitions
    assert definition_recall([LOAD, PARSE], {"store.py": set(range(1, 16))}) == 0.0
    assert definition_recall([], shown) is None


def test_a_short_definition_needs_only_its_own_lines() -> None:
    assert definition_recall([PARSE], {"text.py": {1, 2, 3, 4}}) == 1.0


def test_a_referencing_file_counts_when_a_line_referencing_the_symbol_is_shown() -> None:
    shown = {"views.py": set(range(1, 40)), "cli.py": {1, 2, 3}}
    assert reference_recall([VIEWS, CLI], shown) == 0.5  # views.py's top, not line 40
    assert reference_recall([VIEWS, CLI], {"views.py": {40}, "cli.py": {3}}) == 1.0
    assert reference_recall([], shown) is None


def test_noise_is_what_is_shown_that_nothing_about_the_change_needs() -> None:
    needed = needed_lines({"app.py": {6, 7, 8}}, [LOAD], [HANDLE], [VIEWS], near=15)
    shown = {
        "app.py": set(range(1, 13)),  # 1-4 are above `handle`: noise
        "store.py": set(range(10, 31)),  # the used definition, whole
        "views.py": set(range(1, 61)),  # 25-55 are near line 40; the other 29 are not
        "README.md": set(range(1, 11)),  # all noise
    }
    assert noise_share(shown, needed) == pytest.approx((4 + 29 + 10) / (12 + 21 + 60 + 10))
    # The diff's removed lines are shown too, and are diff lines.
    assert noise_share(shown, needed, removed=7) == pytest.approx(43 / 110)
    assert noise_share({}, needed) is None


def test_diff_lines_are_the_hunks_head_side_and_the_added_lines() -> None:
    diff = (
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -3,4 +3,5 @@ def f():\n"
        " a\n-b\n+c\n+++ d\n e\n f\n"  # an added "++ d"
        "diff --git a/gone.py b/gone.py\n--- a/gone.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    spans, added = diff_lines(diff)
    assert spans == {"m.py": {3, 4, 5, 6, 7}}
    assert added == {"m.py": {4, 5}}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        capture_output=True,
        check=True,
    )
    return done.stdout.decode()


def test_the_ground_truth_of_a_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "store.py").write_text("def load(path):\n    return open(path).read()\n")
    (repo / "app.py").write_text("def handle(x):\n    return x\n")
    (repo / "views.py").write_text(
        'from app import handle\n\nLABEL = "handle"  # handle: a string and a comment\n\n'
        "def show():\n    return handle(1)\n"
    )
    (repo / "other.py").write_text("def handle(y):\n    return y\n\n\nhandle(2)\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text("from app import handle\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / "app.py").write_text(
        "import json\nfrom store import load\n\n\ndef handle(x):\n"
        "    data = load(x)\n    return json.loads(data)\n"
    )
    _git(repo, "commit", "-q", "-am", "two")
    head = _git(repo, "rev-parse", "HEAD").strip()
    diff = _git(repo, "diff", "HEAD~1", "HEAD")
    blobs = Blobs(repo / ".git")
    try:
        truth = ground_truth(Checkout(blobs, head), diff)
    finally:
        blobs.close()
    # `load` resolves to store.py; `json.loads` is the standard library's, not resolved.
    assert [(u.name, [(d.path, d.start, d.end) for d in u.candidates]) for u in truth.used] == [
        ("load", [("store.py", 1, 2)])
    ]
    assert [(d.name, d.path, d.start, d.end) for d in truth.changed] == [("handle", "app.py", 5, 7)]
    # Non-test files first; a string or a comment that says its name is not a reference, and
    # other.py, which defines a `handle` of its own, means its own.
    assert [(r.path, sorted(r.lines)) for r in truth.references] == [
        ("views.py", [1, 6]),
        ("tests/test_app.py", [1]),
    ]
