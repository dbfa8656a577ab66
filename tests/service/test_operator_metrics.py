"""The metrics an operator scales by, read from `/metrics` after real work: the queue's
depth and the age of its oldest waiting job (from Redis, on scrape), and finished
deliberations by resolution (counted by the worker that finished them)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from arq.constants import in_progress_key_prefix, job_key_prefix
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from tests.service.test_receiver_outage import own_redis
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    FILES,
    PR,
    REPO,
    App,
    app_settings,
    comment_event,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()
BINARY_ONLY = (
    "diff --git a/logo.png b/logo.png\n"
    "index 1111111..2222222 100644\n"
    "Binary files a/logo.png and b/logo.png differ\n"
)
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(app: App) -> Samples:
    response = await app.http.get(f"{app.url}/metrics")
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def queue_jobs(samples: Samples, queue: str) -> dict[str, float | None]:
    return {
        state: samples.get(("council_queue_jobs", frozenset({("queue", queue), ("state", state)})))
        for state in ("waiting", "running", "deferred")
    }


def oldest(samples: Samples, queue: str) -> float:
    value = samples.get(("council_queue_oldest_waiting_seconds", frozenset({("queue", queue)})))
    assert value is not None, "no oldest-waiting gauge for the queue"
    return value


async def test_queue_depth_and_oldest_waiting_age_come_from_redis(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    settings = app_settings(tmp_path, models, fake_github, KEYS[0])
    queue = settings.queue_name
    async with running_app(settings, worker=False) as app:
        empty = await scrape(app)
        assert queue_jobs(empty, queue) == {"waiting": 0, "running": 0, "deferred": 0}
        assert oldest(empty, queue) == 0

        ids = []
        for _ in range(3):
            event = comment_event("/council", comment_id=uuid.uuid4().int % 10**15)
            response = await app.deliver("issue_comment", event)
            assert response.json()["status"] == "queued", response.text
            ids.append(response.json()["job_id"])
        await asyncio.sleep(0.3)
        three = await scrape(app)
        assert queue_jobs(three, queue) == {"waiting": 3, "running": 0, "deferred": 0}
        assert 0.3 <= oldest(three, queue) < 30

        # A worker takes the oldest (arq marks it in progress, and keeps it in the queue
        # until it ends): it is running, and the oldest waiting job is a younger one.
        await app.redis.set(in_progress_key_prefix + ids[0], b"1")
        later = await app.redis.enqueue_job("record_outcome", {}, _defer_by=600)
        assert later is not None
        taken = await scrape(app)
        assert queue_jobs(taken, queue) == {"waiting": 2, "running": 1, "deferred": 1}
        assert oldest(taken, queue) <= oldest(three, queue) + 1

        await app.redis.set(in_progress_key_prefix + ids[1], b"1")
        await app.redis.set(in_progress_key_prefix + ids[2], b"1")
        all_running = await scrape(app)
        assert queue_jobs(all_running, queue) == {"waiting": 0, "running": 3, "deferred": 1}
        assert oldest(all_running, queue) == 0
        await app.redis.delete(
            *(prefix + i for i in ids for prefix in (in_progress_key_prefix, job_key_prefix))
        )
        await app.redis.delete(job_key_prefix + later.job_id, queue)


async def test_without_redis_the_queue_gauges_are_absent_not_stale(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    with own_redis() as redis:
        settings = app_settings(tmp_path, models, fake_github, KEYS[0], redis_url=redis.url)
        async with running_app(settings, worker=False) as app:
            assert queue_jobs(await scrape(app), settings.queue_name)["waiting"] == 0
            redis.kill()
            samples = await scrape(app)
            assert not any(name.startswith("council_queue_") for name, _ in samples)


async def test_a_finished_deliberation_is_counted_by_its_resolution(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed_github(gh, KEYS[1])
    models.default(CouncilScript().reply)
    before = REGISTRY.get_sample_value(
        "council_deliberation_outcomes_total", {"resolution": "APPROVED"}
    )
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        response = await app.deliver(
            "issue_comment", comment_event("/council quick", comment_id=comment_id)
        )
        assert response.status_code == 202, response.text
        await eventually(
            lambda: [c for c in gh.check_runs(REPO) if c.status == "completed"],
            what="a completed check run",
        )

        async def counted() -> float:
            samples = await scrape(app)  # the worker runs in this process: one registry
            key = ("council_deliberation_outcomes_total", frozenset({("resolution", "APPROVED")}))
            return samples.get(key, 0.0) - (before or 0.0)

        assert await eventually(counted, what="the outcome to be counted") == 1
        (run,) = gh.check_runs(REPO)
        assert run.conclusion == "success"


async def test_a_deliberation_with_no_verdict_is_counted_by_its_resolution_too(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """Endings without a verdict (here NOTHING_TO_REVIEW: a binary-only change) count too."""
    gh = fake_github
    seed_github(gh, KEYS[1])
    gh.add_pull(
        REPO,
        PR,
        title="New logo",
        body="",
        head_sha="ef" * 20,
        diff=BINARY_ONLY,
        files_at_head={**FILES, "logo.png": b"\x89PNG\r\n\x1a\n"},
        user=AUTHOR,
    )
    models.default(CouncilScript().reply)
    labels = {"resolution": "NOTHING_TO_REVIEW"}
    before = REGISTRY.get_sample_value("council_deliberation_outcomes_total", labels) or 0.0
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        comment_id = gh.add_comment(REPO, PR, "/council", user=AUTHOR)
        response = await app.deliver(
            "issue_comment", comment_event("/council", comment_id=comment_id)
        )
        assert response.status_code == 202, response.text
        await eventually(
            lambda: [c for c in gh.check_runs(REPO) if c.status == "completed"],
            what="a completed check run",
        )

        async def counted() -> float:
            key = ("council_deliberation_outcomes_total", frozenset(labels.items()))
            return (await scrape(app)).get(key, 0.0) - before

        assert await eventually(counted, what="the outcome to be counted") == 1
    assert models.calls == []
