"""What happened after the advice: `pull_request.closed` and installation bookkeeping.

A finding is "addressed" when the lines it points at changed between the head the council
reviewed and the PR's final head. A persona's contribution held up when one of its findings
was addressed, or when its vote matched what the people decided (approve and merged, reject
and not merged). These records feed the memory layer of board scoring.
"""

from __future__ import annotations

import re

import structlog

from bot.council.advisory import Advisory, MergedFinding
from bot.council.ledger import EventKind
from bot.github.fetch import PullFile, compare_files, fetch_pull
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobRequest
from bot.store.ledger import SqlLedger
from bot.store.records import (
    PersonaOutcome,
    delete_installation,
    latest_for_pr,
    record_outcome,
    record_persona_outcomes,
    upsert_installation,
)

log = structlog.get_logger(__name__)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.MULTILINE)


def finding_key(f: MergedFinding) -> str:
    return f"{f.path}:{f.start_line or 0}-{f.end_line or f.start_line or 0}:{f.title}"


def touched(f: MergedFinding, changed: dict[str, PullFile]) -> bool:
    """Did the change after the advice touch the finding's lines (old side of the compare)?"""
    file = changed.get(f.path)
    if file is None:
        return False
    if f.start_line is None or not file.patch:
        return True
    end = f.end_line or f.start_line
    for match in _HUNK.finditer(file.patch):
        start = int(match.group(1))
        length = int(match.group(2) or "1")
        if start <= end and f.start_line <= start + max(length, 1) - 1:
            return True
    return False


async def record_closed(deps: WorkerDeps, request: JobRequest) -> str:
    if request.installation_id is None or request.pr_number is None:
        return "ignored"
    record = await latest_for_pr(deps.db, request.repo, request.pr_number)
    if record is None or not record.advisory_json:
        return "no advisory to score"
    advisory = Advisory.model_validate_json(record.advisory_json)
    client = deps.github.for_installation(request.installation_id, request.repo)
    pull = await fetch_pull(client, request.pr_number)
    changed: dict[str, PullFile] = {}
    if pull.head_sha != record.head_sha:
        changed = {f.path: f for f in await compare_files(client, record.head_sha, pull.head_sha)}
    addressed = [finding_key(f) for f in advisory.findings if touched(f, changed)]
    unaddressed = [finding_key(f) for f in advisory.findings if not touched(f, changed)]
    merged = bool(request.merged if request.merged is not None else pull.merged)
    await record_outcome(deps.db, record.id, merged, addressed, unaddressed)
    task_type = await _task_type(deps, record.id)
    outcomes = [
        PersonaOutcome(
            persona_id=seat.persona_id,
            task_type=task_type,
            success=_held_up(
                seat.seat_id,
                seat.vote.vote if seat.vote else None,
                merged,
                advisory,
                set(addressed),
            ),
        )
        for seat in advisory.valid_seats()
    ]
    await record_persona_outcomes(deps.db, record.id, outcomes)
    log.info(
        "outcome_recorded",
        repo=request.repo,
        pr=request.pr_number,
        merged=merged,
        addressed=len(addressed),
        unaddressed=len(unaddressed),
    )
    return f"merged={merged} addressed={len(addressed)}"


def _held_up(
    seat_id: str, vote: str | None, merged: bool, advisory: Advisory, addressed: set[str]
) -> bool:
    if any(seat_id in f.raised_by and finding_key(f) in addressed for f in advisory.findings):
        return True
    return (vote == "APPROVE" and merged) or (vote == "REJECT" and not merged)


async def _task_type(deps: WorkerDeps, deliberation_id: str) -> str:
    published = await SqlLedger(deps.db).step(deliberation_id, "published")
    if published is not None and published.kind == EventKind.PUBLISHED:
        value = published.payload.get("task_type")
        if isinstance(value, str):
            return value
    return "general"


async def record_installation(deps: WorkerDeps, request: JobRequest) -> str:
    if request.installation_id is None:
        return "ignored"
    if request.installation_action == "deleted":
        await delete_installation(deps.db, request.installation_id)
        return "forgotten"
    await upsert_installation(
        deps.db, request.installation_id, request.account or "", request.repositories
    )
    return "recorded"
