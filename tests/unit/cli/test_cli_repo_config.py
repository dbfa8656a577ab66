"""`council review` configured as the App is: the repository's `.github/council.yml` and
personas (or `--config FILE`), the board options, and nothing to review being no review."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import git, make_repo, run_council
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer

AUTH = "def login(user, password):\n    return check(user, password)\n"
AUTH_CHANGED = (
    'def login(user, password):\n    if password == "admin":\n        return True\n'
    "    return check(user, password)\n"
)
PERSONA = """---
id: login-guardian
name: Login Guardian
division: security
description: Guards this repository's login flow.
task_types: [security, authentication]
review_strengths: [login flow safety]
languages: [python]
---
# Login Guardian

You know this repository's login flow and guard it.
"""
ALLOWED = "anthropic:claude-sonnet-5-5,openai:gpt-5.4"


def repo_with_config(tmp_path: Path, config: Mapping[str, object], **extra: str) -> Path:
    files = {
        "app/auth.py": AUTH,
        "docs/notes.md": "old\n",
        ".github/council.yml": yaml.safe_dump(config),
        ".github/council/agents/login-guardian.md": PERSONA,
        **extra,
    }
    return make_repo(
        tmp_path / "repo",
        files,
        {"app/auth.py": AUTH_CHANGED, "docs/notes.md": "The admin password always works.\n"},
    )


def dry_run(models: FakeModelServer | None, repo: Path, *args: str) -> tuple[Any, str]:
    done = run_council(
        models, repo, "review", "--dry-run", "--json", *args, COUNCIL_ALLOWED_MODELS=ALLOWED
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


CONFIG = {
    "protocol": "quick",
    "seats": [{"persona": "login-guardian", "model": "openai:gpt-5.4"}],
    "models": ["openai:gpt-5.4", "anthropic:claude-sonnet-5-5"],
    "paths": {"ignore": ["docs/**"]},
    "context": {"max_tokens": 5000},
    "language": "German",
    "board": {"default_size": 4, "discussion_rounds": 2},
    "protocl": "board",  # a misspelt key: reported, ignored
}


def test_the_repos_config_and_personas_shape_the_review(
    models: FakeModelServer, tmp_path: Path
) -> None:
    repo = repo_with_config(tmp_path, CONFIG)
    plan, stderr = dry_run(models, repo, "--base", "main")
    assert plan["protocol"] == "quick"
    assert plan["models"] == ["openai:gpt-5.4", "anthropic:claude-sonnet-5-5"]
    seats = {(s["persona"], s["model"]) for s in plan["seats"]}
    assert len(seats) == 3 and ("login-guardian", "openai:gpt-5.4") in seats
    assert plan["context"]["budget"] <= 5000
    assert "docs/notes.md" not in plan["context"]["included"]
    assert "The admin password always works" not in plan["context"]["text"]
    # It says which file it used and what was wrong in it, with the line.
    assert f"configuration: {repo / '.github/council.yml'}" in stderr
    assert "personas:" in stderr and "council/agents" in stderr
    assert ".github/council.yml:" in stderr and "protocl" in stderr
    # The repo's language reaches the prompts.
    prompted = run_council(
        models,
        repo,
        "review",
        "--dry-run",
        "--show-prompts",
        "--json",
        "--base",
        "main",
        COUNCIL_ALLOWED_MODELS=ALLOWED,
    )
    assert "German" in json.loads(prompted.stdout)["prompts"]["system"]


def test_a_review_runs_with_the_repos_protocol_and_models(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.default(CouncilScript().reply)
    repo = repo_with_config(tmp_path, CONFIG)
    done = run_council(
        models, repo, "review", "--base", "main", "--json", COUNCIL_ALLOWED_MODELS=ALLOWED
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["protocol"] == "quick"
    assert "login-guardian" in {s["persona"] for s in result["seats"]}
    names = [c.request.output_name for c in models.calls]
    assert names.count("submit_assessment") == 3 and "submit_vote" not in names
    assert all("German" in c.request.system_text for c in models.calls)


def test_config_option_size_rounds_and_budget(models: FakeModelServer, tmp_path: Path) -> None:
    repo = repo_with_config(tmp_path, {"protocol": "quick"})
    other = tmp_path / "elsewhere" / "council.yml"
    other.parent.mkdir()
    other.write_text(yaml.safe_dump({"protocol": "board", "models": ["openai:gpt-5.4"]}))
    plan, stderr = dry_run(
        models, repo, "--base", "main", "--config", str(other),
        "--size", "4", "--rounds", "2", "--budget-tokens", "3000",
    )  # fmt: skip
    assert f"configuration: {other}" in stderr
    assert plan["protocol"] == "board" and plan["models"] == ["openai:gpt-5.4"]
    # --size 4 asked; the diff calls one persona, so the board stops at board.min_size (3)
    # and says so rather than seat personas the change gives nothing to judge.
    assert len(plan["seats"]) == 3 and plan["context"]["budget"] == 3000
    assert any(n.startswith("3 of 4 seats filled") for n in plan["notes"]), plan["notes"]
    phases = [c["phase"] for c in plan["estimate"]["planned"]]
    assert phases.count("discuss 1") == phases.count("discuss 2") == 3
    assert "discuss 3" not in phases and phases.count("vote") == 3


def test_bad_options_are_usage_errors_that_call_nothing(
    models: FakeModelServer, tmp_path: Path
) -> None:
    repo = repo_with_config(tmp_path, {})
    cases = {
        ("--size", "12"): "--size",
        ("--rounds", "5"): "--rounds",
        ("--budget-tokens", "0"): "budget",
        ("--config", str(tmp_path / "missing.yml")): "does not exist",
        ("--protocol", "parliament"): "parliament",
    }
    for args, said in cases.items():
        done = run_council(models, repo, "review", "--base", "main", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    assert models.calls == []


def test_nothing_to_review_exits_2_and_says_what_was_compared(
    models: FakeModelServer, tmp_path: Path
) -> None:
    repo = repo_with_config(tmp_path, {})
    git(repo, "checkout", "-q", "main")
    done = run_council(models, repo, "review", "--base", "main")
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "nothing to review in main (" in said and "..HEAD (" in said
    assert "--base" in said
    binary = tmp_path / "binary.diff"
    binary.write_text(
        "diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\n"
        "Binary files a/logo.png and b/logo.png differ\n"
    )
    readme = tmp_path / "README.md"
    readme.write_text("# Not a diff\n\nJust prose.\n")
    for path, reason in ((binary, "only binary files changed: logo.png"), (readme, "not a diff")):
        done = run_council(models, repo, "review", "--diff", str(path))
        assert done.returncode == 2 and reason in " ".join(done.stderr.split()), done.stderr
    assert models.calls == []  # no model was asked about nothing


def test_outside_a_repository_it_says_how_to_review_a_diff(tmp_path: Path) -> None:
    nowhere = tmp_path / "not-a-repo"
    nowhere.mkdir()
    done = run_council(None, nowhere, "review", GIT_CEILING_DIRECTORIES=str(tmp_path))
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "is not a git repository" in said and "--diff FILE" in said
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    small = run_council(None, nowhere, "review", "--size", "1", "--diff", "-", stdin=diff)
    assert small.returncode == 2
    assert "--size: Input should be greater than or equal to 2" in " ".join(small.stderr.split())
    assert "min_size" not in small.stderr


def test_the_markdown_follows_the_repos_comment_keys(
    models: FakeModelServer, tmp_path: Path
) -> None:
    findings = [
        {
            "severity": "major",
            "path": f"app/{word.lower()}.py",
            "start_line": line,
            "end_line": line,
            "title": f"{word} defect in login",
            "detail": "The check is skipped. It must not be.",
            "suggestion": None,
        }
        for line, word in ((10, "Alpha"), (20, "Bravo"), (30, "Charlie"))
    ]
    models.default(CouncilScript(findings={"Login Guardian": findings}).reply)
    config = {**CONFIG, "max_findings": 1, "comment": "compact"}
    del config["protocl"]
    repo = repo_with_config(tmp_path, config)
    done = run_council(models, repo, "review", "--base", "main", COUNCIL_ALLOWED_MODELS=ALLOWED)
    assert done.returncode == 0, done.stderr
    markdown = done.stdout
    assert markdown.count("defect in login") == 1
    assert "…and 2 more findings: see the check run." in markdown
    assert "<details>" not in markdown
