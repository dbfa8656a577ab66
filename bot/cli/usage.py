"""How a command says it was used wrongly: one red line on stderr, exit 2 (`EXIT_USAGE`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console

from bot.cli.exits import EXIT_USAGE

if TYPE_CHECKING:
    from bot.settings import Settings

__all__ = ["fail", "settings_or_fail"]


def fail(err: Console, message: str) -> NoReturn:
    err.print("[bold red]error:[/] ", end="")
    err.print(message, highlight=False, markup=False, soft_wrap=True)
    sys.stderr.flush()
    raise typer.Exit(EXIT_USAGE)


def settings_or_fail(err: Console) -> Settings:
    """The process's settings; invalid ones are a usage error naming what is wrong."""
    from bot.settings import Settings  # pydantic-settings: not for `council --help`

    try:
        return Settings()
    except ValueError as error:
        fail(err, f"invalid settings: {error}")
