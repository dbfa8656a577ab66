"""`council context` as a user runs it, on a small git repository made in the test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from tests.support.cli import run_council

COUNCIL = str(Path(sys.executable).with_name("council"))
TOKEN = "ghp_" + "Ab1" * 12


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "app").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "app" / "auth.py").write_text(
        "from app import store\n\n\ndef login(user, password):\n"
        "    return store.check(user, password)\n"
    )
    (root / "app" / "store.py").write_text("def check(user, password):\n    return False\n")
    (root / "tests" / "test_auth.py").write_text(
        "from app.auth import login\n\n\ndef test_login():\n    assert not login('a', 'b')\n"
    )
    (root / "README.md").write_text("# Shop: the auth service\n")  # about the change
    (root / "logo.png").write_bytes(b"\x89PNG\0\0")
    git(root, "init", "-q", "-b", "main")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    (root / "app" / "auth.py").write_text(
        "from app import store\n\n\ndef login(user, password):\n"
        '    if password == "admin":\n        return True\n'
        "    return store.check(user, password)\n"
        f'\nGITHUB = "{TOKEN}"\n'
    )
    (root / "logo.png").write_bytes(b"\x89PNG\0\1")
    git(root, "checkout", "-qb", "feature")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "Let admin in")
    return root


def council(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COUNCIL_")}
    return subprocess.run(
        [COUNCIL, "context", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        input=stdin,
    )


def test_context_json_on_a_branch(repo: Path) -> None:
    done = council(repo, "--base", "main", "--budget-tokens", "20000", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert {"tokens", "budget", "sections", "omitted", "signals", "redactions"} <= set(result)
    assert result["budget"] == 20_000 and 0 < result["tokens"] <= result["budget"]
    found = {(s["kind"], s["path"]): s["why"] for s in result["sections"]}
    assert ("description", None) in found
    assert ("diff", "app/auth.py") in found
    assert found[("related", "app/store.py")] == "imported by app/auth.py"
    assert found[("test", "tests/test_auth.py")] == "tests app/auth.py"
    assert ("guidance", "README.md") in found
    assert {"path": "logo.png", "reason": "binary file: no text to show"} in result["omitted"]
    signals = result["signals"]
    assert signals["languages"] == ["python"] and signals["dominant_area"] == "security"
    assert signals["binary_files"] == ["logo.png"] and signals["source_without_tests"]
    assert result["redactions"] >= 1 and TOKEN not in done.stdout


def in_process(repo: Path, monkeypatch: pytest.MonkeyPatch, *args: str, stdin: str = "") -> str:
    """The same command without a new interpreter (each `council` start costs seconds)."""
    monkeypatch.chdir(repo)
    for name in [k for k in os.environ if k.startswith("COUNCIL_")]:
        monkeypatch.delenv(name)
    done = CliRunner().invoke(app, ["context", *args], input=stdin, terminal_width=200)
    assert done.exit_code == 0, done.output
    return done.output


def test_context_table_from_stdin(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    diff = subprocess.run(
        ["git", "diff", "main", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    out = in_process(repo, monkeypatch, "--diff", "-", stdin=diff)
    assert "app/auth.py" in out and "Left out" in out and "logo.png" in out
    assert "dominant area: security" in out and "Redactions: 1 (github-token 1)" in out
    assert TOKEN not in out
    # A diff on its own has no repository behind it: no related files.
    assert "app/store.py" not in out


def test_tiny_budget_lists_what_did_not_fit(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = json.loads(
        in_process(repo, monkeypatch, "--base", "main", "--budget-tokens", "150", "--json")
    )
    assert result["tokens"] <= 150
    assert any("did not fit" in o["reason"] for o in result["omitted"])


def test_base_and_diff_together_is_a_usage_error(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    done = CliRunner().invoke(app, ["context", "--base", "main", "--diff", "-"])
    assert done.exit_code == 2 and "not both" in done.output


def test_context_json_says_which_lines_each_section_shows(repo: Path) -> None:
    done = council(repo, "--base", "main", "--budget-tokens", "20000", "--json")
    assert done.returncode == 0, done.stderr
    lines = {(s["kind"], s["path"]): s["lines"] for s in json.loads(done.stdout)["sections"]}
    assert lines[("description", None)] == []
    assert lines[("diff", "app/auth.py")] == [[1, 9]]  # its added and context lines
    assert lines[("related", "app/store.py")] == [[1, 2]]  # short: whole
    # A test's import of the function the change is in is kept; its other head lines not.
    assert lines[("test", "tests/test_auth.py")] == [[1, 1], [4, 5]]
    assert lines[("guidance", "README.md")] == [[1, 1]]


def test_context_show_prints_what_the_seats_read(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shown = in_process(repo, monkeypatch, "--base", "main", "--budget-tokens", "20000", "--show")
    review = run_council(
        None, repo, "review", "--base", "main", "--budget-tokens", "20000", "--dry-run", "--json",
        env_dir=tmp_path,
    )  # fmt: skip
    assert review.returncode == 0, review.stderr
    assert shown == json.loads(review.stdout)["context"]["text"] + "\n"
    assert "@@ lines 1-2 (whole file) of app/store.py @@\n   1   def check(user, password):" in (
        shown
    )
    assert TOKEN not in shown


def test_show_and_json_together_is_a_usage_error(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    done = CliRunner().invoke(app, ["context", "--show", "--json"])
    assert done.exit_code == 2 and "not both" in done.output
