"""`council agents --diff` / `--base` and `council review --dry-run` seat the same board for
the same change, with the same "Why this board" note (issue 22, item 4): the console
scripts as a user runs them, no model provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli import git, run_council
from tests.support.diffs import diff_of

CHANGE = diff_of(
    "graphrag/utils.py",
    "async def drop(edges):\n    async with trio.open_nursery() as nursery:\n"
    "        for edge in edges:\n            nursery.start_soon(delete, edge)\n",
    "async def drop(edges):\n    async with trio.open_nursery() as nursery:\n"
    "        for edge in edges:\n"
    "            nursery.start_soon(trio.to_thread.run_sync, delete, edge)\n",
) + diff_of("Dockerfile", "FROM python:3.11\n", "FROM python:3.12-slim\n")


def why(notes: list[str]) -> str:
    return next(n for n in notes if n.startswith("Why this board: "))


def both(cwd: Path, *change: str) -> tuple[dict[str, Any], dict[str, Any]]:
    agents = run_council(None, cwd, "agents", *change, "--json")
    assert agents.returncode == 0, agents.stderr
    review = run_council(None, cwd, "review", *change, "--dry-run", "--protocol", "board", "--json")
    assert review.returncode == 0, review.stderr
    return json.loads(agents.stdout), json.loads(review.stdout)


def test_agents_diff_and_the_dry_run_seat_the_same_board(tmp_path: Path) -> None:
    (tmp_path / "change.diff").write_text(CHANGE)
    agents, dry = both(tmp_path, "--diff", str(tmp_path / "change.diff"))
    assert agents["board"] == [seat["persona"] for seat in dry["seats"]]
    assert why(agents["notes"]) == why(dry["notes"])
    assert {"concurrency-analyst", "platform-engineer"} <= set(agents["board"])
    assert "concurrency-analyst: it uses trio (nursery.start_soon) in graphrag/utils.py:4" in (
        why(agents["notes"])
    )
    # The file-kind personas the change gives nothing to judge score 0, and say why.
    scores = {s["persona"]: s for s in agents["scores"]}
    assert scores["migration-safety"]["total"] == 0
    assert scores["migration-safety"]["missing_evidence"] == (
        "no migration, schema, ORM model or SQL file changed"
    )
    assert scores["platform-engineer"]["missing_evidence"] is None


def test_agents_base_reads_the_commit_subjects_as_the_dry_run_does(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app").mkdir()
    (repo / "app" / "totals.py").write_text("def total(xs):\n    return sum(xs)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feature")
    for n, subject in enumerate(["Cache the totals (CVE-2024-3094)", "perf: skip empty lists"]):
        (repo / "app" / "totals.py").write_text(
            f"def total(xs):\n    if not xs:\n        return {n}\n    return sum(xs)\n"
        )
        git(repo, "commit", "-q", "-am", subject)
    agents, dry = both(repo, "--base", "main")
    assert agents["board"] == [seat["persona"] for seat in dry["seats"]]
    assert why(agents["notes"]) == why(dry["notes"])
    said = {(w["intent"], w["word"], w["source"]) for w in agents["signals"]["intent"]}
    assert {("performance", "perf", "title"), ("security", "cve-2024-3094", "commit")} <= said
    assert {"performance-engineer", "appsec-reviewer"} <= set(agents["board"])
    assert "performance-engineer: the title says 'perf'" in why(agents["notes"])
    assert "appsec-reviewer: a commit subject says 'cve-2024-3094'" in why(agents["notes"])


def test_agents_takes_one_change(tmp_path: Path) -> None:
    (tmp_path / "change.diff").write_text(CHANGE)
    done = run_council(None, tmp_path, "agents", "--diff", "change.diff", "--base", "main")
    assert done.returncode == 2
    assert "--diff and --base choose the change two ways: give one" in done.stderr
