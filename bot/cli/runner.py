"""Plan and run a review: the composition of context, council, store and render for the CLI.

`plan_review` needs no model (it is the dry run); `run_review` convenes the council.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.config import CONFIG_PATH, load_repo_config
from bot.context import BuiltContext
from bot.council import prompts
from bot.council.advisory import Advisory
from bot.council.engine import PROTOCOLS, BoardConfig, DeliberationRequest, Engine, ProgressEvent
from bot.council.personas import Catalog, load_catalog
from bot.council.prompts import render_context
from bot.council.scoring import (
    ReviewSignals,
    score_catalog,
    select_board,
)
from bot.council.seats import neutral_seat, seat_from_persona
from bot.providers import CapabilityTable, ProviderRegistry, cost_usd
from bot.review.inputs import DEFAULT_TOPIC, context_budget, council_inputs, track_records
from bot.render import conclusion_for, render_comment
from bot.review.local import LocalChange
from bot.review.localrepo import build_local_context
from bot.settings import Settings
from bot.store.db import Database
from bot.store.ledger import SqlLedger
from bot.store.records import (
    DeliberationStatus,
    create_deliberation,
    set_status,
)
from bot.tokens import default_estimator

EXIT_USAGE = 2
EXIT_NO_QUORUM = 3
OUTPUT_ESTIMATE = 1200


@dataclass
class SeatPreview:
    persona_id: str
    name: str
    division: str
    model: str
    score: float | None
    reasons: list[str] = field(default_factory=list)


@dataclass
class ReviewPlan:
    protocol: str
    topic: str
    models: list[str]
    title: str
    context_text: str
    context_tokens: int
    budget: int
    included: list[str]
    omitted: list[str]
    signals: ReviewSignals
    seats: list[SeatPreview]
    notes: list[str]
    calls: list[PlannedCall]
    estimate_cost_usd: float
    board: BoardConfig
    catalog: Catalog


Source = Callable[[int], Awaitable[tuple[BuiltContext, str, list[str]]]]


async def plan_review(
    settings: Settings,
    change: LocalChange,
    *,
    protocol: str,
    question: str | None,
    models: list[str],
) -> ReviewPlan:
    """Plan a review of a local change (a branch, a diff file, stdin)."""

    ignore = _local_ignore_globs(settings) if change.head_sha else []

    async def local(budget: int) -> tuple[BuiltContext, str, list[str]]:
        built = await build_local_context(change, budget, ignore_globs=ignore)
        return built, change.title, []

    return await plan_from(settings, local, protocol=protocol, question=question, models=models)


def _local_ignore_globs(settings: Settings) -> list[str]:
    """`paths.ignore` of the repository's own `.github/council.yml`, as the App reads it."""
    config = Path(CONFIG_PATH)
    if not config.is_file():
        return []
    return list(load_repo_config(config.read_text(errors="replace"), settings).config.ignore_paths)


async def plan_from(
    settings: Settings,
    source: Source,
    *,
    protocol: str,
    question: str | None,
    models: list[str],
) -> ReviewPlan:
    """Plan a review of whatever `source` builds into a context for a token budget."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    registry = ProviderRegistry(settings)
    refs = models or await registry.available_models()
    for ref in refs:
        registry.resolve(ref)  # a malformed reference is a usage error, before any work
    budget = context_budget(settings, refs)
    built, title, source_notes = await source(budget)
    topic = question or DEFAULT_TOPIC
    sections, signals, omitted = council_inputs(built, topic)
    board = BoardConfig()
    catalog = load_catalog()
    seats, notes = preview_seats(catalog, signals, protocol, refs, board)
    context_text = render_context(built.title or title, sections, omitted)
    context_tokens = default_estimator().estimate(context_text)
    calls = planned_calls(protocol, seats, refs, board.discussion_rounds)
    return ReviewPlan(
        protocol=protocol,
        topic=topic,
        models=refs,
        title=title,
        context_text=context_text,
        context_tokens=context_tokens,
        budget=budget,
        included=[s.path for s in built.sections if s.kind == "diff" and s.path],
        omitted=omitted,
        signals=signals,
        seats=seats,
        notes=[*source_notes, *notes],
        calls=calls,
        estimate_cost_usd=estimate_cost(settings, calls, context_tokens),
        board=board,
        catalog=catalog,
    )


def preview_seats(
    catalog: Catalog, signals: ReviewSignals, protocol: str, models: list[str], board: BoardConfig
) -> tuple[list[SeatPreview], list[str]]:
    pool = models or ["(no model)"]
    if protocol == "council":
        distinct = list(dict.fromkeys(pool))
        count = 3 if len(distinct) == 1 else len(distinct)
        return [
            SeatPreview(
                "council-member", "Council member", "council", distinct[i % len(distinct)], None
            )
            for i in range(count)
        ], []
    if protocol == "debate":
        return [], ["Debate panelists are designed for the question by a model at run time."]
    size = 3 if protocol == "quick" else board.default_size
    scored = score_catalog(catalog, signals)
    chosen = select_board(scored, size=size, min_size=min(board.min_size, size))
    seats = [
        SeatPreview(s.id, s.persona.name, s.division, pool[i % len(pool)], s.total, list(s.reasons))
        for i, s in enumerate(chosen.seats)
    ]
    return seats, list(chosen.notes)


@dataclass
class PlannedCall:
    phase: str
    seat: str
    model: str


def planned_calls(
    protocol: str, seats: list[SeatPreview], models: list[str], rounds: int
) -> list[PlannedCall]:
    """The calls a deliberation makes when every answer is complete the first time."""
    chair = models[0] if models else "(no model)"
    if protocol == "debate":
        panel = [
            SeatPreview(f"panelist-{i + 1}", f"Panelist {i + 1}", "", m, None)
            for i, m in enumerate((models or [chair]) * 3)
        ][:3]
        calls = [PlannedCall("design", "designer", chair)]
        calls += [PlannedCall("assess", p.name, p.model) for p in panel]
        for cycle in range(1, 4):  # up to three judged cycles
            calls += [PlannedCall(f"discuss {cycle}", p.name, p.model) for p in panel]
            calls.append(PlannedCall(f"judge {cycle}", "judge", chair))
        calls += [PlannedCall("vote", p.name, p.model) for p in panel]
    else:
        calls = [PlannedCall("assess", s.name, s.model) for s in seats]
        if protocol == "board":
            for r in range(1, rounds + 1):
                calls += [PlannedCall(f"discuss {r}", s.name, s.model) for s in seats]
            calls += [PlannedCall("vote", s.name, s.model) for s in seats]
        if protocol == "council" and len(seats) >= 3:
            calls += [PlannedCall("rank", s.name, s.model) for s in seats]
    calls.append(PlannedCall("synthesize", "chair", chair))
    return calls


def estimate_cost(settings: Settings, calls: list[PlannedCall], context_tokens: int) -> float:
    """Every call reads the context: the first call of each phase and model writes it to
    the cache, the others read it; each answer is about OUTPUT_ESTIMATE tokens."""
    table = CapabilityTable(settings.model_capabilities)
    registry = ProviderRegistry(settings, table=table)
    seen: set[tuple[str, str]] = set()
    total = 0.0
    for call in calls:
        if call.model.startswith("("):
            continue
        ref = registry.resolve(call.model)
        caps = table.lookup(ref.family, ref.model)
        first = (call.phase, call.model) not in seen
        seen.add((call.phase, call.model))
        total += cost_usd(
            caps,
            input_tokens=2_000,
            cache_write_tokens=context_tokens if first else 0,
            cache_read_tokens=0 if first else context_tokens,
            output_tokens=OUTPUT_ESTIMATE,
        )
    return round(total, 4)


async def run_review(
    settings: Settings,
    plan: ReviewPlan,
    *,
    deliberation_id: str,
    head_sha: str | None,
    on_progress: Callable[[ProgressEvent], None] | None = None,
) -> tuple[Advisory, str]:
    registry = ProviderRegistry(settings)
    db = Database(settings.database_url)
    try:
        await db.connect()
        record = await create_deliberation(
            db,
            key=deliberation_id,
            repo=str(Path.cwd()),
            pr_number=None,
            head_sha=head_sha or "",
            trigger="cli",
            protocol=plan.protocol,
            topic=plan.topic,
        )
        records = await track_records(db, plan.signals)
        engine = Engine(
            registry, plan.catalog, SqlLedger(db), track_records=records, on_progress=on_progress
        )
        advisory = await engine.deliberate(
            DeliberationRequest(
                deliberation_id=record.id,
                topic=plan.topic,
                protocol=plan.protocol,
                context=plan.context_text,
                signals=plan.signals,
                models=plan.models,
                allowed_models=settings.allowed_models,
                board=plan.board,
                notes=plan.notes,
                max_cost_usd=settings.max_cost_usd,
                assessment_timeout_s=settings.call_deadline_s,
            )
        )
        markdown = render_comment(advisory)
        await set_status(
            db,
            record.id,
            DeliberationStatus.COMPLETED,
            resolution=advisory.resolution.value,
            conclusion=conclusion_for(advisory.resolution, "verdict"),
            advisory_json=advisory.model_dump_json(),
            cost_usd=advisory.usage.cost_usd,
        )
        return advisory, markdown
    finally:
        await registry.aclose()
        await db.dispose()


def advisory_json(advisory: Advisory, markdown: str) -> dict[str, Any]:
    return {
        "protocol": advisory.protocol,
        "resolution": advisory.resolution.value,
        "conclusion": conclusion_for(advisory.resolution, "verdict"),
        "seats": [
            {
                "id": s.seat_id,
                "persona": s.persona_id,
                "division": s.division,
                "model": s.model,
                "state": s.state.value,
                "verdict": s.assessment.verdict if s.assessment else None,
                "score": s.assessment.score if s.assessment else None,
                "vote": s.vote.vote if s.vote else None,
                "confidence": s.vote.confidence if s.vote else None,
                "board_score": s.score,
            }
            for s in advisory.seats
        ],
        "findings": [
            {
                "severity": f.severity,
                "path": f.path,
                "start_line": f.start_line,
                "end_line": f.end_line,
                "title": f.title,
                "raised_by": f.raised_by,
            }
            for f in advisory.findings
        ],
        "conditions": advisory.conditions,
        "usage": {
            "calls": advisory.usage.calls,
            "input_tokens": advisory.usage.input_tokens,
            "output_tokens": advisory.usage.output_tokens,
            "cached_input_tokens": advisory.usage.cached_input_tokens,
            "cache_write_tokens": advisory.usage.cache_write_tokens,
            "cost_usd": round(advisory.usage.cost_usd, 6),
            "wall_ms": advisory.usage.wall_ms,
        },
        "markdown": markdown,
    }


def prompt_preview(plan: ReviewPlan) -> dict[str, str]:
    """What the first seat's assessment call sends, the context itself aside: the rules
    (system), then the seat's persona, lenses and task (the last message)."""
    rules = prompts.system_blocks(plan.protocol, "")[0].text
    if not plan.seats:
        return {"system": rules, "seat": "(seats are designed at run time)"}
    first = plan.seats[0]
    persona = plan.catalog.get(first.persona_id)
    seat = (
        seat_from_persona(1, persona, first.model)
        if persona is not None
        else neutral_seat(1, first.model)
    ).model_copy(update={"label": "Member A"})
    (message,) = prompts.messages("", prompts.seat_brief(seat), prompts.assess_task(plan.topic))
    return {"system": rules, "seat": message.content}


def dry_run_json(plan: ReviewPlan) -> dict[str, Any]:
    return {
        "prompts": prompt_preview(plan),
        "protocol": plan.protocol,
        "dry_run": True,
        "models": plan.models,
        "seats": [
            {
                "persona": s.persona_id,
                "name": s.name,
                "division": s.division,
                "model": s.model,
                "score": s.score,
            }
            for s in plan.seats
        ],
        "notes": plan.notes,
        "context": {
            "tokens": plan.context_tokens,
            "budget": plan.budget,
            "included": plan.included,
            "omitted": plan.omitted,
        },
        "estimate": {
            "calls": len(plan.calls),
            "cost_usd": plan.estimate_cost_usd,
            "planned": [{"phase": c.phase, "seat": c.seat, "model": c.model} for c in plan.calls],
        },
    }


def print_dry_run(plan: ReviewPlan, console: Console) -> None:
    console.print(f"[bold]Dry run[/] - protocol {plan.protocol}: {plan.topic}")
    table = Table(title="Seats")
    for column in ("persona", "division", "model", "score"):
        table.add_column(column)
    for s in plan.seats:
        table.add_row(s.name, s.division, s.model, "-" if s.score is None else f"{s.score:g}")
    console.print(table)
    for note in plan.notes:
        console.print(f"note: {note}")
    console.print(
        f"Context: {plan.context_tokens:,} tokens of a {plan.budget:,}-token budget; "
        f"{len(plan.included)} file(s) included, {len(plan.omitted)} left out."
    )
    for item in plan.omitted:
        console.print(f"  left out: {item}", highlight=False)
    console.print(
        f"Would make about {len(plan.calls)} model calls; estimated cost "
        f"${plan.estimate_cost_usd:.4f}."
    )
    phases: dict[str, list[str]] = {}
    for call in plan.calls:
        phases.setdefault(call.phase, []).append(f"{call.seat} ({call.model})")
    for phase, who in phases.items():
        console.print(f"  {phase}: {', '.join(who)}", highlight=False)
    preview = prompt_preview(plan)
    console.print("\n[bold]Prompts[/] (the packed context is sent between these two):")
    console.print(f"--- system: rules ---\n{preview['system']}", highlight=False, markup=False)
    console.print(f"--- first seat ---\n{preview['seat']}", highlight=False, markup=False)
