"""The `council` command. Each sub-command lives in its own module; they meet here.

Every command's module is imported to register it, `council --help` included, so each one
imports only typer, rich and the standard library at the top, and what its command needs
(the council, the model SDKs, the database, githubkit) inside the command's body.
tests/unit/cli/test_startup.py keeps it so; bench/startup.py measures it.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import Annotated

import typer

from bot import COMMAND
from bot.cli import action, agents, app_commands, config, context, history, models, review
from bot.cli import eval as evaluation

DISTRIBUTION = "pr-council"

app = typer.Typer(
    name=COMMAND,
    help="PR Council: a council of AI reviewers for pull requests.",
    no_args_is_help=True,
    add_completion=False,
    # Sub-commands inherit the help option names from the root's context.
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(models.app, name="models")
app.add_typer(config.app, name="config")
app.command("review", cls=review.ReviewCommand)(review.review)
app.command("eval")(evaluation.evaluate)
app.command("agents")(agents.agents)
app.command("context")(context.context)
app.command("serve")(app_commands.serve)
app.command("worker")(app_commands.worker)
app.command("replay")(app_commands.replay)
app.command("action")(action.action)
app.command("history")(history.history)
app.command("show")(history.show)
app.command("stats")(history.stats)


def _print_version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import version  # not free: only for --version

    typer.echo(f"council {version(DISTRIBUTION)}")
    raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    """PR Council: a council of AI reviewers for pull requests."""


# Commands that are a whole process of their own on every use (a CLI review, an Action
# run): once the command has returned - its store written and closed, its clients closed,
# its output printed - the process ends without the interpreter's teardown, which took
# 0.4 s of a fresh review's wall time (freeing every module and object one by one).
FAST_EXIT = frozenset({"review", "action"})


def main() -> None:
    if sys.argv[1:2] == ["review"]:
        # Start-up allocates a million objects that live as long as the process (modules,
        # classes, the SDKs' models): collecting garbage among them cost a fresh review
        # 0.15-0.2 s before its first request. The review enables collection again, those
        # objects frozen, once the council starts (bot/cli/review.py `_started`).
        gc.disable()
    try:
        app()
    except SystemExit as done:
        if sys.argv[1:2] and sys.argv[1] in FAST_EXIT:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            if done.code is not None and not isinstance(done.code, int):
                print(done.code, file=sys.stderr)  # what SystemExit would have printed
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        raise
