"""`council agents`: the persona catalog and, for a diff, the board it would seat."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from bot.cli.exits import EXIT_USAGE

if TYPE_CHECKING:
    from bot.review import Catalog


def agents(
    diff: Annotated[
        str | None,
        typer.Option("--diff", help="Score the catalog against this diff (- for stdin)."),
    ] = None,
    explain_scores: Annotated[
        bool, typer.Option("--explain", help="Show every point each persona scored and why.")
    ] = False,
    extra: Annotated[
        list[Path] | None,
        typer.Option("--agents-dir", help="Extra persona directory that overrides by id."),
    ] = None,
    size: Annotated[int, typer.Option("--size", help="Board size.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the persona catalog; with --diff, score it and show the board."""
    # Imported here, not at the top: `council --help` loads this module too.
    from bot.review import load_catalog

    console = Console()
    catalog = load_catalog(extra or [])
    for issue in catalog.issues:
        Console(stderr=True).print(f"warning: {issue}", highlight=False)
    if diff is None:
        _list(catalog, console, as_json)
        return
    from bot.review import DEFAULT_BUDGET, explain, score_catalog, select_board
    from bot.review.inputs import council_inputs
    from bot.review.local import DiffError, read_diff_file
    from bot.review.localrepo import build_local_context

    try:
        change = read_diff_file(diff)
    except DiffError as error:
        Console(stderr=True).print(f"error: {error}")
        raise typer.Exit(EXIT_USAGE) from None
    built = asyncio.run(build_local_context(change, DEFAULT_BUDGET))
    _, signals, _ = council_inputs(built, "Review this pull request")
    scored = score_catalog(catalog, signals)
    board = select_board(scored, size=size, min_size=min(3, size), languages=signals.languages)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "signals": signals.model_dump(mode="json"),
                    "scores": [
                        {
                            "persona": s.id,
                            "division": s.division,
                            "semantic": s.semantic,
                            "heuristic": s.heuristic,
                            "metadata": s.metadata,
                            "memory": s.memory,
                            "total": s.total,
                        }
                        for s in scored
                    ],
                    "board": board.ids,
                    "notes": list(board.notes),
                },
                indent=2,
            )
        )
        return
    console.print(
        f"Signals: languages {', '.join(signals.languages) or '-'}; areas "
        f"{', '.join(signals.areas) or '-'}",
        highlight=False,
    )
    for line in explain(scored, details=explain_scores):
        typer.echo(line)
    console.print(f"\nBoard: {', '.join(board.ids)}", highlight=False)
    for note in board.notes:
        console.print(f"note: {note}", highlight=False)


def _list(catalog: Catalog, console: Console, as_json: bool) -> None:
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {"id": p.id, "name": p.name, "division": p.division, "lenses": list(p.lenses)}
                    for p in catalog.personas.values()
                ],
                indent=2,
            )
        )
        return
    table = Table(title=f"Persona catalog ({len(catalog)} personas)")
    for column in ("id", "division", "lenses"):
        table.add_column(column)
    for division, personas in catalog.by_division().items():
        for p in personas:
            table.add_row(p.id, division, ", ".join(p.lenses))
    console.print(table)
