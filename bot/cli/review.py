"""`council review`: the council on a local change, a diff file, or stdin."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from bot.cli.progress import ProgressView
from bot.cli.pullrequest import plan_pull_request
from bot.cli.runner import (
    EXIT_NO_QUORUM,
    EXIT_USAGE,
    ReviewPlan,
    advisory_json,
    dry_run_json,
    plan_review,
    print_dry_run,
    run_review,
)
from bot.council.advisory import Resolution
from bot.council.convene import ConveneError
from bot.logs import configure_logging
from bot.providers import ConfigurationError
from bot.review.local import DiffError, LocalChange, read_branch, read_diff_file
from bot.settings import Settings

NO_PROVIDER = (
    "No model provider is available, so this is a dry run. To convene the council set "
    "ANTHROPIC_API_KEY and/or OPENAI_API_KEY, or COUNCIL_MODELS with model references "
    "(anthropic:<model>, openai:<model>, <endpoint>:<model> with COUNCIL_ENDPOINTS, or "
    "openai-compatible:<model>@<base_url>), or start Ollama on 127.0.0.1:11434."
)


def review(
    base: Annotated[
        str | None,
        typer.Option(
            "--base", help="Review HEAD against this ref (default: the upstream, or main)."
        ),
    ] = None,
    diff: Annotated[
        str | None, typer.Option("--diff", help="Review a diff file; - for stdin.")
    ] = None,
    protocol: Annotated[
        str, typer.Option("--protocol", help="board, council, debate or quick.")
    ] = "board",
    question: Annotated[
        str | None, typer.Option("--question", help="The question to put to the council.")
    ] = None,
    models: Annotated[
        str | None, typer.Option("--models", help="Comma-separated model references.")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show seats, context and cost; call no model.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    pr: Annotated[
        str | None,
        typer.Option(
            "--pr",
            help="Review a pull request, OWNER/REPO#N (needs GITHUB_TOKEN); nothing is posted.",
        ),
    ] = None,
) -> None:
    """Convene the council on a change and print its advisory."""
    err = Console(stderr=True)
    settings = _settings(err)
    configure_logging(settings.log_level, json_lines=settings.log_json)
    if sum(x is not None for x in (base, diff, pr)) > 1:
        _fail(err, "use one of --base, --diff and --pr")
    refs = [m.strip() for m in (models or "").split(",") if m.strip()]
    try:
        if pr is not None:
            plan, head = asyncio.run(
                plan_pull_request(settings, pr, protocol=protocol, question=question, models=refs)
            )
            change = LocalChange(
                diff="", title=plan.title, description="", head_sha=head, source=pr
            )
        else:
            change = _read_change(base, diff, err)
            plan = asyncio.run(
                plan_review(settings, change, protocol=protocol, question=question, models=refs)
            )
    except (ConfigurationError, ConveneError, ValueError) as error:
        _fail(err, str(error))
    if not plan.models:
        err.print(NO_PROVIDER)
        dry_run = True
    if dry_run:
        _emit_dry_run(plan, as_json)
        raise typer.Exit(0)
    _run(settings, plan, change, as_json, err)


def _run(
    settings: Settings, plan: ReviewPlan, change: LocalChange, as_json: bool, err: Console
) -> None:
    view = ProgressView(err)
    try:
        with view:
            advisory, markdown = asyncio.run(
                run_review(
                    settings,
                    plan,
                    deliberation_id=str(uuid.uuid4()),
                    head_sha=change.head_sha,
                    on_progress=view.update,
                )
            )
    except (ConfigurationError, ConveneError) as error:
        _fail(err, str(error))
    if as_json:
        typer.echo(json.dumps(advisory_json(advisory, markdown), indent=2))
    else:
        typer.echo(markdown)
    if advisory.resolution == Resolution.NO_QUORUM:
        raise typer.Exit(EXIT_NO_QUORUM)


def _emit_dry_run(plan: ReviewPlan, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps(dry_run_json(plan), indent=2))
    else:
        print_dry_run(plan, Console())


def _read_change(base: str | None, diff: str | None, err: Console) -> LocalChange:
    try:
        return read_diff_file(diff) if diff else read_branch(base)
    except DiffError as error:
        _fail(err, str(error))


def _settings(err: Console) -> Settings:
    try:
        return Settings()
    except ValueError as error:
        _fail(err, f"invalid settings: {error}")


def _fail(err: Console, message: str) -> NoReturn:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    sys.stderr.flush()
    raise typer.Exit(EXIT_USAGE)
