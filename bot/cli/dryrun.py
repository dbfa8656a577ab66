"""Printing a dry run: what is compared, the seats, the context, the planned calls and the
estimate (prompts only when asked), and last what to do to run it for real."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bot.review.plan import PlannedCall, ReviewPlan, SeatPreview, prompt_preview

NO_MODEL_COST = "no model: cost not estimated"
RUN_FOR_REAL = "To convene the council, run the same command without --dry-run."


def emit(plan: ReviewPlan, output: str, *, show_prompts: bool, to_run: str = RUN_FOR_REAL) -> None:
    """`to_run` is the last thing said: what to do (or set) to run the review for real."""
    if output == "json":
        found = dry_run_json(plan, show_prompts=show_prompts)
        found["to_run"] = to_run
        typer.echo(json.dumps(found, indent=2))
        return
    console = Console(highlight=False, emoji=False)
    if console.is_terminal:
        print_dry_run(plan, console, show_prompts=show_prompts, to_run=to_run)
        return
    with console.capture() as captured:  # a file or a pipe: plain lines, no trailing padding
        print_dry_run(plan, console, show_prompts=show_prompts, to_run=to_run)
    typer.echo("\n".join(line.rstrip() for line in captured.get().splitlines()))


def dry_run_json(plan: ReviewPlan, *, show_prompts: bool = True) -> dict[str, Any]:
    prepared = plan.prepared
    # `board`: the repository's board settings; `debate`: the debate's plan, when the
    # protocol debates.
    found: dict[str, Any] = dict(
        protocol=prepared.protocol,
        dry_run=True,
        compared=prepared.compared,
        configuration=prepared.setup.describe(),
        config_problems=prepared.setup.problems(),
        models=prepared.models,
        seats=[
            {
                "persona": s.persona_id,
                "name": s.name,
                "division": s.division,
                "model": s.model,
                "score": s.score,
                "lenses": list(s.lenses),
                # Sent only where the model accepts one; None: no temperature is sent.
                "temperature": s.temperature,
                "strategy": s.strategy,
            }
            for s in plan.seats
        ],
        notes=plan.notes,
        context={
            "tokens": prepared.context_tokens,
            "budget": prepared.budget,
            "included": prepared.included,
            "omitted": prepared.omitted,
            "text": prepared.context_text,
        },
        board=prepared.board.model_dump(),
        estimate={
            "calls": len(plan.calls),
            "cost_usd": plan.estimate_cost_usd,
            "unpriced_models": plan.unpriced,
            "queues": plan.queues,
            "planned": [{"phase": c.phase, "seat": c.seat, "model": c.model} for c in plan.calls],
        },
    )
    if plan.debate is not None:
        found.update(
            debate={
                "mode": plan.debate.mode,
                "max_cycles": plan.debate.rule.max_cycles,
                "judge_model": plan.debate.judge_model,
                "outside_model": plan.debate.outside_model,
                "committee": [
                    {"panelist": r.panelist, "lens": r.lens, "stance": r.stance, "model": r.model}
                    for r in plan.debate.committee
                ],
            }
        )
    if show_prompts:
        found["prompts"] = prompt_preview(plan)
    return found


def _model(plan: ReviewPlan, model: str) -> str:
    """A seat's model, or "-" where none is available (never a placeholder as if real)."""
    if not plan.prepared.models or not model or model.startswith("("):
        return "-"
    return model


def cost_phrase(plan: ReviewPlan) -> str:
    if plan.estimate_cost_usd is None or not plan.prepared.models:
        return NO_MODEL_COST
    unknown = f"unknown for {', '.join(plan.unpriced)} (no price known)" if plan.unpriced else ""
    if plan.estimate_cost_usd == 0:
        if unknown:
            return f"estimated cost: {unknown}"
        return "estimated cost: nothing (the models are free or priced at $0)"
    more = f" + {unknown}" if unknown else ""
    return f"estimated cost ${plan.estimate_cost_usd:.4f}{more}"


def _varies(seat: SeatPreview) -> str:
    """What sets a seat's answers apart beyond its persona and model: a sample's reviewing
    strategy, a temperature (only one that is sent)."""
    parts = [f"strategy: {seat.strategy}"] if seat.strategy else []
    if seat.temperature is not None:
        parts.append(f"temperature {seat.temperature}")
    return "; ".join(parts) or "-"


def _who(plan: ReviewPlan, call: PlannedCall) -> str:
    """Who makes a call; with its model where the seat table does not say it (the chair)."""
    model = _model(plan, call.model)
    seated = any(s.name == call.seat for s in plan.seats)
    return call.seat if model == "-" or seated else f"{call.seat} ({model})"


def _seat_table(plan: ReviewPlan) -> Table:
    table = Table(title="Seats", title_justify="left", box=box.SIMPLE_HEAD, header_style="bold")
    varied = any(s.strategy or s.temperature is not None for s in plan.seats)
    columns = ("persona", "division", "model", "score") + (("varies by",) if varied else ())
    for column in columns:
        table.add_column(column, no_wrap=column in ("model", "score"), overflow="fold")
    for s in plan.seats:
        row: list[Text | str] = [
            Text(s.name),
            Text(s.division),
            Text(_model(plan, s.model)),
            "-" if s.score is None else f"{s.score:g}",
        ]
        if varied:
            row.append(Text(_varies(s)))
        table.add_row(*row)
    return table


def committee_table(plan: ReviewPlan) -> Table:
    """A debate's committee: each panelist's lens, stance and model, then the judge and
    the outside opinion (bot.review.debate_plan)."""
    debate = plan.debate
    assert debate is not None
    table = Table(
        title=f"Committee (debate mode {debate.mode})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        header_style="bold",
    )
    for column in ("panelist", "lens", "stance", "model"):
        table.add_column(column, no_wrap=column in ("panelist", "model"), overflow="fold")
    for row in debate.committee:
        table.add_row(Text(row.panelist), Text(row.lens), Text(row.stance), _model(plan, row.model))
    if debate.judge_model is not None:
        table.add_row("Step-back judge", "meta-level judge", "-", _model(plan, debate.judge_model))
    if debate.rule.outside_opinion:
        outside = debate.outside_model
        table.add_row(
            "Outside opinion",
            "independent",
            "-",
            _model(plan, outside) if outside else "skipped (a single model)",
        )
    return table


def print_dry_run(
    plan: ReviewPlan, console: Console, *, show_prompts: bool, to_run: str = RUN_FOR_REAL
) -> None:
    prepared = plan.prepared

    def say(text: str, style: str = "") -> None:
        console.print(Text(text, style=style), soft_wrap=True)

    say(f"Dry run · protocol {prepared.protocol} · {prepared.compared}", "bold")
    say(prepared.setup.describe())
    for problem in prepared.setup.problems():
        say(f"config problem: {problem}", "yellow")
    say(f"Question: {prepared.topic}")
    say(f"Models: {', '.join(prepared.models) if prepared.models else 'none available'}")
    if plan.seats:
        console.print(_seat_table(plan))
    if plan.debate is not None:
        console.print(committee_table(plan))
    for note in plan.notes:
        say(f"note: {note}", "yellow" if note.startswith("Warning") else "")
    say(
        f"Context: {prepared.context_tokens:,} tokens of a {prepared.budget:,}-token budget; "
        f"{len(prepared.included)} file(s) included, {len(prepared.omitted)} left out."
    )
    for item in prepared.omitted:
        say(f"  left out: {item}")
    say(
        f"Would make at most {len(plan.calls)} model calls (re-asks of an incomplete answer "
        f"aside); {cost_phrase(plan)}."
    )
    for queue in plan.queues:
        say(f"queue: {queue}")
    phases: dict[str, list[str]] = {}
    for call in plan.calls:
        phases.setdefault(call.phase, []).append(_who(plan, call))
    for phase, who in phases.items():
        say(f"  {phase}: {', '.join(who)}")
    if show_prompts:
        preview = prompt_preview(plan)
        say("\nPrompts (the packed context is sent between these two):", "bold")
        say(f"--- system: rules ---\n{preview['system']}")
        say(f"--- first seat ---\n{preview['seat']}")
    else:
        say("(--show-prompts prints the prompts too.)", "dim")
    say("")
    say(to_run, "bold")
