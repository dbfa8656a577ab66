"""`council agents`: the persona catalog and, for a diff, the board it would seat."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from bot.cli.usage import fail, settings_or_fail
from bot.council.protocols.roles import SEATING

if TYPE_CHECKING:
    from bot.council.personas import Catalog
    from bot.review.assemble import PreparedReview


def agents(
    diff: Annotated[
        str | None,
        typer.Option("--diff", help="Score the catalog against this diff (- for stdin)."),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="Score the catalog against HEAD compared with this ref, its commit subjects "
            "read as a pull request's (as `council review --base`).",
        ),
    ] = None,
    explain_scores: Annotated[
        bool, typer.Option("--explain", help="Show every point each persona scored and why.")
    ] = False,
    extra: Annotated[
        list[Path] | None,
        typer.Option("--agents-dir", help="Extra persona directory that overrides by id."),
    ] = None,
    size: Annotated[
        int | None, typer.Option("--size", help="Board size (default: board.default_size).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List the persona catalog; with --diff or --base, score it and show the board.

    The board is the one `council review --dry-run --protocol board` seats for the same
    change (the same preparation and convening, bot/review/plan.py `plan_review`): the
    working tree's `.github/council.yml` (pins, board size) and personas apply, and the PR's
    words are what the change carries - a diff file has none, `--base` reads the commit
    subjects."""
    # Imported here, not at the top: `council --help` loads this module too.
    from bot.council.personas import load_catalog
    from bot.council.scoring import explain, score_catalog

    console = Console()
    err = Console(stderr=True)
    if diff is None and base is None:
        catalog = load_catalog(extra or [])
        for issue in catalog.issues:
            err.print(f"warning: {issue}", highlight=False)
        _list(catalog, console, as_json)
        return
    if diff is not None and base is not None:
        fail(err, "--diff and --base choose the change two ways: give one")
    prepared, ids, notes = asyncio.run(_board(diff, base, extra or [], size, err))
    signals = prepared.signals
    scored = score_catalog(prepared.setup.catalog, signals)  # no records, as the dry run
    if as_json:
        scores = [
            {
                "persona": s.id,
                "division": s.division,
                "semantic": s.semantic,
                "heuristic": s.heuristic,
                "metadata": s.metadata,
                "memory": s.memory,
                "total": s.total,
                "missing_evidence": s.missing_evidence,
            }
            for s in scored
        ]
        found = {"signals": signals.model_dump(mode="json"), "scores": scores}
        typer.echo(json.dumps(dict(found, board=ids, notes=notes), indent=2))
        return
    console.print(
        f"Signals: languages {', '.join(signals.languages) or '-'}; areas "
        f"{', '.join(signals.areas) or '-'}",
        highlight=False,
    )
    for line in explain(scored, details=explain_scores):
        typer.echo(line)
    console.print(f"\nBoard: {', '.join(ids)}", highlight=False)
    for note in notes:
        console.print(f"note: {note}", highlight=False)


async def _board(
    diff: str | None, base: str | None, extra: list[Path], size: int | None, err: Console
) -> tuple[PreparedReview, list[str], list[str]]:
    """The change prepared and the board convened as `council review --dry-run --protocol
    board` does: the prepared review, the seated ids and the board's notes."""
    from dataclasses import replace

    from bot.council.convene import ConveneError
    from bot.council.personas import load_catalog
    from bot.review.assemble import ReviewError, ReviewOptions, prepare_review
    from bot.review.local import DiffError, read_branch, read_diff_file, work_tree_root
    from bot.review.plan import plan_review
    from bot.review.setup import local_setup
    from bot.review.sources import LocalSource

    settings = settings_or_fail(err)
    try:
        change = read_diff_file(diff) if diff is not None else read_branch(base)
        setup = local_setup(settings, root=work_tree_root())
        if extra:
            catalog = setup.catalog.overridden_by(load_catalog(extra, builtin=False))
            setup = replace(setup, catalog=catalog)
        for issue in setup.catalog.issues:
            err.print(f"warning: {issue}", highlight=False)
        options = ReviewOptions(protocol=SEATING, size=size)
        prepared = await prepare_review(LocalSource(change), setup, settings, options, available=[])
        plan = await plan_review(prepared, settings)
    except (ConveneError, DiffError, ReviewError) as error:
        fail(err, str(error))
    notes = [n for n in plan.notes if n not in prepared.notes]  # the board's, not the source's
    return prepared, [s.persona_id for s in plan.seats], notes


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
