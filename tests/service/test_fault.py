"""Fault test: SIGKILL the worker mid-deliberation, start another (TESTING.md, "fault").

The PR must end with exactly one comment and one completed check run, and no seat call that
had finished before the kill may be made again: the second worker resumes from the ledger.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from bot.settings import Settings
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    PR,
    REPO,
    app_settings,
    comment_event,
    eventually,
    running_app,
    seed_github,
)

COUNCIL = str(Path(sys.executable).with_name("council"))
KEYS = app_keypair()
LATENCY_S = 0.5


@pytest.fixture
def github(fake_github: FakeGitHub) -> FakeGitHub:
    return fake_github


def worker_env(settings: Settings) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "COUNCIL_", "GITHUB_", "DATABASE_"))
    }
    assert settings.github_private_key is not None
    env.update(
        {
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": str(settings.anthropic_base_url),
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": str(settings.openai_base_url),
            "COUNCIL_MODELS": ",".join(settings.models),
            "GITHUB_APP_ID": str(settings.github_app_id),
            "GITHUB_PRIVATE_KEY": settings.github_private_key.get_secret_value(),
            "GITHUB_WEBHOOK_SECRET": "unused-by-the-worker",
            "GITHUB_API_URL": settings.github_api_url,
            "REDIS_URL": settings.redis_url,
            "DATABASE_URL": settings.database_url,
            "COUNCIL_QUEUE_NAME": settings.queue_name,
            "COUNCIL_KEY_PREFIX": settings.key_prefix,
            "COUNCIL_JOB_TIMEOUT_S": "6",
            "COUNCIL_WORKER_METRICS_PORT": "0",
            "COUNCIL_CHECK_UPDATE_INTERVAL_S": "0",
            "COUNCIL_CONTENT_PACING_S": "0",
            "COUNCIL_MAX_RETRIES": "0",
            "COUNCIL_CALL_DEADLINE_S": "5",
        }
    )
    return env


def start_worker(settings: Settings, log: Path, metrics_port: int = 0) -> subprocess.Popen[bytes]:
    env = worker_env(settings) | {"COUNCIL_WORKER_METRICS_PORT": str(metrics_port)}
    return subprocess.Popen(
        [COUNCIL, "worker"], env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
async def test_sigkill_mid_deliberation_then_resume(
    tmp_path: Path, models: FakeModelServer, github: FakeGitHub
) -> None:
    seed_github(github, KEYS[1])
    models.default(CouncilScript(latency_s=LATENCY_S, first_token_s=0.1).reply)
    settings = app_settings(tmp_path, models, github, KEYS[0])
    log = tmp_path / "worker.log"
    async with running_app(settings, worker=False) as app:
        first = start_worker(settings, log)
        comment_id = github.add_comment(REPO, PR, "/council", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council", comment_id=comment_id))

        def discussing() -> bool:
            # The engine starts the discussion only once every assessment is in the ledger.
            return any(c.request.output_name == "submit_discussion" for c in models.calls)

        await eventually(discussing, timeout=60, what="the discussion to start")
        killed_at = time.monotonic()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        # Finished: answered in full before the kill (a streamed answer cut by the kill
        # never reached the worker, so asking again is right).
        finished_before = Counter(
            c.label for c in models.calls if c.status == 200 and c.done and c.ended_at <= killed_at
        )
        assert github.check_runs(REPO) and github.check_runs(REPO)[0].status != "completed"

        port = free_port()
        second = start_worker(settings, log, metrics_port=port)
        try:
            await eventually(
                lambda: [r for r in github.check_runs(REPO) if r.status == "completed"],
                timeout=90,
                what="the resumed deliberation's check run",
            )
            # The worker serves its own /metrics (the web process cannot see its counters).
            async with httpx.AsyncClient() as http:
                metrics = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
        finally:
            second.terminate()
            second.wait(timeout=20)

    (run,) = github.check_runs(REPO)
    assert run.status == "completed" and run.conclusion == "success", log.read_text()[-3000:]
    advisories = [c for c in github.comments(REPO, PR) if c.user == github.app_login]
    assert len(advisories) == 1
    answered = Counter(c.label for c in models.calls if c.status == 200)
    repeated = {label for label in finished_before if answered[label] > 1}
    assert repeated == set(), f"finished calls made again: {repeated}"
    assert sum(finished_before.values()) >= 3  # every seat's assessment survived the kill
    assert answered["chair/submit_synthesis"] == 1
    assert 'council_jobs_total{function="deliberate",state="done"} 1.0' in metrics
