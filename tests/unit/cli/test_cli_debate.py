"""`council review --protocol debate --mode ... --dry-run` (issue 12): the dry run shows the
debate mode, its committee (panelist, lens, stance, model; the judge; the outside
opinion) and exactly the calls `planned_calls` plans for the mode; a `full` debate with a
single model warns that it runs without an outside opinion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.council.protocols import planned_calls
from tests.support.model_server import FakeModelServer
from tests.unit.cli.test_cli_review import DIFF, run_review

ANTHROPIC = "anthropic:claude-sonnet-5-5"
OPENAI = "openai:gpt-5.4"


@pytest.fixture
def diff_file(tmp_path: Path) -> Path:
    path = tmp_path / "change.diff"
    path.write_text(DIFF)
    return path


def dry_run(models: FakeModelServer, tmp_path: Path, diff: Path, *args: str) -> str:
    done = run_review(
        models,
        tmp_path,
        "--diff",
        str(diff),
        "--protocol",
        "debate",
        "--question",
        "Should this cache live in Redis?",
        "--dry-run",
        *args,
    )
    assert done.returncode == 0, done.stderr
    assert models.calls == []
    return done.stdout


@pytest.mark.parametrize(("mode", "judges"), [("quick", 0), ("standard", 2), ("full", 3)])
def test_the_dry_run_plans_each_modes_calls_and_shows_the_committee(
    models: FakeModelServer, tmp_path: Path, diff_file: Path, mode: str, judges: int
) -> None:
    both = f"{ANTHROPIC},{OPENAI}"
    plan = json.loads(
        dry_run(models, tmp_path, diff_file, "--mode", mode, "--models", both, "--json")
    )
    debate = plan["debate"]
    assert debate["mode"] == mode
    committee = debate["committee"]
    assert [c["model"] for c in committee] == [ANTHROPIC, OPENAI, ANTHROPIC]
    assert all(c["lens"] == c["stance"] == "designed at run time" for c in committee)
    planned = plan["estimate"]["planned"]
    expected = planned_calls("debate", seats=3, rounds=1, mode=mode, models=2)
    assert plan["estimate"]["calls"] == len(planned) == len(expected)
    assert [c["phase"] for c in planned] == [c.phase for c in expected]
    assert sum(c["phase"].startswith("judge") for c in planned) == judges
    outside = [c for c in planned if c["phase"] == "outside opinion"]
    if mode == "full":
        assert debate["outside_model"] == OPENAI
        assert outside == [{"phase": "outside opinion", "seat": "Outside opinion", "model": OPENAI}]
    else:
        assert debate["outside_model"] is None and outside == []


def test_a_full_debate_with_one_model_warns_it_runs_without_an_outside_opinion(
    models: FakeModelServer, tmp_path: Path, diff_file: Path
) -> None:
    text = dry_run(models, tmp_path, diff_file, "--mode", "full", "--models", ANTHROPIC)
    assert "Committee (debate mode full)" in text
    assert "Step-back judge" in text and "skipped (a single model)" in text
    assert "Warning: a full debate asks an outside opinion of a second model" in text
    assert "outside opinion:" not in text  # no such call is planned
    for column in ("panelist", "lens", "stance", "model"):
        assert column in text
