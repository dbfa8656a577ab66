"""The App's processes: `council serve` (webhooks), `council worker` (deliberations), and
`council replay` (sign and post a payload to a running server, for operators)."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from bot.cli.exits import EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE

if TYPE_CHECKING:
    from bot.settings import Settings


def _settings(*, app: bool = True) -> Settings:
    # Imported here, not at the top: `council --help` loads this module too.
    from bot.logs import configure_logging
    from bot.settings import MissingSettingError, Settings, require_app

    err = Console(stderr=True)
    try:
        settings = Settings()
        if app:
            require_app(settings)
    except (MissingSettingError, ValueError) as error:
        err.print(f"[bold red]error:[/] {error}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from None
    configure_logging(settings.log_level, json_lines=settings.log_json)
    return settings


def serve(
    host: Annotated[str, typer.Option("--host")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port")] = 8000,
) -> None:
    """Run the webhook receiver (FastAPI on uvicorn)."""
    import uvicorn

    from bot.web.app import create_app

    settings = _settings()
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", access_log=False)


def worker() -> None:
    """Run a worker: deliberations from the queue; its own /metrics on a port of its own."""
    from bot.queue.worker import run_worker

    run_worker(_settings())


def replay(
    payload: Annotated[Path, typer.Argument(help="A webhook payload JSON file.")],
    event: Annotated[str, typer.Option("--event", help="The X-GitHub-Event name.")],
    url: Annotated[str, typer.Option("--url")] = "http://127.0.0.1:8000/webhooks/github",
    delivery: Annotated[
        str | None, typer.Option("--delivery", help="Delivery id (default: a new one).")
    ] = None,
) -> None:
    """Sign a payload with GITHUB_WEBHOOK_SECRET and post it to a running server."""
    import httpx

    settings = _settings(app=False)
    if settings.github_webhook_secret is None:
        Console(stderr=True).print("error: GITHUB_WEBHOOK_SECRET is not set")
        raise typer.Exit(EXIT_USAGE)
    if not payload.is_file():
        Console(stderr=True).print(f"error: payload file not found: {payload}")
        raise typer.Exit(EXIT_USAGE)
    body = payload.read_bytes()
    try:
        json.loads(body)
    except ValueError:
        Console(stderr=True).print(f"error: {payload} is not JSON")
        raise typer.Exit(EXIT_USAGE) from None
    secret = settings.github_webhook_secret.get_secret_value().encode()
    signature = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": signature,
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/pr-council-replay",
    }
    try:
        response = httpx.post(url, content=body, headers=headers, timeout=30)
    except httpx.HTTPError as error:
        Console(stderr=True).print(f"error: cannot post to {url}: {error}")
        raise typer.Exit(EXIT_PROBLEMS) from None
    typer.echo(f"{response.status_code} {response.text}")
    raise typer.Exit(EXIT_OK if response.status_code < 400 else EXIT_PROBLEMS)
