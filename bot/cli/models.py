"""`council models check`: one tiny structured call per configured model."""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

import typer
from rich.console import Console

app = typer.Typer(help="Inspect and check the configured models.", no_args_is_help=True)


NO_MODELS = (
    "No model is configured. Set ANTHROPIC_API_KEY and/or OPENAI_API_KEY, or name models "
    "with COUNCIL_MODELS (e.g. anthropic:claude-sonnet-5-5,openai:gpt-5.4), or run a local "
    "Ollama server on 127.0.0.1:11434."
)


@app.command("check")
def check(
    models: Annotated[
        str | None, typer.Option("--models", help="Comma-separated model references.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Make one tiny structured call to each model and report what worked."""
    # Imported here, not at the top: `council --help` loads this module too.
    from bot.cli.modelcheck import check_models, print_table
    from bot.logs import configure_logging
    from bot.settings import Settings

    settings = Settings()
    configure_logging(settings.log_level, json_lines=settings.log_json)
    refs = [m.strip() for m in (models or "").split(",") if m.strip()]
    results = asyncio.run(check_models(settings, refs))
    if as_json:
        payload = [r.model_dump(exclude={"provider"}) for r in results]
        typer.echo(json.dumps(payload, indent=2))
    elif not results:
        Console(stderr=True).print(NO_MODELS)
    else:
        print_table(results, Console())
    if not results:
        if as_json:
            Console(stderr=True).print(NO_MODELS)
        raise typer.Exit(1)
    raise typer.Exit(0 if all(r.ok for r in results) else 1)
