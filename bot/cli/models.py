"""`council models check`: one tiny structured call per configured model, and what a
seat call to each reserves against the cost caps; for a local server, its speed, what a seat
call takes there and the deadline it gets."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from bot.cli.modelcheck import CheckResult

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
    """Make one tiny structured call to each model and report what worked, and what a
    seat call to it reserves against the cost caps (the p95 of its recent answers, or the
    worst case for a model never seen). A model on a local server is timed too: its prompt
    and output tokens per second, what a seat call takes there, the deadline it gets, and
    the COUNCIL_ENDPOINTS entry that sets the speed."""
    # Imported here, not at the top: `council --help` loads this module too.
    from bot.cli.modelcheck import check_models
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


def print_table(results: list[CheckResult], console: Console) -> None:
    table = Table(title="Model check")
    columns = (
        "model",
        "ok",
        "structured",
        "latency",
        "context",
        "output",
        "price",
        "reserves",
        "speed (tokens/s)",
        "error",
    )
    for column in columns:
        table.add_column(column)
    for r in results:
        table.add_row(
            r.model,
            "yes" if r.ok else ("NO" if r.reachable else "NO (unreachable)"),
            r.structured_mode or "-",
            f"{r.latency_ms} ms" if r.latency_ms is not None else "-",
            f"{r.context_window:,}" if r.context_window else "-",
            f"{r.max_output_tokens:,}" if r.max_output_tokens else "-",
            _price(r),
            _reserves(r),
            _speed(r),
            r.error or "",
        )
    console.print(table)
    for r in results:
        for line in seat_call_lines(r):
            console.print(line, highlight=False, markup=False, soft_wrap=True)


def _speed(result: CheckResult) -> str:
    """ "prompt 62.3, output 5.1" (measured now), "-" where not measured."""
    if result.prompt_tokens_per_s is None or result.output_tokens_per_s is None:
        return "-" if result.speed_error is None else "not measured"
    return f"prompt {_rate(result.prompt_tokens_per_s)}, output {_rate(result.output_tokens_per_s)}"


def _about(result: CheckResult) -> str:
    """An answer of the whole output limit is the longest a call can take."""
    return "up to" if result.seat_answer_tokens == result.seat_max_tokens else "about"


def _rate(value: float) -> str:
    """62.3, 5.1, 1234."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def seat_call_lines(result: CheckResult) -> list[str]:
    """What a typical seat call to a local model takes and the deadline it gets, the entry
    that sets the speed, and the warnings; nothing for a model whose speed is not known."""
    lines: list[str] = []
    if result.speed_error is not None:
        lines.append(f"{result.model}: speed {result.speed_error}")
    if result.seat_call_s is None or result.seat_prompt_tokens is None:
        return lines
    context = result.seat_context_tokens or 0
    lines.append(
        f"{result.model}: a seat call ({result.seat_prompt_tokens:,} prompt tokens: the "
        f"{context:,}-token context budget and {result.seat_prompt_tokens - context:,} of "
        f"rules, brief and schema; a {result.seat_answer_tokens or 0:,}-token answer, "
        f"{result.seat_answer_basis}) takes {_about(result)} {result.seat_call_s:,.0f} s; it "
        f"gets {result.seat_deadline}."
    )
    if result.endpoint_entry is not None:
        entry = json.dumps(result.endpoint_entry)[1:-1]
        lines.append(f"  its entry in COUNCIL_ENDPOINTS, with the speed measured: {entry}")
    lines += [f"  warning: {w}" for w in result.warnings]
    return lines


def _reserves(result: CheckResult) -> str:
    """What a seat call reserves: "p95 812 tokens, $0.1321" (the p95 of the model's recent
    answers) or "worst case (never seen), $0.2451"."""
    if result.reserve_basis is None:
        return "-"
    if result.p95_output_tokens is None:
        held = result.reserve_basis
    else:
        held = f"p95 {result.p95_output_tokens:,} tokens"
    if result.reserve_usd is None:
        return held
    return f"{held}, ${result.reserve_usd:.4f}"


def _price(result: CheckResult) -> str:
    """Where the price came from, and the price: "$2.50/$15.00 per M (table)"."""
    if result.price_source is None:
        return "-"
    if result.price_source == "unknown":
        return "unknown"
    if result.price_source == "local":
        return "free (local)"
    return f"${result.input_price:.2f}/${result.output_price:.2f} per M ({result.price_source})"
