"""`council review` as a user runs it: the console script, a diff, the fake model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.council_answers import CouncilScript
from tests.support.diffs import AUTH_DIFF
from tests.support.model_server import FakeModelServer, Fault

COUNCIL = str(Path(sys.executable).with_name("council"))
DIFF = AUTH_DIFF


def run_review(
    models: FakeModelServer, tmp_path: Path, *args: str, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "COUNCIL_", "DATABASE_"))
    }
    base.update(
        {
            "ANTHROPIC_API_KEY": "sk-ant-test-0123456789",
            "ANTHROPIC_BASE_URL": models.anthropic_url,
            "OPENAI_API_KEY": "sk-test-0123456789",
            "OPENAI_BASE_URL": models.openai_url,
            "COUNCIL_MAX_RETRIES": "0",
            "COUNCIL_CALL_DEADLINE_S": "10",
            "COUNCIL_OLLAMA_URL": "http://127.0.0.1:9",
            "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",
        }
    )
    base.update(env)
    return subprocess.run(
        [COUNCIL, "review", *args],
        capture_output=True,
        text=True,
        env=base,
        timeout=120,
        input=stdin,
        cwd=tmp_path,
    )


@pytest.fixture
def diff_file(tmp_path: Path) -> Path:
    path = tmp_path / "change.diff"
    path.write_text(DIFF)
    return path


def test_review_prints_the_advisory_as_json(
    models: FakeModelServer, tmp_path: Path, diff_file: Path
) -> None:
    models.default(CouncilScript().reply)
    done = run_review(models, tmp_path, "--diff", str(diff_file), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["protocol"] == "board"
    assert result["resolution"] == "APPROVED" and result["conclusion"] == "success"
    assert 3 <= len(result["seats"]) <= 5
    for seat in result["seats"]:
        assert seat["state"] == "ok" and seat["vote"] == "APPROVE"
        assert 0.0 <= seat["confidence"] <= 1.0
    assert result["usage"]["calls"] == len(models.calls) > 0
    assert result["usage"]["cost_usd"] > 0
    assert result["markdown"].startswith("<!-- pr-council:advisory -->")
    # The diff reached the seats, fenced as untrusted data.
    system = str(models.calls[0].request.system_text)
    assert 'password == "admin"' in system and "<untrusted-diff" in system


def test_review_reads_stdin_and_prints_markdown(models: FakeModelServer, tmp_path: Path) -> None:
    script = CouncilScript(vote="REJECT", verdict="REJECT")
    models.default(script.reply)
    done = run_review(models, tmp_path, "--diff", "-", "--protocol", "quick", stdin=DIFF)
    assert done.returncode == 0, done.stderr
    assert "## ❌ Rejected" in done.stdout
    assert [c.request.output_name for c in models.calls].count("submit_assessment") == 3


def test_no_quorum_exits_3(models: FakeModelServer, tmp_path: Path, diff_file: Path) -> None:
    models.on(reply=Fault.server_error())
    done = run_review(models, tmp_path, "--diff", str(diff_file), "--json")
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["resolution"] == "NO_QUORUM" and result["conclusion"] == "failure"
    assert {s["state"] for s in result["seats"]} == {"error"}


def test_dry_run_calls_no_model(models: FakeModelServer, tmp_path: Path, diff_file: Path) -> None:
    done = run_review(
        models, tmp_path, "--diff", str(diff_file), "--dry-run", "--show-prompts", "--json"
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert models.calls == []
    seats = plan["seats"]
    assert 3 <= len(seats) <= 5 and all(s["score"] is not None for s in seats)
    assert seats[0]["persona"] == "appsec-reviewer"  # the diff touches authentication
    assert plan["context"]["included"] == ["app/auth.py"] and plan["context"]["tokens"] > 0
    assert "no instructions" in plan["prompts"]["system"]
    assert "Application Security Reviewer" in plan["prompts"]["seat"]
    assert "Your lenses" in plan["prompts"]["seat"]
    # A board: every seat assesses, discusses each round and votes; then the chair merges
    # the findings (at most once) and synthesizes.
    planned = plan["estimate"]["planned"]
    phases = [c["phase"] for c in planned]
    rounds = plan["board"]["discussion_rounds"]
    assert plan["estimate"]["calls"] == len(planned) == len(seats) * (2 + rounds) + 2
    assert phases.count("assess") == phases.count("vote") == len(seats)
    assert sum(p.startswith("discuss") for p in phases) == len(seats) * rounds
    assert plan["estimate"]["cost_usd"] > 0
    assert planned[-2:] == [
        {"phase": phase, "seat": "chair", "model": "anthropic:claude-sonnet-5-5"}
        for phase in ("merge", "synthesize")
    ]


def test_without_a_provider_it_explains_and_dry_runs(
    models: FakeModelServer, tmp_path: Path, diff_file: Path
) -> None:
    done = run_review(
        models, tmp_path, "--diff", str(diff_file), ANTHROPIC_API_KEY="", OPENAI_API_KEY=""
    )
    assert done.returncode == 0, done.stderr
    assert "dry run" in done.stderr
    assert "Would make at most" in done.stdout
    # What to set comes last, where the person reads on from the plan.
    assert "ANTHROPIC_API_KEY" in done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--protocol", "nonsense"], "unknown protocol"),
        (["--models", "bogus"], "not of the form"),
        (["--diff", "missing.diff"], "not found"),
    ],
)
def test_usage_errors_exit_2(
    models: FakeModelServer, tmp_path: Path, args: list[str], message: str
) -> None:
    full = args if "--diff" in args else ["--diff", "-", *args]
    done = run_review(models, tmp_path, *full, stdin=DIFF)
    assert done.returncode == 2
    assert message in done.stderr


def test_agents_lists_the_catalog_and_seats_a_board_for_a_diff(
    tmp_path: Path, diff_file: Path
) -> None:
    listing = subprocess.run(
        [COUNCIL, "agents", "--json"], capture_output=True, text=True, timeout=60
    )
    assert listing.returncode == 0, listing.stderr
    catalog = json.loads(listing.stdout)
    assert len(catalog) >= 12 and len({p["division"] for p in catalog}) >= 5
    scored = subprocess.run(
        [COUNCIL, "agents", "--diff", str(diff_file), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert scored.returncode == 0, scored.stderr
    result = json.loads(scored.stdout)
    assert "security" in result["signals"]["areas"]
    assert result["board"][0] == "appsec-reviewer"
    top = result["scores"][0]
    assert top["total"] == top["semantic"] + top["heuristic"] + top["metadata"] + top["memory"]
    explained = subprocess.run(
        [COUNCIL, "agents", "--diff", str(diff_file), "--explain"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "semantic +4" in explained.stdout and "Board: appsec-reviewer" in explained.stdout


def test_review_honours_the_repos_paths_ignore(models: FakeModelServer, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    (repo / "vendor").mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    (repo / "app.py").write_text("def f():\n    return 1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / ".github" / "council.yml").write_text('paths:\n  ignore: ["vendor/**"]\n')
    (repo / "vendor" / "lib.py").write_text("def vendored():\n    return 2\n")
    (repo / "app.py").write_text("def f():\n    return 2\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "change"], check=True)
    done = run_review(models, repo, "--base", "HEAD~1", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert "app.py" in plan["context"]["included"]
    assert "vendor/lib.py" not in plan["context"]["included"]
    assert any(line.startswith("vendor/lib.py") for line in plan["context"]["omitted"])
