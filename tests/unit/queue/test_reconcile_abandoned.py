"""The reconciler ends a deliberation nothing can run again: `failed` in the store, its check
run completed on GitHub (the fake), instead of `running` for good.

The store is a real SQLite file, the queue and the claims real Redis, GitHub the fake over
a real socket; the reconciler's pass runs as of a clock the test gives (one lease later).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from arq.connections import RedisSettings, create_pool
from arq.constants import job_key_prefix

from bot.github.publish import CheckRunPublisher
from bot.pr.books import record_request, record_resumed
from bot.queue.deps import WorkerDeps
from bot.queue.lease import lease_key
from bot.queue.reconcile import reconcile_once
from bot.store.deliberations import (
    DeliberationRecord,
    DeliberationStatus,
    create_deliberation,
    get_deliberation,
    record_publication,
)
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import HEAD, INSTALLATION, PR, REPO, app_settings, seed_github

KEYS = app_keypair()


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


@pytest.fixture
async def deps(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> AsyncIterator[WorkerDeps]:
    """What a worker's reconciler has: the store, Redis, the App's GitHub client."""
    settings = app_settings(tmp_path, models, gh, KEYS[0], max_resumes=1)
    redis = await create_pool(
        RedisSettings.from_dsn(settings.redis_url), default_queue_name=settings.queue_name
    )
    started = await WorkerDeps.start(settings, redis)
    try:
        yield started
    finally:
        await started.close()
        queue = settings.queue_name
        keys = [k async for k in redis.scan_iter(match=f"{settings.key_prefix}:*")]
        keys += [job_key_prefix + j.decode() for j in await redis.zrange(queue, 0, -1)]
        await redis.delete(queue, *keys)
        await redis.aclose()


async def started_deliberation(
    deps: WorkerDeps, *, pr_number: int | None = PR
) -> DeliberationRecord:
    """A deliberation as a worker starts one: its record, running (the check run next)."""
    return await create_deliberation(
        deps.db,
        key=f"command:{uuid.uuid4().hex}",
        repo=REPO,
        pr_number=pr_number,
        head_sha=HEAD,
        trigger="command",
        protocol="quick",
        topic="Review this pull request",
        installation_id=INSTALLATION,
    )


async def open_check_run(deps: WorkerDeps, record: DeliberationRecord, *, stored: bool) -> int:
    async with deps.github.for_installation(INSTALLATION, REPO) as client:
        publisher = CheckRunPublisher(client, update_interval_s=0)
        run_id = await publisher.create(
            HEAD, external_id=record.id, title="Council convening", summary="convening"
        )
    if stored:
        await record_publication(deps.db, record.id, check_run_id=run_id)
    return run_id


def later(deps: WorkerDeps) -> datetime:
    """When the reconciler looks again: more than a lease after everything above."""
    return datetime.now(UTC) + timedelta(seconds=deps.settings.lease_ttl_s + 1)


async def status_of(deps: WorkerDeps, record: DeliberationRecord) -> DeliberationStatus:
    found = await get_deliberation(deps.db, record.id)
    assert found is not None
    return found.status


def run_of(gh: FakeGitHub, run_id: int) -> Any:
    (run,) = [r for r in gh.check_runs(REPO) if r.id == run_id]
    return run


@pytest.mark.parametrize("stored", [True, False], ids=["recorded id", "found by external id"])
async def test_a_deliberation_cut_off_before_its_request_was_recorded_ends_failed(
    deps: WorkerDeps, gh: FakeGitHub, stored: bool
) -> None:
    # The job created the record and opened the check run, then the database failed before
    # its request was kept (or, unstored, before the check run's id was): the job is gone.
    record = await started_deliberation(deps)
    run_id = await open_check_run(deps, record, stored=stored)

    await reconcile_once(deps, now=later(deps))

    ended = await get_deliberation(deps.db, record.id)
    assert ended is not None
    assert ended.status == DeliberationStatus.FAILED
    assert ended.resolution == "FAILED" and ended.finished_at is not None
    run = run_of(gh, run_id)
    assert run.status == "completed" and run.conclusion == ended.conclusion
    assert "deliberation failed: The deliberation was cut off" in run.title
    assert "/council" in run.summary
    # Nothing was queued to run it again.
    assert await deps.redis.zcard(deps.settings.queue_name) == 0

    await reconcile_once(deps, now=later(deps))  # a second pass leaves it alone
    assert len(gh.calls_to("PATCH", rf"/repos/{REPO}/check-runs/{run_id}")) == 1


async def test_a_deliberation_handed_back_past_max_resumes_ends_failed(
    deps: WorkerDeps, gh: FakeGitHub
) -> None:
    record = await started_deliberation(deps)
    run_id = await open_check_run(deps, record, stored=True)
    await record_request(deps.db, record.id, job_id=record.key, request={"repo": REPO})
    for _ in range(deps.settings.max_resumes + 1):  # the last runner never concluded it
        await record_resumed(deps.db, record.id, reason="its runner's claim lapsed")

    await reconcile_once(deps, now=later(deps))

    assert await status_of(deps, record) == DeliberationStatus.FAILED
    run = run_of(gh, run_id)
    assert run.status == "completed"
    assert "interrupted 2 times and is not resumed again" in run.title
    assert await deps.redis.zcard(deps.settings.queue_name) == 0


async def test_a_deliberation_younger_than_a_lease_is_not_ended(
    deps: WorkerDeps, gh: FakeGitHub
) -> None:
    record = await started_deliberation(deps)
    run_id = await open_check_run(deps, record, stored=True)
    await reconcile_once(deps, now=datetime.now(UTC))
    assert await status_of(deps, record) == DeliberationStatus.RUNNING
    assert run_of(gh, run_id).status == "in_progress"


async def test_a_deliberation_something_can_still_run_is_not_ended(
    deps: WorkerDeps, gh: FakeGitHub
) -> None:
    claimed = await started_deliberation(deps)  # a live runner's claim
    await deps.redis.set(lease_key(deps.settings.key_prefix, claimed.id), b"worker", ex=60)
    queued = await started_deliberation(deps)  # the queue still has the job that started it
    await deps.redis.set(job_key_prefix + queued.key, b"job", ex=60)
    local = await started_deliberation(deps, pr_number=None)  # `council review`'s record
    resumable = await started_deliberation(deps)  # its request was recorded: handed back
    await record_request(deps.db, resumable.id, job_id=resumable.key, request={"repo": REPO})
    runs = [await open_check_run(deps, r, stored=True) for r in (claimed, queued, resumable)]

    await reconcile_once(deps, now=later(deps))

    for record in (claimed, queued, local, resumable):
        assert await status_of(deps, record) == DeliberationStatus.RUNNING, record.key
    for run_id in runs:
        assert run_of(gh, run_id).status == "in_progress"
    resumed = f"resume:{resumable.key}:1"
    assert await deps.redis.zrange(deps.settings.queue_name, 0, -1) == [resumed.encode()]
    await deps.redis.delete(job_key_prefix + queued.key)
