"""`council action`: the GitHub Action's entry point (action.yml runs it in the job).

It reads the runner's variables (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH, GITHUB_TOKEN,
GITHUB_REPOSITORY, GITHUB_SERVER_URL, GITHUB_RUN_ID, GITHUB_API_URL, GITHUB_STEP_SUMMARY)
and the provider keys the workflow passes from its secrets. Exit 0 whatever the verdict
(the "Council" check run carries it) and when there is nothing to do (the job summary says
why); 1 when the run could not do its work, with the reason on stderr; 2 outside a
workflow job or with invalid settings.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console

from bot.cli.exits import EXIT_USAGE

if TYPE_CHECKING:
    from bot.action.event import ActionEnv
    from bot.action.run import ActionOutcome
    from bot.settings import Settings

EXIT_FAILED = 1
EXIT_CANCELLED = 130  # as a shell reports a job stopped by SIGINT


def action() -> None:
    """Review the pull request of this GitHub Actions event (the action's entry point)."""
    err = Console(stderr=True)
    from bot.action.event import ActionEnv, ActionEnvError
    from bot.logs import configure_logging
    from bot.settings import Settings

    try:
        env = ActionEnv.from_environ(os.environ)
        settings = Settings()
    except (ActionEnvError, ValueError) as error:
        _fail(err, str(error), EXIT_USAGE)
    configure_logging(settings.log_level, json_lines=settings.log_json)
    try:
        code = asyncio.run(_main(env, settings, err))
    except (asyncio.CancelledError, KeyboardInterrupt):  # the job was cancelled
        from bot.action.run import CANCELLED, write_summary

        write_summary(env, f"**Stopped:** {CANCELLED}")
        _say(err, f"council: {CANCELLED}")
        code = EXIT_CANCELLED
    raise typer.Exit(code)


async def _main(env: ActionEnv, settings: Settings, err: Console) -> int:
    from bot.action.run import ActionFailed, run_action, write_summary

    _cancel_on_sigterm()
    try:
        outcome: ActionOutcome = await run_action(env, settings)
    except ActionFailed as error:
        message = f"the review failed: {error}"
        write_summary(env, f"**Failed:** {error}")
        _say(err, f"council: error: {message}")
        return EXIT_FAILED
    write_summary(env, outcome.summary)
    _say(err, f"council: {outcome.summary}")
    return 0


def _cancel_on_sigterm() -> None:
    """A cancelled job gets SIGINT, then SIGTERM: both cancel the run, so that its check
    run is closed as cancelled rather than left in progress."""
    task = asyncio.current_task()
    if task is None or sys.platform == "win32":
        return
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)


def _say(err: Console, text: str) -> None:
    err.print(text, highlight=False, markup=False, soft_wrap=True)


def _fail(err: Console, message: str, code: int) -> NoReturn:
    err.print("[bold red]error:[/] ", end="")
    err.print(message, highlight=False, markup=False, soft_wrap=True)
    sys.stderr.flush()
    raise typer.Exit(code)
