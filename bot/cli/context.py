"""`council context`: what the council would read for a change, and what was left out."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from bot.cli.exits import EXIT_USAGE

if TYPE_CHECKING:
    from bot.context import BuiltContext


def context(
    base: Annotated[
        str | None,
        typer.Option("--base", help="Build for HEAD against this ref (default: upstream/main)."),
    ] = None,
    diff: Annotated[
        str | None, typer.Option("--diff", help="Build for a diff file; - for stdin.")
    ] = None,
    budget_tokens: Annotated[
        int | None,
        typer.Option(
            "--budget-tokens", min=1, help="Token budget (default: COUNCIL_CONTEXT_TOKENS)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    show: Annotated[
        bool, typer.Option("--show", help="Print the context exactly as the seats read it.")
    ] = False,
) -> None:
    """Show the packed context for a change: sections, what was left out, signals."""
    # Imported here, not at the top: `council --help` loads this module too.
    from bot.review.local import DiffError, read_branch, read_diff_file
    from bot.review.localrepo import build_local_context

    err = Console(stderr=True)
    if base and diff:
        err.print("[bold red]error:[/] use either --base or --diff, not both")
        raise typer.Exit(EXIT_USAGE)
    if show and as_json:
        err.print("[bold red]error:[/] use either --show or --json, not both")
        raise typer.Exit(EXIT_USAGE)
    try:
        change = read_diff_file(diff) if diff else read_branch(base)
    except DiffError as error:
        err.print(f"[bold red]error:[/] {error}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from None
    budget = budget_tokens or _default_budget()
    built = asyncio.run(build_local_context(change, budget))
    if as_json:
        typer.echo(json.dumps(context_json(built), indent=2))
    elif show:
        typer.echo(seats_text(built))
    else:
        print_context(built, Console())


def _default_budget() -> int:
    from bot.context import DEFAULT_BUDGET
    from bot.settings import Settings

    try:
        return Settings().context_tokens
    except ValueError:
        return DEFAULT_BUDGET  # a broken environment should not stop a look at the context


def seats_text(built: BuiltContext) -> str:
    """The context block every seat reads (bot/review/inputs.py `seats_context`)."""
    from bot.review.inputs import seats_context

    return seats_context(built)


def context_json(built: BuiltContext) -> dict[str, Any]:
    """The stable shape other tools read. Each section: `kind`, `path` (None for the
    description), `why`, `tokens`, and `lines`: the head-side lines of `path` it shows as
    inclusive runs [[first, last], ...] (a diff: its added and context lines; [] for the
    description and a directory listing)."""
    return {
        "tokens": built.tokens,
        "budget": built.budget,
        "usable": built.usable,
        "sections": [
            {
                "kind": s.kind,
                "path": s.path,
                "why": s.why,
                "tokens": s.tokens,
                "lines": [[first, last] for first, last in s.lines.get(s.path or "", [])],
            }
            for s in built.sections
        ],
        "omitted": [o.model_dump() for o in built.omitted],
        "signals": built.signals.model_dump(mode="json"),
        "redactions": built.redactions,
        "redaction_kinds": built.redaction_kinds,
    }


def print_context(built: BuiltContext, console: Console) -> None:
    table = Table(title=f"Context: {built.tokens:,} of {built.usable:,} usable tokens")
    for column in ("section", "path", "why", "tokens"):
        table.add_column(column, justify="right" if column == "tokens" else "left")
    for s in built.sections:
        table.add_row(s.kind, s.path or "-", s.why, f"{s.tokens:,}")
    console.print(table)
    console.print(
        f"Budget {built.budget:,} tokens, {built.budget - built.usable:,} kept free for the "
        "estimator's error.",
        highlight=False,
    )
    if built.omitted:
        console.print("[bold]Left out[/]")
        for o in built.omitted:
            console.print(f"  {o.path}: {o.reason}", highlight=False, markup=False)
    _print_signals(built, console)
    kinds = ", ".join(f"{k} {n}" for k, n in built.redaction_kinds.items())
    console.print(f"Redactions: {built.redactions}" + (f" ({kinds})" if kinds else ""))


def _print_signals(built: BuiltContext, console: Console) -> None:
    s = built.signals
    rows = [
        ("languages", ", ".join(s.languages)),
        ("frameworks", ", ".join(s.frameworks)),
        ("areas", ", ".join(s.areas)),
        ("dominant area", s.dominant_area or ""),
        ("artifact types", ", ".join(s.artifact_types)),
        ("size", f"{s.files_changed} files, +{s.lines_added} -{s.lines_deleted}, "
                 f"{len(s.directories)} directories"),
        ("source without tests", "yes" if s.source_without_tests else "no"),
        ("dependencies", ", ".join(f"{d.name} {d.old or '(new)'} -> {d.new or '(removed)'}"
                                   for d in s.dependencies)),
        ("risky patterns", ", ".join(f"{r.kind} at {r.path}:{r.line}" for r in s.risky_patterns)),
        ("Trojan Source", ", ".join(f"{t.path}:{t.line}" for t in s.trojan_source)),
        ("not UTF-8", ", ".join(s.non_utf8_files)),
        ("binary", ", ".join(s.binary_files)),
    ]  # fmt: skip
    console.print("[bold]Signals[/]")
    for name, value in rows:
        if value:
            console.print(f"  {name}: {value}", highlight=False, markup=False)
