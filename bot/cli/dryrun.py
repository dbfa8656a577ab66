"""Printing a dry run: the seats, the context, the planned calls and the estimate."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from bot.review.plan import ReviewPlan, prompt_preview


def emit(plan: ReviewPlan, output: str, *, show_prompts: bool) -> None:
    if output == "json":
        typer.echo(json.dumps(dry_run_json(plan, show_prompts=show_prompts), indent=2))
    else:
        print_dry_run(plan, Console(), show_prompts=show_prompts)


def dry_run_json(plan: ReviewPlan, *, show_prompts: bool = True) -> dict[str, Any]:
    prepared = plan.prepared
    found: dict[str, Any] = {
        "protocol": prepared.protocol,
        "dry_run": True,
        "compared": prepared.compared,
        "configuration": prepared.setup.describe(),
        "config_problems": prepared.setup.problems(),
        "models": prepared.models,
        "seats": [
            {
                "persona": s.persona_id,
                "name": s.name,
                "division": s.division,
                "model": s.model,
                "score": s.score,
                "lenses": list(s.lenses),
            }
            for s in plan.seats
        ],
        "notes": plan.notes,
        "context": {
            "tokens": prepared.context_tokens,
            "budget": prepared.budget,
            "included": prepared.included,
            "omitted": prepared.omitted,
            "text": prepared.context_text,
        },
        "board": prepared.board.model_dump(),
        "estimate": {
            "calls": len(plan.calls),
            "cost_usd": plan.estimate_cost_usd,
            "planned": [{"phase": c.phase, "seat": c.seat, "model": c.model} for c in plan.calls],
        },
    }
    if show_prompts:
        found["prompts"] = prompt_preview(plan)
    return found


def print_dry_run(plan: ReviewPlan, console: Console, *, show_prompts: bool) -> None:
    prepared = plan.prepared
    console.print(f"[bold]Dry run[/] - protocol {prepared.protocol}: {prepared.topic}")
    table = Table(title="Seats")
    for column in ("persona", "division", "model", "score"):
        table.add_column(column)
    for s in plan.seats:
        table.add_row(s.name, s.division, s.model, "-" if s.score is None else f"{s.score:g}")
    console.print(table)
    for note in plan.notes:
        console.print(f"note: {note}", highlight=False)
    console.print(
        f"Context: {prepared.context_tokens:,} tokens of a {prepared.budget:,}-token budget; "
        f"{len(prepared.included)} file(s) included, {len(prepared.omitted)} left out."
    )
    for item in prepared.omitted:
        console.print(f"  left out: {item}", highlight=False)
    cost = (
        f"estimated cost ${plan.estimate_cost_usd:.4f}"
        if plan.estimate_cost_usd is not None
        else "no model to price"
    )
    console.print(f"Would make about {len(plan.calls)} model calls; {cost}.")
    phases: dict[str, list[str]] = {}
    for call in plan.calls:
        phases.setdefault(call.phase, []).append(f"{call.seat} ({call.model or 'no model'})")
    for phase, who in phases.items():
        console.print(f"  {phase}: {', '.join(who)}", highlight=False)
    if show_prompts:
        preview = prompt_preview(plan)
        console.print("\n[bold]Prompts[/] (the packed context is sent between these two):")
        console.print(f"--- system: rules ---\n{preview['system']}", highlight=False, markup=False)
        console.print(f"--- first seat ---\n{preview['seat']}", highlight=False, markup=False)
