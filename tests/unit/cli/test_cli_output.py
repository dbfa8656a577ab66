"""What `council review` prints, per format: the console script against the fake model server.

stdout is the advisory (text for a person, the PR comment's Markdown, or JSON); stderr is the
progress (plain lines when it is not a terminal) and, last, one summary line.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from bot.cli.progress import ProgressView
from bot.council.engine import ProgressEvent
from tests.support.council_answers import CouncilScript, persona_of
from tests.support.model_server import FakeModelServer, FakeRequest, Reply
from tests.unit.cli.test_cli_review import DIFF, run_review

MARKER = "<!-- pr-council:advisory -->"
# 3 seats: the security seat the diff's signals call, the correctness owner every board has,
# and one filled to board.min_size (no file-kind persona: the change has no such file).
# The critical finding no vote answers keeps the approval from plain APPROVED (issue 11).
SUMMARY = re.compile(r"^council: APPROVED_WITH_CONDITIONS · 3/3 seats · \$\d+\.\d{4} · \d+\.\d s$")
FINDING = {
    "severity": "critical",
    "path": "app/auth.py",
    "start_line": 2,
    "end_line": 3,
    "title": "Hard-coded admin password",
    "detail": "Anyone who types admin logs in.",
    "suggestion": "Remove the branch.",
}


@pytest.fixture
def diff_file(tmp_path: Path) -> Path:
    path = tmp_path / "change.diff"
    path.write_text(DIFF)
    return path


def script() -> CouncilScript:
    return CouncilScript(findings={"Application Security Reviewer": [FINDING]})


def test_text_is_for_a_person(models: FakeModelServer, tmp_path: Path, diff_file: Path) -> None:
    models.default(script().reply)
    done = run_review(models, tmp_path, "--diff", str(diff_file), "--format", "text")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("🟡 Approved with conditions · confidence 80% · 3 seats")
    assert any("Resolve the critical finding: Hard-coded admin password" in ln for ln in lines)
    row = next(line for line in lines if "Hard-coded admin password" in line)
    assert "critical" in row and "app/auth.py:2-3" in row and "1 seat" in row
    assert "Application Security Reviewer" in done.stdout  # raised by whom, by persona
    for heading in ("Findings", "Consensus", "Recommendation", "Votes", "Assessments"):
        assert heading in lines
    assert next(line for line in lines if line.startswith("Cost: $"))
    for markup in ("<details", "<summary", "<br", "<!--", "|---", "| ", "**", "###"):
        assert markup not in done.stdout
    assert not any(line != line.rstrip() for line in lines)  # no padding when piped


def test_markdown_is_the_pr_comment(
    models: FakeModelServer, tmp_path: Path, diff_file: Path
) -> None:
    models.default(script().reply)
    asked = run_review(models, tmp_path, "--diff", str(diff_file), "--format", "markdown")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.startswith(MARKER)
    assert "## 🟡 Approved with conditions" in asked.stdout and "| Severity |" in asked.stdout
    piped = run_review(models, tmp_path, "--diff", str(diff_file))  # stdout is a pipe
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.startswith(MARKER)


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_stderr_ends_with_one_summary_line(
    models: FakeModelServer, tmp_path: Path, diff_file: Path, fmt: str
) -> None:
    models.default(script().reply)
    done = run_review(models, tmp_path, "--diff", str(diff_file), "--format", fmt)
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert SUMMARY.match(last), last
    assert sum(bool(SUMMARY.match(line)) for line in done.stderr.splitlines()) == 1
    if fmt == "json":
        cost = json.loads(done.stdout)["usage"]["cost_usd"]
        assert f"${cost:.4f}" in last


def assessing(persona: str) -> Callable[[FakeRequest], bool]:
    def match(request: FakeRequest) -> bool:
        return request.output_name == "submit_assessment" and (
            persona_of(request.messages_text) == persona
        )

    return match


def test_progress_names_the_personas(
    models: FakeModelServer, tmp_path: Path, diff_file: Path
) -> None:
    models.default(script().reply)
    # Prose instead of the assessment, once: the seat is re-asked.
    models.on(assessing("Site Reliability Engineer"), reply=Reply(text="Looks fine."), times=1)
    done = run_review(models, tmp_path, "--diff", str(diff_file), "--format", "json")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if "convening board on" in line)
    assert str(diff_file) in lines[first] and "2 models" in lines[first]
    events = lines[first + 1 : -1]
    timed = re.compile(r"^council: +\d+\.\d s  ")
    assert events and all(timed.match(line) for line in events), events
    said = [timed.sub("", line) for line in events]
    assert "Application Security Reviewer: assessing" in said
    assert "Site Reliability Engineer: invalid answer" in said
    assert "Site Reliability Engineer: re-asked (incomplete answer)" in said
    assert any(re.fullmatch(r"Correctness Reviewer: done \(\d+\.\d s\)", s) for s in said), said
    assert "discussion round 1" in said and "Chair: writing the synthesis" in said
    assert not any("seat-" in line for line in lines)


def test_progress_on_a_terminal_is_a_live_table_of_personas() -> None:
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=80)
    now = [0.0]
    view = ProgressView(console, clock=lambda: now[0])
    with view:
        view.update(ProgressEvent("assess", None, "started"))
        view.update(ProgressEvent("assess", "seat-1", "called", "Test Engineer"))
        view.update(ProgressEvent("assess", "seat-2", "called", "Council member"))
        view.update(ProgressEvent("assess", "seat-3", "called", "Council member"))
        now[0] = 4.0
        view.update(ProgressEvent("assess", "seat-1", "ok", "Test Engineer"))
    shown = screen.getvalue()
    assert "Test Engineer" in shown and "done (4.0 s)" in shown
    assert "Council member 2" in shown  # two seats of one persona: told apart
    assert "seat-1" not in shown


@pytest.mark.parametrize("fmt", [[], ["--format", "text"]])
def test_dry_run_without_a_model_ends_with_what_to_set(
    models: FakeModelServer, tmp_path: Path, diff_file: Path, fmt: list[str]
) -> None:
    done = run_review(
        models, tmp_path, "--diff", str(diff_file), *fmt, ANTHROPIC_API_KEY="", OPENAI_API_KEY=""
    )
    assert done.returncode == 0, done.stderr
    assert models.calls == []
    lines = done.stdout.strip().splitlines()
    assert str(diff_file) in lines[0] and lines[1].startswith("configuration: defaults")
    for wanted in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "COUNCIL_MODELS", "Ollama"):
        assert wanted in lines[-1]
    assert "no model: cost not estimated" in done.stdout
    assert "(no model)" not in done.stdout and "$0.0000" not in done.stdout
    assert "dry run" in done.stderr


def test_dry_run_json_without_a_model_says_what_to_set(
    models: FakeModelServer, tmp_path: Path, diff_file: Path
) -> None:
    done = run_review(
        models,
        tmp_path,
        "--diff",
        str(diff_file),
        "--json",
        ANTHROPIC_API_KEY="",
        OPENAI_API_KEY="",
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert plan["estimate"]["cost_usd"] is None and plan["models"] == []
    assert "ANTHROPIC_API_KEY" in plan["to_run"] and "ANTHROPIC_API_KEY" in done.stderr


def test_dry_run_with_models_shows_seats_and_says_run_it_without_dry_run(
    models: FakeModelServer, tmp_path: Path, diff_file: Path
) -> None:
    done = run_review(models, tmp_path, "--diff", str(diff_file), "--dry-run", "--format", "text")
    assert done.returncode == 0, done.stderr
    assert models.calls == []
    lines = done.stdout.strip().splitlines()
    assert lines[0] == f"Dry run · protocol board · {diff_file}"
    seat = next(line for line in lines if line.strip().startswith("Application Security"))
    assert re.search(r"Application Security\b.* +security +(anthropic|openai):\S+ +\d", seat), seat
    assert re.search(r"estimated cost \$\d+\.\d{4}", done.stdout)
    assert lines[-1] == "To convene the council, run the same command without --dry-run."


def test_prompts_only_with_show_prompts(
    models: FakeModelServer, tmp_path: Path, diff_file: Path
) -> None:
    args = ("--diff", str(diff_file), "--dry-run", "--format", "text")
    plain = run_review(models, tmp_path, *args)
    shown = run_review(models, tmp_path, *args, "--show-prompts")
    assert plain.returncode == shown.returncode == 0, plain.stderr + shown.stderr
    for rules in ("no instructions", "Your lenses", "--- system: rules ---"):
        assert rules not in plain.stdout
        assert rules in shown.stdout
    as_json = run_review(models, tmp_path, "--diff", str(diff_file), "--dry-run", "--json")
    assert "prompts" not in json.loads(as_json.stdout)
