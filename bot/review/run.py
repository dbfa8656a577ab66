"""Run a prepared review: the engine on a ledger, and the advisory recorded.

The worker calls `deliberate` inside its own job lifecycle (check run, sticky comment);
the command line calls `review_and_record`, which owns the database and the providers for
the length of one review.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.council.advisory import Advisory
from bot.council.engine import Engine, ProgressEvent
from bot.council.scoring import PersonaRecord, ReviewSignals, review_task_type
from bot.providers import ProviderRegistry
from bot.review.assemble import PreparedReview
from bot.settings import Settings

if TYPE_CHECKING:  # SQLAlchemy costs a dry run time it does not need
    from bot.council.budget import Budget
    from bot.council.calls import ProviderSource
    from bot.store.db import Database

Progress = Callable[[ProgressEvent], None]


async def track_records(db: Database, signals: ReviewSignals) -> list[PersonaRecord]:
    """The personas' recorded outcomes on this change's task type (board scoring's memory)."""
    from bot.store.records import persona_track_records

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
    budget: Budget | None = None,
) -> Advisory:
    """Convene and deliberate on the deliberation's ledger (resuming what it holds).

    Every call reserves its worst case with `budget` before it starts; None: the store's
    budget for this deliberation, capped at `max_cost_usd`, at the pull request's cap
    (`max_pr_cost_usd` of the repo config, within COUNCIL_MAX_PR_COST_USD) and at the
    installation's daily cap (COUNCIL_MAX_DAILY_COST_USD), the PR and the installation
    being the deliberation record's (a command-line review has neither)."""
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
        SqlLedger(db),
        track_records=await track_records(db, prepared.signals),
        on_progress=on_progress,
    )
    request = prepared.request(deliberation_id, settings, max_cost_usd=max_cost_usd)
    return await engine.deliberate(request, budget=budget)


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
    from bot.store.records import DeliberationStatus, create_deliberation, set_status

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
        advisory = await deliberate(
            prepared,
            settings,
            deliberation_id=record.id,
            providers=registry,
            db=db,
            max_cost_usd=prepared.setup.config.max_cost_usd,
            on_progress=on_progress,
        )
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


async def record_published(
    db: Database, deliberation_id: str, *, comment_id: int, check_run_id: int | None, task_type: str
) -> None:
    """The ledger's last step: where the advisory was published (a re-run skips it)."""
    from bot.council.ledger import EventKind
    from bot.store.ledger import SqlLedger

    await SqlLedger(db).append(
        deliberation_id,
        EventKind.PUBLISHED,
        {"comment_id": comment_id, "check_run_id": check_run_id, "task_type": task_type},
        step="published",
    )
