"""The App's commands as an operator runs them: start-up checks and `council replay`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.council_answers import CouncilScript
from tests.support.github_server import app_keypair, run_fake_github
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    PR,
    REPO,
    SECRET,
    app_settings,
    fixture,
    running_app,
    seed_github,
)

COUNCIL = str(Path(sys.executable).with_name("council"))


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "COUNCIL_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(extra)
    return env


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_a_missing_setting_stops_start_up_naming_it(command: str) -> None:
    done = subprocess.run(
        [COUNCIL, command],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(GITHUB_APP_ID="12"),
    )
    assert done.returncode == 2
    assert "GITHUB_PRIVATE_KEY" in done.stderr and "GITHUB_WEBHOOK_SECRET" in done.stderr
    assert "GITHUB_APP_ID" not in done.stderr  # it is set


async def replay(payload: Path, url: str, secret: str) -> tuple[int, str]:
    # An asyncio subprocess: the server under test runs in this same event loop.
    process = await asyncio.create_subprocess_exec(
        COUNCIL,
        "replay",
        str(payload),
        "--event",
        "ping",
        "--url",
        url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=clean_env(GITHUB_WEBHOOK_SECRET=secret),
    )
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode()


async def test_replay_signs_and_posts_a_payload(tmp_path: Path, models: FakeModelServer) -> None:
    payload = tmp_path / "ping.json"
    payload.write_text(json.dumps(fixture("ping/with-app_id.payload.json")))
    private, _ = app_keypair()
    with run_fake_github() as gh:
        settings = app_settings(tmp_path, models, gh, private)
        async with running_app(settings, worker=False) as app:
            url = f"{app.url}/webhooks/github"
            good = await replay(payload, url, SECRET)
            bad = await replay(payload, url, "not-the-secret")
    assert good[0] == 0 and good[1].startswith("200"), good[1]
    assert bad[0] == 1 and bad[1].startswith("401"), bad[1]


def test_review_a_pull_request_prints_and_posts_nothing(
    tmp_path: Path, models: FakeModelServer
) -> None:
    models.default(CouncilScript().reply)
    with run_fake_github() as gh:
        seed_github(gh, app_keypair()[1])
        gh.add_token("ghp_testtoken0123456789abcdef0123456789ab", login="reviewer")
        env = clean_env(
            GITHUB_TOKEN="ghp_testtoken0123456789abcdef0123456789ab",
            GITHUB_API_URL=gh.url,
            ANTHROPIC_API_KEY="test-key",
            ANTHROPIC_BASE_URL=models.anthropic_url,
            OPENAI_API_KEY="test-key",
            OPENAI_BASE_URL=models.openai_url,
            COUNCIL_MAX_RETRIES="0",
            DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",
        )
        done = subprocess.run(
            [COUNCIL, "review", "--pr", f"{REPO}#{PR}", "--json", "--protocol", "quick"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        bad = subprocess.run(
            [COUNCIL, "review", "--pr", "not-a-pr"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        missing = subprocess.run(
            [COUNCIL, "review", "--pr", f"{REPO}#99"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        posted = [c for c in gh.calls if c.method != "GET"]
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["resolution"] == "APPROVED" and len(result["seats"]) == 3
    assert any('password == "admin"' in c.request.system_text for c in models.calls)
    assert posted == []  # nothing is posted: no comment, no check run, no reaction
    assert "ghp_testtoken" not in done.stdout + done.stderr
    assert bad.returncode == 2 and "OWNER/REPO#NUMBER" in bad.stderr
    assert missing.returncode == 2 and f"cannot read {REPO}#99" in missing.stderr
