"""`council config check [FILE]`: validate a repository's `.github/council.yml` against this
machine's settings, as the App would, and print what it would run with."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from bot.cli.exits import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE

if TYPE_CHECKING:
    from bot.config import ConfigIssue
    from bot.settings import Settings

app = typer.Typer(help="Check a repository's council configuration.", no_args_is_help=True)


@app.command("check")
def check(
    file: Annotated[
        Path | None,
        typer.Argument(help="The config file (default: .github/council.yml).", show_default=False),
    ] = None,
) -> None:
    """Print each problem as FILE:LINE: key: reason, then the effective configuration.

    Models are checked against this machine's COUNCIL_ALLOWED_MODELS (or COUNCIL_MODELS),
    pinned personas against the catalog and the repo's `.github/council/agents/`.

    Exit 0 when the file is valid, 1 with problems (their defaults are shown), 2 when the
    file cannot be read or the settings are invalid."""
    # Imported here, not at the top: `council --help` loads this module too.
    from bot.config import CONFIG_PATH
    from bot.config.load import load_repo_config
    from bot.config.operator import allowed_repo_models
    from bot.config.show import effective_yaml

    file = file if file is not None else Path(CONFIG_PATH)
    text = _read(file)
    settings = _settings()
    result = load_repo_config(text, settings, personas=_personas(file))
    for issue in result.issues:
        typer.echo(_located(file, issue), err=True)
    allowed = ", ".join(allowed_repo_models(settings)) or "none"
    typer.echo(f"# models a repository may choose here: {allowed}")
    typer.echo(effective_yaml(result.config), nl=False)
    raise typer.Exit(EXIT_PROBLEMS if result.issues else EXIT_OK)


def _personas(file: Path) -> list[str]:
    """The packaged catalog and the repo's own personas: `.github/council/agents/` beside
    `.github/council.yml`, as the App reads them."""
    from bot.config import AGENTS_DIR, CONFIG_PATH
    from bot.council.personas import load_catalog

    agents = file.parent / Path(AGENTS_DIR).relative_to(Path(CONFIG_PATH).parent)
    return load_catalog([agents] if agents.is_dir() else []).ids()


def _located(file: Path, issue: ConfigIssue) -> str:
    where = f"{file}:{issue.line}" if issue.line else str(file)
    return f"{where}: {issue}"


def _read(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        _fail(f"{file}: not UTF-8 text")
    except OSError as error:
        _fail(f"{file}: cannot read: {error.strerror or type(error).__name__}")


def _settings() -> Settings:
    from pydantic import ValidationError

    from bot.settings import Settings

    try:
        return Settings()
    except ValidationError as error:
        # Names and reasons only: a rejected value may be a secret.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in error.errors(include_input=False, include_url=False)
        )
        _fail(f"invalid settings: {problems}")


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)
