"""The `council` command. Each sub-command lives in its own module; they meet here."""

from __future__ import annotations

import typer

from bot.cli import agents, models, review

app = typer.Typer(
    name="council",
    help="PR Council: a council of AI reviewers for pull requests.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(models.app, name="models")
app.command("review")(review.review)
app.command("agents")(agents.agents)


def main() -> None:
    app()
