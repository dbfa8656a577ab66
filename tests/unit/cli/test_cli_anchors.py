"""A seat that cites a line the diff does not add: what `council review` shows for it.

The console script against the fake model server. AUTH_DIFF adds lines 2-4 of app/auth.py.
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
    assert (
        "Anchors: 1 finding moved to the nearest changed line, 2 findings made file-level"
        in comment
    )
