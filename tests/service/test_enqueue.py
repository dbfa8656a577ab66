"""`enqueue_once` writes jobs a real arq worker runs, once per delivery and per job id."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from arq.connections import ArqRedis, RedisSettings
from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import deserialize_job
from arq.worker import Worker, func
from redis.asyncio.connection import Connection

from bot.queue.enqueue import EnqueueOutcome, body_key, delivery_key, enqueue_once
from bot.queue.jobs import JobFunction, JobRequest, function_for, job_id
from bot.settings import Settings
from tests.support.webhooks import cleanup, make_settings, open_redis, queued_jobs, unique_id

# arq 0.28 closes its pool with redis-py's deprecated close(); not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated close:DeprecationWarning")


@pytest.fixture
async def settings() -> Settings:
    return make_settings(job_result_ttl_s=1)


@pytest.fixture
async def redis(settings: Settings) -> AsyncIterator[ArqRedis]:
    pool = await open_redis(settings)
    try:
        yield pool
    finally:
        await cleanup(pool, settings)
        await pool.aclose()


def command(comment_id: int | None = None, **changes: Any) -> JobRequest:
    values: dict[str, Any] = {
        "trigger": "command",
        "delivery_id": str(uuid.uuid4()),
        "installation_id": 7,
        "repo": "octo/repo",
        "pr_number": 12,
        "sender_login": "octocat",
        "comment_id": comment_id or unique_id(),
        "protocol": "debate",
        "question": "should this cache live in Redis?",
    }
    return JobRequest(**(values | changes))


async def enqueue(
    redis: ArqRedis, settings: Settings, request: JobRequest, *, delivery_id: str | None = None
) -> EnqueueOutcome:
    """As the receiver does, with the request's JSON standing in for the webhook's body."""
    return await enqueue_once(
        redis,
        delivery_id=delivery_id or request.delivery_id,
        body=request.model_dump_json().encode(),
        request=request,
        settings=settings,
    )


async def run_worker(settings: Settings) -> list[tuple[str, JobRequest]]:
    """Run a real arq worker in burst mode on the test's queue; what its functions got."""
    received: list[tuple[str, JobRequest]] = []

    def recorder(name: str) -> Any:
        async def job(ctx: dict[str, Any], request: dict[str, Any]) -> str:
            received.append((name, JobRequest.model_validate(request)))
            return "done"

        return func(job, name=name)

    worker = Worker(
        functions=[recorder(function.value) for function in JobFunction],
        queue_name=settings.queue_name,
        redis_settings=RedisSettings.from_dsn(settings.redis_url),
        burst=True,
        handle_signals=False,
        keep_result=settings.job_result_ttl_s,
        poll_delay=0.01,
    )
    try:
        await worker.main()
    finally:
        await worker.close()
    assert (worker.jobs_complete, worker.jobs_failed) == (len(received), 0)
    return received


async def test_a_real_arq_worker_runs_the_job_with_its_request(
    redis: ArqRedis, settings: Settings
) -> None:
    request = command()
    help_request = command(trigger="help", protocol=None, question=None)

    assert await enqueue(redis, settings, request) is EnqueueOutcome.QUEUED
    assert await enqueue(redis, settings, help_request) is EnqueueOutcome.QUEUED
    received = await run_worker(settings)

    assert sorted(received) == sorted([("deliberate", request), ("reply_help", help_request)])


async def test_the_job_is_written_as_arqs_own_enqueue_writes_it(
    redis: ArqRedis, settings: Settings
) -> None:
    request = command()
    theirs = make_settings(redis_url=settings.redis_url)
    twin = command(comment_id=unique_id())  # arq's job ids are global: use another id
    try:
        await enqueue(redis, settings, request)
        await redis.enqueue_job(
            function_for(twin).value,
            twin.model_dump(mode="json"),
            _job_id=job_id(twin),
            _queue_name=theirs.queue_name,
        )
        ours, arqs = await _stored(redis, settings, request), await _stored(redis, theirs, twin)
    finally:
        await cleanup(redis, theirs)

    assert ours["job"].function == arqs["job"].function == "deliberate"
    assert ours["job"].args == (request.model_dump(mode="json"),)
    assert (ours["job"].kwargs, ours["job"].job_try) == (arqs["job"].kwargs, arqs["job"].job_try)
    assert abs(ours["ttl"] - arqs["ttl"]) < 5_000  # both 24 h from enqueue
    assert abs(ours["score"] - ours["job"].enqueue_time.timestamp() * 1000) < 1


async def _stored(redis: ArqRedis, settings: Settings, request: JobRequest) -> dict[str, Any]:
    identifier = job_id(request)
    data = await redis.get(job_key_prefix + identifier)
    assert data is not None
    return {
        "job": deserialize_job(data),
        "ttl": await redis.pttl(job_key_prefix + identifier),
        "score": await redis.zscore(settings.queue_name, identifier),
    }


async def test_ten_concurrent_copies_of_one_delivery_make_one_job(
    redis: ArqRedis, settings: Settings
) -> None:
    request = command()

    outcomes = await asyncio.gather(*(enqueue(redis, settings, request) for _ in range(10)))

    assert sorted(outcomes) == sorted(
        [EnqueueOutcome.QUEUED] + [EnqueueOutcome.DUPLICATE_DELIVERY] * 9
    )
    assert list(await queued_jobs(redis, settings)) == [job_id(request)]
    ttl_ms = await redis.pttl(delivery_key(settings, request.delivery_id))
    assert settings.delivery_ttl_s * 1000 - 5_000 < ttl_ms <= settings.delivery_ttl_s * 1000


async def test_a_delivery_and_its_redelivery_make_one_job(
    redis: ArqRedis, settings: Settings
) -> None:
    request = command()

    first = await enqueue(redis, settings, request)
    await run_worker(settings)  # the first job has even run by the time GitHub redelivers
    again = await enqueue(redis, settings, request)

    assert (first, again) == (EnqueueOutcome.QUEUED, EnqueueOutcome.DUPLICATE_DELIVERY)
    assert await queued_jobs(redis, settings) == {}


async def test_a_body_replayed_under_a_new_delivery_id_is_a_duplicate_as_long_as_ids_are_kept(
    redis: ArqRedis, settings: Settings
) -> None:
    request = command()

    first = await enqueue(redis, settings, request)
    replayed = await enqueue(redis, settings, request, delivery_id=str(uuid.uuid4()))

    assert (first, replayed) == (EnqueueOutcome.QUEUED, EnqueueOutcome.DUPLICATE_BODY)
    assert list(await queued_jobs(redis, settings)) == [job_id(request)]
    body = request.model_dump_json().encode()
    kept_ms = [
        await redis.pttl(key)
        for key in (delivery_key(settings, request.delivery_id), body_key(settings, body))
    ]
    assert all(
        settings.delivery_ttl_s * 1000 - 5_000 < ms <= settings.delivery_ttl_s * 1000
        for ms in kept_ms
    )


async def test_two_commands_on_two_comments_make_two_jobs(
    redis: ArqRedis, settings: Settings
) -> None:
    first, second = command(), command()

    outcomes = [await enqueue(redis, settings, request) for request in (first, second)]

    assert outcomes == [EnqueueOutcome.QUEUED, EnqueueOutcome.QUEUED]
    assert sorted(await queued_jobs(redis, settings)) == sorted(map(job_id, (first, second)))


async def test_a_job_id_is_refused_only_while_arq_keeps_the_job_or_its_result(
    redis: ArqRedis, settings: Settings
) -> None:
    # Deliveries of pushes on one head SHA (e.g. reopened, then ready_for_review).
    sha = uuid.uuid4().hex

    def push() -> JobRequest:
        return JobRequest(
            trigger="push", delivery_id=str(uuid.uuid4()), repo="o/r", pr_number=3, head_sha=sha
        )

    first = push()

    queued = await enqueue(redis, settings, first)
    while_queued = await enqueue(redis, settings, push())
    await run_worker(settings)
    result_kept = await redis.exists(result_key_prefix + job_id(first))
    while_result_kept = await enqueue(redis, settings, push())
    await asyncio.sleep(settings.job_result_ttl_s + 0.1)
    after_result_expired = await enqueue(redis, settings, push())

    assert queued is EnqueueOutcome.QUEUED
    assert while_queued is EnqueueOutcome.JOB_EXISTS
    assert result_kept
    assert while_result_kept is EnqueueOutcome.JOB_EXISTS
    assert after_result_expired is EnqueueOutcome.QUEUED
    assert list(await queued_jobs(redis, settings)) == [job_id(first)]


async def test_the_script_is_loaded_again_after_redis_forgets_it(
    redis: ArqRedis, settings: Settings
) -> None:
    await redis.script_flush()

    assert await enqueue(redis, settings, command()) is EnqueueOutcome.QUEUED


async def test_concurrent_deliveries_share_one_write_and_each_gets_its_own_outcome(
    redis: ArqRedis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fifty senders at once: one write to Redis, and every delivery its own answer, the
    same as one at a time (new, redelivered, replayed body, job already there)."""
    writes: list[int] = []
    send = Connection.send_packed_command

    async def counting(self: Connection, command: Any, check_health: bool = True) -> None:
        writes.append(len(command))
        await send(self, command, check_health)

    monkeypatch.setattr(Connection, "send_packed_command", counting)
    new = [command() for _ in range(40)]
    same_job = command()
    calls = [enqueue(redis, settings, request) for request in new]
    calls += [enqueue(redis, settings, new[0])]  # redelivered: the same delivery id
    replayed = new[1].model_dump_json().encode()
    calls += [
        enqueue_once(  # the same signed body under a new delivery id
            redis, delivery_id=str(uuid.uuid4()), body=replayed, request=new[1], settings=settings
        )
    ]
    calls += [enqueue(redis, settings, same_job)]
    calls += [enqueue(redis, settings, same_job.model_copy(update={"delivery_id": "other"}))]

    outcomes = await asyncio.gather(*calls)

    assert len(writes) == 1
    assert outcomes[:40] == [EnqueueOutcome.QUEUED] * 40
    assert outcomes[40:] == [
        EnqueueOutcome.DUPLICATE_DELIVERY,
        EnqueueOutcome.DUPLICATE_BODY,
        EnqueueOutcome.QUEUED,
        EnqueueOutcome.JOB_EXISTS,
    ]
    assert sorted(await queued_jobs(redis, settings)) == sorted(
        job_id(request) for request in [*new, same_job]
    )
    received = await run_worker(settings)
    assert sorted(request.delivery_id for _, request in received) == sorted(
        request.delivery_id for request in [*new, same_job]
    )


async def test_a_batch_that_meets_a_redis_without_the_script_loads_it_once(
    redis: ArqRedis, settings: Settings
) -> None:
    await redis.script_flush()
    requests = [command() for _ in range(20)]

    outcomes = await asyncio.gather(*(enqueue(redis, settings, r) for r in requests))

    assert outcomes == [EnqueueOutcome.QUEUED] * 20
    assert len(await queued_jobs(redis, settings)) == 20


async def test_a_delivery_that_gives_up_waiting_leaves_the_others_their_answers(
    redis: ArqRedis, settings: Settings
) -> None:
    async def impatient(request: JobRequest) -> EnqueueOutcome | None:
        try:
            async with asyncio.timeout(0):
                return await enqueue(redis, settings, request)
        except TimeoutError:
            return None

    requests = [command() for _ in range(5)]
    outcomes = await asyncio.gather(
        impatient(requests[0]), *(enqueue(redis, settings, r) for r in requests[1:])
    )

    assert outcomes[0] is None and outcomes[1:] == [EnqueueOutcome.QUEUED] * 4
    # The one that gave up was still written, as a single command would be: one job each.
    assert len(await queued_jobs(redis, settings)) == 5
