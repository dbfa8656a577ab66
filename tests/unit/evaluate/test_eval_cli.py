"""`council eval` as a user runs it: a tiny benchmark over a tiny clone, the fake model
server answering every seat and the judge."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bot.council.personas import load_catalog
from tests.support.cli import run_council
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer

MODEL = "anthropic:claude-sonnet-5-5"
BEFORE = "def fetch(url):\n    return get(url)\n"
AFTER = (
    "def fetch(url):\n"
    "    while True:\n"
    "        try:\n"
    "            return get(url)\n"
    "        except OSError:\n"
    "            pass\n"
)
RETRY = {
    "severity": "major",
    "path": "app.py",
    "start_line": 2,
    "end_line": 6,
    "title": "Unbounded retry loop",
    "detail": "The while True loop retries forever when the host is down.",
    "suggestion": "Cap the attempts.",
    "replacement": None,
}
SWALLOWED = {
    "severity": "minor",
    "path": "app.py",
    "start_line": 5,
    "end_line": 6,
    "title": "Swallowed OSError hides failures",
    "detail": "The except clause passes silently; log the error.",
    "suggestion": None,
    "replacement": None,
}
GOLDEN_RETRY = "The retry loop is unbounded: it never gives up on a failing host."
GOLDEN_URL = "The URL is not validated before the request is made."


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def clone(tmp_path: Path) -> tuple[Path, str, str]:
    """repos/acme+widget/repo (a bare clone, as the mirrors are), main at the base and the
    PR's head at refs/pull/7/head; (repos, base, head)."""
    src = tmp_path / "src"
    src.mkdir()
    _git(src, "init", "-q", "-b", "main")
    (src / "app.py").write_text(BEFORE)
    _git(src, "add", "app.py")
    _git(src, "commit", "-q", "-m", "fetch")
    base = _git(src, "rev-parse", "HEAD")
    _git(src, "checkout", "-q", "-b", "retry")
    (src / "app.py").write_text(AFTER)
    _git(src, "commit", "-q", "-am", "Retry a failing fetch")
    head = _git(src, "rev-parse", "HEAD")
    repos = tmp_path / "repos"
    (repos / "acme+widget").mkdir(parents=True)
    _git(tmp_path, "clone", "-q", "--bare", str(src), str(repos / "acme+widget" / "repo"))
    _git(repos / "acme+widget" / "repo", "update-ref", "refs/pull/7/head", head)
    _git(repos / "acme+widget" / "repo", "symbolic-ref", "HEAD", "refs/heads/main")
    return repos, base, head


def aacr_dataset(tmp_path: Path, base: str, head: str) -> Path:
    path = tmp_path / "positive_samples.json"
    comments = [
        {"path": "app.py", "from_line": 2, "to_line": 6, "side": "right", "note": GOLDEN_RETRY,
         "context": "Diff Level"},
        {"path": "app.py", "from_line": 4, "to_line": 4, "side": "right", "note": GOLDEN_URL,
         "context": "Diff Level"},
        {"path": "app.py", "from_line": 1, "to_line": 1, "side": "left", "note": "old side",
         "context": "Diff Level"},
    ]  # fmt: skip
    entry = {
        "githubPrUrl": "https://github.com/acme/widget/pull/7",
        "source_commit": base,
        "target_commit": head,
        "comments": comments,
    }
    path.write_text(json.dumps([entry]))
    return path


def martian_dataset(tmp_path: Path) -> Path:
    path = tmp_path / "golden_comments.json"
    entry = {
        "pr_title": "Retry a failing fetch",
        "url": "https://github.com/acme/widget/pull/7",
        "comments": [
            {"comment": GOLDEN_RETRY, "severity": "High"},
            {"comment": GOLDEN_URL, "severity": "Low"},
        ],
    }
    path.write_text(json.dumps([entry]))
    return path


def script() -> CouncilScript:
    """Every persona raises both findings; the one seat (a neutral council member) only the
    retry; the judge matches the retry finding with the retry comment only."""
    findings = {p.name: [RETRY, SWALLOWED] for p in load_catalog().personas.values()}
    findings["Council member"] = [RETRY]
    return CouncilScript(
        findings=findings,
        judge_matches=[("retry loop is unbounded", "Unbounded retry loop", 0.9)],
    )


def run_eval(models: FakeModelServer, tmp_path: Path, dataset: Path, repos: Path, *extra: str):
    return run_council(
        models,
        tmp_path,
        "eval",
        str(dataset),
        "--repos",
        str(repos),
        "--out",
        str(tmp_path / "out"),
        "--protocol",
        "quick",
        "--models",
        MODEL,
        *extra,
    )


def _arms(tmp_path: Path) -> dict[str, Any]:
    arms: dict[str, Any] = json.loads((tmp_path / "out" / "results.json").read_text())["arms"]
    return arms


def test_eval_scores_the_protocol_and_both_baselines(
    models: FakeModelServer, tmp_path: Path, clone: tuple[Path, str, str]
) -> None:
    repos, base, head = clone
    models.default(script().reply)
    done = run_eval(models, tmp_path, aacr_dataset(tmp_path, base, head), repos)
    assert done.returncode == 0, done.stderr
    arms = _arms(tmp_path)
    assert list(arms) == ["quick", "one-seat", "samples@quick"]
    # quick: 2 merged findings (retry, swallowed), 1 matched; 2 golden (the left-side one
    # is not read), 1 matched; the matched pair's lines overlap.
    quick = arms["quick"]
    assert (quick["predictions"], quick["goldens"], quick["matched"]) == (2, 2, 1)
    assert (quick["precision"], quick["recall"], quick["f1"]) == (0.5, 0.5, 0.5)
    assert quick["location_accuracy"] == 1.0
    # one seat: the retry finding alone, matched: precision 1, recall 1/2, F1 2/3.
    one = arms["one-seat"]
    assert (one["predictions"], one["matched"]) == (1, 1)
    assert (one["precision"], one["recall"], one["f1"]) == (1.0, 0.5, 0.6667)
    assert one["location_accuracy"] == 1.0
    # N samples: every sample raises the retry finding; kept (k=2), matched.
    samples = arms["samples@quick"]
    assert (samples["precision"], samples["recall"], samples["f1"]) == (1.0, 0.5, 0.6667)
    records = json.loads((tmp_path / "out" / "results.json").read_text())["prs"]
    by_arm = {r["arm"]: r for r in records}
    drawn = by_arm["samples@quick"]
    one_sample = by_arm["one-seat"]["tokens"]
    assert drawn["budget_tokens"] == by_arm["quick"]["tokens"]
    assert drawn["samples"] >= 2
    assert drawn["tokens"] <= drawn["budget_tokens"]
    assert drawn["budget_tokens"] - drawn["tokens"] <= 1.5 * one_sample
    assert all(r["cost_usd"] > 0 and r["wall_s"] >= 0 for r in records)
    # The judge was asked about every pair (golden x finding) of every arm.
    judged = [c for c in models.calls if c.request.output_name == "submit_match"]
    assert len(judged) == 2 * (2 + 1 + 1)
    # The Markdown table: one row per arm.
    table = (tmp_path / "out" / "results.md").read_text()
    assert "| quick | 1 | 50.0% | 50.0% | 50.0% | 100.0% |" in table
    assert "| one-seat | 1 | 100.0% | 50.0% | 66.7% | 100.0% |" in table
    assert "| samples@quick | 1 | 100.0% | 50.0% | 66.7% | 100.0% |" in table
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not (tmp_path / "out" / "f1_cost.png").exists()
    else:
        png = (tmp_path / "out" / "f1_cost.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n")


def test_a_rerun_resumes_without_calling_a_model(
    models: FakeModelServer, tmp_path: Path, clone: tuple[Path, str, str]
) -> None:
    repos, base, head = clone
    models.default(script().reply)
    dataset = aacr_dataset(tmp_path, base, head)
    assert run_eval(models, tmp_path, dataset, repos, "--no-plot").returncode == 0
    first = _arms(tmp_path)
    calls = len(models.calls)
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    again = run_eval(models, tmp_path, dataset, repos, "--no-plot")
    assert again.returncode == 0, again.stderr
    assert len(models.calls) == calls
    assert (tmp_path / "out" / "results.jsonl").read_text().splitlines() == lines
    assert _arms(tmp_path) == first


def test_martian_golden_comments_are_text_without_a_location(
    models: FakeModelServer, tmp_path: Path, clone: tuple[Path, str, str]
) -> None:
    repos, _, _ = clone  # no commits in the file: refs/pull/7/head against the clone's HEAD
    models.default(script().reply)
    done = run_eval(models, tmp_path, martian_dataset(tmp_path), repos, "--no-plot")
    assert done.returncode == 0, done.stderr
    arms = _arms(tmp_path)
    assert (arms["quick"]["precision"], arms["quick"]["recall"]) == (0.5, 0.5)
    assert arms["one-seat"]["f1"] == 0.6667
    assert all(a["location_accuracy"] is None for a in arms.values())


def test_coverage_calls_no_model(
    models: FakeModelServer, tmp_path: Path, clone: tuple[Path, str, str]
) -> None:
    repos, base, head = clone
    dataset = aacr_dataset(tmp_path, base, head)
    done = run_council(
        None, tmp_path, "eval", str(dataset), "--repos", str(repos), "--out",
        str(tmp_path / "out"), "--coverage",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert models.calls == []
    figure = json.loads((tmp_path / "out" / "coverage.json").read_text())
    assert figure["overall"] == {
        "comments": 2,
        "covered": 1.0,
        "touched": 1.0,
        "file_present": 1.0,
    }
    assert json.loads(done.stdout)["covered"] == 1.0


def test_a_missing_clone_is_skipped_and_reported(
    models: FakeModelServer, tmp_path: Path, clone: tuple[Path, str, str]
) -> None:
    _, base, head = clone
    models.default(script().reply)
    empty = tmp_path / "none"
    empty.mkdir()
    done = run_eval(models, tmp_path, aacr_dataset(tmp_path, base, head), empty, "--no-plot")
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    assert result["prs"] == [] and len(result["skipped"]) == 1
    assert models.calls == []


def test_an_unreadable_dataset_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    done = run_council(None, tmp_path, "eval", str(bad), "--repos", str(tmp_path))
    assert done.returncode == 2
    assert "JSON array" in done.stderr
