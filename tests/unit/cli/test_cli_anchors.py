"""A seat that cites a line outside the diff: what `council review` shows for it.

The console script against the fake model server. AUTH_DIFF adds lines 2-4 of app/auth.py
(its hunk: lines 1-4); a diff file has no head to read. In a repository, the head's lines
are read: the shape of ragflow#6691, a cited unchanged line above the hunk, is kept.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer
from tests.unit.cli.test_cli_review import DIFF, run_review


def _finding(title: str, path: str, start: int) -> dict[str, object]:
    return {
        "severity": "major",
        "path": path,
        "start_line": start,
        "end_line": None,
        "title": title,
        "detail": "Something is wrong here.",
        "suggestion": None,
    }


FINDINGS = [
    _finding("Two lines below the change", "app/auth.py", 6),  # -> line 4
    _finding("Far from the change", "app/auth.py", 30),  # -> file-level
    _finding("A file the diff does not touch", "app/other.py", 12),  # -> file-level
]


def test_a_cited_line_outside_the_diff_is_moved_or_made_file_level(
    models: FakeModelServer, tmp_path: Path
) -> None:
    diff_file = tmp_path / "change.diff"
    diff_file.write_text(DIFF)
    models.default(CouncilScript(findings={"Application Security Reviewer": FINDINGS}).reply)
    done = run_review(models, tmp_path, "--diff", str(diff_file), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    where = {f["title"]: (f["path"], f["start_line"], f["end_line"]) for f in report["findings"]}
    assert where == {
        "Two lines below the change": ("app/auth.py", 4, None),
        "Far from the change": ("app/auth.py", None, None),
        "A file the diff does not touch": ("app/other.py", None, None),
    }
    comment = report["markdown"]
    assert "app/auth.py:L4" in comment
    assert "app/auth.py:L6" not in comment and "app/auth.py:L30" not in comment
    assert "app/other.py:L12" not in comment
    # A diff file has no repository behind it: the head's length is not known.
    assert (
        "Anchors: 1 finding moved to the nearest line of the diff, 1 finding made file-level "
        "(the lines cited are not in the diff, and the file at head was not read); 1 finding "
        "made file-level (the file is not part of this change)." in comment
    )


def test_a_cited_unchanged_line_above_the_hunk_keeps_its_line_and_its_fix(
    models: FakeModelServer, tmp_path: Path
) -> None:
    from tests.support.cli import make_repo, run_council
    from tests.unit.review.test_anchors_head import FIX, PATH, EverySeat, source

    repo = make_repo(tmp_path / "repo", {PATH: source(False)}, {PATH: source(True)})
    cited = {
        "severity": "major",
        "path": PATH,
        "end_line": None,
        "detail": "Something is wrong here.",
        "suggestion": None,
    }
    findings = [
        {**cited, "start_line": 196, "title": "A set is extended", "replacement": FIX},
        {**cited, "start_line": 206, "end_line": 224, "title": "The cache key ignores chunks"},
        {**cited, "start_line": 900, "title": "Past the end of the file"},
    ]
    models.default(CouncilScript(findings=EverySeat(findings)).reply)
    done = run_council(
        models, repo, "review", "--base", "main", "--format", "json", env_dir=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    by_title = {f["title"]: f for f in report["findings"]}
    assert set(by_title) == {
        "A set is extended", "The cache key ignores chunks", "Past the end of the file",
    }  # fmt: skip
    kept = by_title["A set is extended"]
    assert (kept["start_line"], kept["end_line"], kept["outside_diff"]) == (196, None, True)
    assert kept["replacement"] == FIX
    assert kept["location"] == f"{PATH}:L196 (outside the diff)"
    wide = by_title["The cache key ignores chunks"]
    assert (wide["start_line"], wide["end_line"], wide["outside_diff"]) == (206, 224, False)
    gone = by_title["Past the end of the file"]
    assert (gone["start_line"], gone["location"]) == (None, PATH)
    comment = report["markdown"]
    assert f"{PATH}:L196 (outside the diff)" in comment
    assert f"{PATH}:L206-L224" in comment and f"{PATH}:L216" not in comment
    assert (
        "Anchors: 1 finding made file-level (the lines cited are not in the file at head)."
        in comment
    )
