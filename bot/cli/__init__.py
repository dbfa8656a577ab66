"""The `council` command. Each sub-command lives in its own module; they meet here."""

from __future__ import annotations

import typer

from bot.cli import agents, app_commands, config, context, models, review

app = typer.Typer(
    name="council",
    help="PR Council: a council of AI reviewers for pull requests.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(models.app, name="models")
app.add_typer(config.app, name="config")
app.command("review")(review.review)
app.command("agents")(agents.agents)
app.command("context")(context.context)
app.command("serve")(app_commands.serve)
app.command("worker")(app_commands.worker)
app.command("replay")(app_commands.replay)


def main() -> None:
    app()
