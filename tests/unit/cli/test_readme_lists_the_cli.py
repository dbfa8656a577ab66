"""README says what the code does: its command table and config example list what the
protocol table, the debate modes and the CLI's own commands and options hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer

from bot.cli import app
from bot.council.protocols import DEBATE_MODES, NAMES

README = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")


def _command_rows() -> dict[str, str]:
    """`council <name>` -> its row in README's command table."""
    start = README.index("## The command line")
    table = README[start : README.index("\n\n", README.index("| --- |", start))]
    rows: dict[str, str] = {}
    for row in table.splitlines():
        for name in re.findall(r"`council ([a-z]+)", row.split(" | ")[0]):
            rows.setdefault(name, row)
    return rows


def _commands() -> dict[str, Any]:
    """The CLI's commands by name, as typer builds them (on its own click)."""
    commands: dict[str, Any] = getattr(typer.main.get_command(app), "commands", {})
    assert commands
    return commands


def test_every_command_of_the_cli_has_a_row_in_the_readme() -> None:
    rows = _command_rows()
    missing = sorted(set(_commands()) - set(rows))
    assert not missing, f"README's command table lacks: {missing}"


def test_the_review_row_names_every_protocol_every_debate_mode_and_every_option() -> None:
    row = _command_rows()["review"]
    usage = row.split(" | ")[0]
    assert "|".join(NAMES) in usage.replace("\\|", "|")
    assert "|".join(DEBATE_MODES) in usage.replace("\\|", "|")
    review = _commands()["review"]
    options = {
        name
        for param in review.params
        for name in param.opts
        if name.startswith("--") and name not in ("--help", "--json")
    }
    missing = sorted(o for o in options if o not in usage)
    assert not missing, f"README's `council review` row lacks: {missing}"


def test_the_eval_row_names_its_required_and_main_options() -> None:
    usage = _command_rows()["eval"].split(" | ")[0]
    for option in ("--repos", "--protocol", "--models", "--coverage"):
        assert option in usage


def test_the_config_example_lists_every_protocol() -> None:
    (line,) = [row for row in README.splitlines() if row.startswith("protocol: ")]
    assert re.findall(r"\b[a-z]+\b", line.split("#", 1)[1])[: len(NAMES)] == list(NAMES)
