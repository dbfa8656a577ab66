"""`council history`, `council show` and `council stats`: the local store read back.

They read the store `council review` writes (`DATABASE_URL`; by default SQLite under the
XDG state directory). Only typer, rich and the standard library are imported here; the
store, the renderers and (for `stats --plot` alone) matplotlib inside the commands.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.table import Table

from bot.cli.usage import fail as _fail
from bot.cli.usage import settings_or_fail as _settings

if TYPE_CHECKING:
    from bot.council.advisory import Advisory
    from bot.council.ledger import LedgerEvent
    from bot.settings import Settings
    from bot.store.deliberations import DeliberationRecord
    from bot.store.history import UsageStats

ShowFormat = Literal["markdown", "json", "html"]

INSTALL_PLOT = (
    "--plot needs matplotlib, which is not installed: pip install 'pr-council[plot]' "
    "(or pip install matplotlib)"
)


def history(
    repo: Annotated[
        str | None,
        typer.Option("--repo", help="Only this repository (OWNER/REPO; a path for local runs)."),
    ] = None,
    pr: Annotated[int | None, typer.Option("--pr", min=1, help="Only this pull request.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many.")] = 50,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array.")] = False,
) -> None:
    """List past deliberations, newest first."""
    err = Console(stderr=True)
    records = asyncio.run(_history(_settings(err), repo, pr, limit))
    if as_json:
        typer.echo(json.dumps([record_json(r) for r in records], indent=2))
        return
    if not records:
        err.print("No deliberation recorded" + (" matching that." if repo or pr else "."))
        return
    table = Table(title=f"Deliberations ({len(records)}, newest first)")
    for column in ("id", "repo#pr", "protocol", "resolution", "head", "created", "cost"):
        table.add_column(column, justify="right" if column == "cost" else "left", no_wrap=True)
    for r in records:
        table.add_row(
            r.id,
            _where(r.repo, r.pr_number),
            r.protocol,
            r.resolution or r.status.value,
            r.head_sha[:12],
            r.created_at.strftime("%Y-%m-%d %H:%M"),
            f"${r.cost_usd:.4f}",
        )
    _out().print(table)


def show(
    deliberation_id: Annotated[str, typer.Argument(metavar="ID", help="A deliberation id.")],
    output: Annotated[
        ShowFormat,
        typer.Option(
            "--format",
            help="markdown (the advisory as the PR comment renders it), json (the advisory, "
            "the record and the ledger's events) or html (the whole transcript as a page).",
        ),
    ] = "markdown",
) -> None:
    """Show one deliberation: its advisory, or its whole record."""
    err = Console(stderr=True)
    loaded = asyncio.run(_load(_settings(err), deliberation_id))
    if loaded is None:
        _fail(err, f"no deliberation with id {deliberation_id!r} (see `council history`)")
    record, advisory, events = loaded
    if output == "json":
        typer.echo(json.dumps(show_json(record, advisory, events), indent=2))
    elif output == "html":
        from bot.render.transcript import transcript_html

        typer.echo(transcript_html(record, advisory, events), nl=False)
    else:
        if advisory is None:
            _fail(err, f"deliberation {record.id} has no advisory stored (try --format html)")
        from bot.render import render_comment

        typer.echo(render_comment(advisory, repo=record.repo if record.pr_number else None))


def stats(
    repo: Annotated[
        str | None, typer.Option("--repo", help="Only this repository (OWNER/REPO).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="YYYY-MM-DD", help="Only deliberations from this day."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", metavar="FILE.png", help="Also draw the cost by day (matplotlib)."),
    ] = None,
) -> None:
    """Usage figures: per persona, cost by day and repository, protocols, resolutions."""
    err = Console(stderr=True)
    start = _day(err, since)
    if plot is not None and not matplotlib_installed():
        _fail(err, INSTALL_PLOT)
    figures = asyncio.run(_stats(_settings(err), repo, start))
    if as_json:
        typer.echo(json.dumps(figures.model_dump(mode="json"), indent=2))
    else:
        print_stats(figures, _out())
    if plot is not None:
        plot_cost_by_day(figures, plot)
        err.print(f"council: cost by day drawn in {plot}", highlight=False, markup=False)


# --- the store ------------------------------------------------------------------------


async def _history(
    settings: Settings, repo: str | None, pr: int | None, limit: int
) -> list[DeliberationRecord]:
    from bot.store.db import Database
    from bot.store.history import deliberation_history

    async with Database(settings.database_url) as db:
        return await deliberation_history(db, repo=repo, pr=pr, limit=limit)


async def _load(
    settings: Settings, deliberation_id: str
) -> tuple[DeliberationRecord, Advisory | None, list[LedgerEvent]] | None:
    from bot.store.db import Database
    from bot.store.history import load_transcript

    async with Database(settings.database_url) as db:
        return await load_transcript(db, deliberation_id)


async def _stats(settings: Settings, repo: str | None, since: date | None) -> UsageStats:
    from bot.store.db import Database
    from bot.store.history import usage_stats

    async with Database(settings.database_url) as db:
        return await usage_stats(db, repos=[repo] if repo else None, since=since)


# --- output ---------------------------------------------------------------------------


def record_json(record: DeliberationRecord) -> dict[str, Any]:
    """A record without its advisory's JSON text (`show --format json` gives it parsed)."""
    return record.model_dump(mode="json", exclude={"advisory_json"})


def show_json(
    record: DeliberationRecord, advisory: Advisory | None, events: list[LedgerEvent]
) -> dict[str, Any]:
    return {
        "record": record_json(record),
        "advisory": advisory.model_dump(mode="json") if advisory is not None else None,
        "events": [e.model_dump(mode="json") for e in events],
    }


def print_stats(figures: UsageStats, console: Console) -> None:
    scope = ", ".join(figures.repos) if figures.repos is not None else "every repository"
    since = f" since {figures.since.isoformat()}" if figures.since else ""
    console.print(
        f"{figures.deliberations} deliberations of {scope}{since}, "
        f"${figures.total_cost_usd:.4f} in all.",
        markup=False,
    )
    if figures.truncated:
        console.print("Only the newest deliberations were counted.", markup=False)
    personas = Table(title="Per persona")
    columns = ("persona", "reviews", "closed", "merged", "findings", "addressed", "held up")
    for column in (*columns, "outcomes scored by"):
        personas.add_column(column, justify="right" if column in columns[1:] else "left")
    for p in figures.personas:
        held = f"{p.held_up}/{p.outcomes}" if p.outcomes else "-"
        personas.add_row(
            p.persona_id,
            *(str(n) for n in (p.reviews, p.closed, p.merged)),
            *(str(n) for n in (p.findings_raised, p.findings_addressed)),
            held,
            scored_by(p.bases) if p.outcomes else "-",
        )
    by_day = Table(
        title="Cost by day (UTC)",
        caption="deliberations: by the day they started",
    )
    for column in ("day", "cost", "deliberations"):
        by_day.add_column(column, justify="left" if column == "day" else "right")
    for d in figures.cost_by_day:
        by_day.add_row(d.day.isoformat(), f"${d.cost_usd:.4f}", str(d.deliberations))
    by_repo = Table(title="Cost by repository")
    for column in ("repository", "cost", "deliberations"):
        by_repo.add_column(column, justify="left" if column == "repository" else "right")
    for r in figures.cost_by_repo:
        by_repo.add_row(r.repo, f"${r.cost_usd:.4f}", str(r.deliberations))
    counts = Table(title="Protocols and resolutions")
    for column in ("", "name", "deliberations"):
        counts.add_column(column, justify="right" if column == "deliberations" else "left")
    for kind, found in (("protocol", figures.protocols), ("resolution", figures.resolutions)):
        for name, n in found.items():
            counts.add_row(kind, name, str(n))
    for table in (personas, by_day, by_repo, counts):
        console.print(table)


def scored_by(bases: dict[str, int]) -> str:
    """How a persona's outcome records were scored (`bot.review.outcomes`), every basis
    named: "vote 4, assessment 6, finding addressed 2, legacy 0"."""
    return ", ".join(f"{basis.replace('-', ' ')} {n}" for basis, n in bases.items())


def matplotlib_installed() -> bool:
    from importlib.util import find_spec

    return find_spec("matplotlib") is not None


def plot_cost_by_day(figures: UsageStats, path: Path) -> None:
    """A bar chart of the cost by day, as a PNG; matplotlib is imported here only."""
    import matplotlib

    matplotlib.use("Agg")  # no display: draw to a file
    import matplotlib.pyplot as plt

    days = [d.day for d in figures.cost_by_day]
    costs = [d.cost_usd for d in figures.cost_by_day]
    fig, ax = plt.subplots(figsize=(8, 4), dpi=100)
    try:
        ax.bar(days, costs, color="#0969da")  # type: ignore[arg-type]
        ax.set_title("Council cost by day (UTC)")
        ax.set_ylabel("USD")
        if not days:
            ax.text(0.5, 0.5, "no cost recorded", ha="center", va="center", transform=ax.transAxes)
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(path, format="png")
    finally:
        plt.close(fig)


# --- helpers --------------------------------------------------------------------------


def _out() -> Console:
    """stdout; a pipe or a file gets wide lines, so no id or name is cut short."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


def _where(repo: str, pr_number: int | None) -> str:
    return f"{repo}#{pr_number}" if pr_number is not None else repo


def _day(err: Console, value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        _fail(err, f"--since {value!r}: write a day as YYYY-MM-DD")
