"""Run a prepared review: the engine on a ledger, and the advisory recorded.

The worker calls `deliberate` inside its own job lifecycle (check run, sticky comment);
the command line calls `review_and_record`, which owns the database and the providers for
the length of one review.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.council.advisory import Advisory
from bot.council.budget import Budget, InMemoryBudget
from bot.council.engine import DeliberationRequest, Engine, ProgressEvent
from bot.council.scoring import PersonaRecord, ReviewSignals, review_task_type
from bot.providers import ProviderRegistry
from bot.review.anchors import anchor_advisory
from bot.review.assemble import PreparedReview
from bot.settings import Settings

if TYPE_CHECKING:  # SQLAlchemy costs a dry run time it does not need
    from bot.council.calls import ProviderSource
    from bot.store.db import Database

Progress = Callable[[ProgressEvent], None]
Preflight = Callable[[list[str]], Awaitable[None]]


async def track_records(db: Database, signals: ReviewSignals) -> list[PersonaRecord]:
    """The personas' recorded outcomes on this change's task type (board scoring's memory)."""
    from bot.store.outcomes import persona_track_records

    found = await persona_track_records(db, [review_task_type(signals)])
    return [
        PersonaRecord(
            persona_id=r.persona_id,
            task_type=r.task_type,
            outcomes=r.outcomes,
            success_rate=r.success_rate,
            top_for_task_type=r.top_for_task_type,
        )
        for r in found
    ]


async def deliberate(
    prepared: PreparedReview,
    settings: Settings,
    *,
    deliberation_id: str,
    providers: ProviderSource,
    db: Database,
    max_cost_usd: float | None,
    on_progress: Progress | None = None,
    fence: Callable[[], Awaitable[None]] | None = None,
    budget: Budget | None = None,
    preflight: Preflight | None = None,
) -> Advisory:
    """Convene and deliberate on the deliberation's ledger (resuming what it holds).
    `fence` runs before every ledger write and raises to stop a runner that lost its claim.
    `preflight` is given the models the council will seat before any is called, and raises
    (bot.providers.preflight.PreflightFailed) when one cannot be.

    Every call reserves its cost with `budget` before it starts (its input and its
    model's usual answer, as the store's answer sizes say; the worst case for a model never
    seen: bot.council.reserving); None: the store's budget for this deliberation, capped at
    `max_cost_usd`, at the pull request's cap (`max_pr_cost_usd` of the repo config, within
    COUNCIL_MAX_PR_COST_USD) and at the installation's daily cap
    (COUNCIL_MAX_DAILY_COST_USD), the PR and the installation being the deliberation
    record's (a command-line review has neither)."""
    from bot.store.answer_sizes import answer_sizes
    from bot.store.ledger import SqlLedger
    from bot.store.spend import SpendCaps, StoreBudget

    if budget is None:
        caps = SpendCaps(
            deliberation_usd=max_cost_usd,
            pr_usd=prepared.setup.config.max_pr_cost_usd,
            daily_usd=settings.max_daily_cost_usd,
        )
        budget = StoreBudget(db, deliberation_id, caps)

    engine = Engine(
        providers,
        prepared.setup.catalog,
        SqlLedger(db, fence=fence),
        track_records=await track_records(db, prepared.signals),
        on_progress=on_progress,
        answer_sizes=answer_sizes(db),
    )
    request = prepared.request(deliberation_id, settings, max_cost_usd=max_cost_usd)
    if preflight is not None:
        await preflight(await seated_models(engine, request))
    advisory = await engine.deliberate(request, budget=budget)
    # Findings cite lines the head has (bot/review/anchors.py).
    advisory = anchor_advisory(advisory, prepared.built)
    if prepared.scope is not None:  # a re-review, a diff built from the files API
        advisory = advisory.model_copy(update={"scope": prepared.scope})
    return advisory


async def seated_models(engine: Engine, request: DeliberationRequest) -> list[str]:
    """Every model the deliberation will call: its seats', chair's and judge's (a debate,
    whose panel a model designs, may seat any of the models it is given)."""
    convened = await engine.preview(request)
    if convened is None:
        chair = [request.chair_model] if request.chair_model else []
        return list(dict.fromkeys([*request.models, *chair]))
    seats = [*convened.seats, convened.chair, convened.judge]
    return list(dict.fromkeys(s.model for s in seats if s is not None))


def registry_preflight(registry: ProviderRegistry) -> Preflight:
    """The preflight of the registry's models (their keys, their endpoints answering)."""
    from bot.providers.preflight import preflight

    async def check(models: list[str]) -> None:
        await preflight(registry, models)

    return check


async def review_and_record(
    settings: Settings,
    prepared: PreparedReview,
    *,
    deliberation_id: str,
    conclude: Callable[[Advisory], str],
    on_progress: Progress | None = None,
) -> Advisory:
    """The command line's review: a deliberation record in the local store, the engine
    run, and the advisory stored with its conclusion (`conclude`: the check-run conclusion
    it would have, which rendering decides)."""
    from bot.store.db import Database
    from bot.store.deliberations import DeliberationStatus, create_deliberation, set_status

    registry = ProviderRegistry(settings)
    db = Database(settings.database_url)
    try:
        await db.connect()
        record = await create_deliberation(
            db,
            key=deliberation_id,
            repo=str(Path.cwd()),
            pr_number=None,
            head_sha=prepared.head_sha or "",
            trigger="cli",
            protocol=prepared.protocol,
            topic=prepared.topic,
        )
        advisory = await _deliberate_once(settings, prepared, db, record.id, registry, on_progress)
        await set_status(
            db,
            record.id,
            DeliberationStatus.COMPLETED,
            resolution=advisory.resolution.value,
            conclusion=conclude(advisory),
            advisory_json=advisory.model_dump_json(),
            cost_usd=advisory.usage.cost_usd,
        )
        return advisory
    finally:
        await registry.aclose()
        await db.dispose()


async def _deliberate_once(
    settings: Settings,
    prepared: PreparedReview,
    db: Database,
    deliberation_id: str,
    registry: ProviderRegistry,
    on_progress: Progress | None,
) -> Advisory:
    """One process, one review, never resumed: its cap is held in memory. Interrupted
    (Ctrl-C, SIGTERM: a cancel) or failed, its record says how it ended instead of
    `running` forever, since nothing resumes a command line's review."""
    from bot.store.deliberations import DeliberationStatus, set_status

    try:
        return await deliberate(
            prepared,
            settings,
            deliberation_id=deliberation_id,
            providers=registry,
            db=db,
            max_cost_usd=prepared.setup.config.max_cost_usd,
            on_progress=on_progress,
            budget=InMemoryBudget(prepared.setup.config.max_cost_usd),
            preflight=registry_preflight(registry),
        )
    except BaseException as stopped:
        ended = (
            DeliberationStatus.CANCELLED
            if isinstance(stopped, asyncio.CancelledError | KeyboardInterrupt)
            else DeliberationStatus.FAILED
        )
        await asyncio.shield(set_status(db, deliberation_id, ended))
        raise
