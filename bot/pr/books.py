"""The ledger's bookkeeping of a review's job, the same for every delivery path: the job
that asked for a deliberation, its hand-overs to another worker, a posting deferred, and
where the advisory was published (a re-run skips what is done)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.council.ledger import EventKind
from bot.store.db import Database
from bot.store.ledger import SqlLedger

__all__ = [
    "Requested",
    "handed_back_since",
    "last_deferred",
    "record_deferred",
    "record_published",
    "record_request",
    "record_resumed",
    "recorded_request",
    "resumes",
]

Requested = tuple[str, dict[str, Any]]  # (job id, the job's request)


async def record_published(
    db: Database, deliberation_id: str, *, comment_id: int, check_run_id: int | None, task_type: str
) -> None:
    """The ledger's last step: where the advisory was published (a re-run skips it)."""

    await SqlLedger(db).append(
        deliberation_id,
        EventKind.PUBLISHED,
        {"comment_id": comment_id, "check_run_id": check_run_id, "task_type": task_type},
        step="published",
    )


async def record_request(
    db: Database, deliberation_id: str, *, job_id: str, request: dict[str, Any]
) -> None:
    """The job that asked for this deliberation, kept so that it can be run again by
    another worker when its runner dies (whatever the queue still holds)."""

    await SqlLedger(db).append(
        deliberation_id,
        EventKind.REQUESTED,
        {"job_id": job_id, "request": request},
        step="requested",
    )


async def recorded_request(db: Database, deliberation_id: str) -> Requested | None:
    """(job id, request) as `record_request` kept them; None for a deliberation without."""

    event = await SqlLedger(db).step(deliberation_id, "requested")
    if event is None:
        return None
    request = event.payload.get("request")
    job_id = event.payload.get("job_id")
    if not isinstance(request, dict) or not isinstance(job_id, str):
        return None
    return job_id, dict(request)


async def record_resumed(db: Database, deliberation_id: str, *, reason: str) -> int:
    """Note a hand-over to a live worker; returns how many there have been."""

    ledger = SqlLedger(db)
    await ledger.append(deliberation_id, EventKind.RESUMED, {"reason": reason})
    return await resumes(db, deliberation_id)


async def resumes(db: Database, deliberation_id: str) -> int:

    events = await SqlLedger(db).events(deliberation_id)
    return sum(1 for e in events if e.kind == EventKind.RESUMED)


async def handed_back_since(db: Database, deliberation_id: str, since: datetime) -> bool:
    """Whether the deliberation was handed to a live worker after `since`."""

    events = await SqlLedger(db).events(deliberation_id)
    return any(e.kind == EventKind.RESUMED and e.created_at > since for e in events)


async def record_deferred(db: Database, deliberation_id: str, *, job: dict[str, Any]) -> None:
    """The next try to post a kept advisory, so it can be scheduled again if the queue
    loses it (Redis restarted without its data)."""

    await SqlLedger(db).append(deliberation_id, EventKind.PUBLISH_DEFERRED, {"job": job})


async def last_deferred(db: Database, deliberation_id: str) -> dict[str, Any] | None:

    events = await SqlLedger(db).events(deliberation_id)
    jobs = [e.payload.get("job") for e in events if e.kind == EventKind.PUBLISH_DEFERRED]
    last = jobs[-1] if jobs else None
    return dict(last) if isinstance(last, dict) else None
