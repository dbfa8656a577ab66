"""Every way a review job can end, and the check run each one leaves.

A required check run is a merge gate: whatever happens, it must end completed (never stuck
in progress), it may be `success` only when the advisory was posted on the PR (or GitHub
refused the comment for good, which its summary says), and under
`gate: verdict` no ending without a verdict passes (`success`, `neutral` and `skipped` pass
a required check; every such ending here is `failure`, a cancellation `cancelled`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.store.db import Database
from bot.store.installations import add_cost
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer, Fault
from tests.support.service import (
    AUTHOR,
    FILES,
    PR,
    REPO,
    App,
    app_settings,
    comment_event,
    eventually,
    pull_request_event,
    running_app,
    seed_github,
    unique_sha,
)

KEYS = app_keypair()
MARKER = "<!-- pr-council:advisory -->"
BINARY_ONLY = (
    "diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\n"
    "Binary files a/logo.png and b/logo.png differ\n"
)


@dataclass
class Ending:
    conclusion: str  # of the last check run
    title: str  # words its title or summary must carry
    script: CouncilScript = field(default_factory=CouncilScript)
    settings: dict[str, Any] = field(default_factory=dict)
    prepare: Callable[[FakeGitHub, FakeModelServer, Any, str], Awaitable[None]] | None = None
    then: Callable[[App, FakeGitHub, str], Awaitable[None]] | None = None
    runs: int = 1  # check runs the PR ends with


async def spent_today(gh: FakeGitHub, models: FakeModelServer, settings: Any, head: str) -> None:
    db = Database(settings.database_url)
    await db.connect()
    await add_cost(db, 1, datetime.now(UTC).date(), 5.0)
    await db.dispose()


async def models_fail(gh: FakeGitHub, models: FakeModelServer, settings: Any, head: str) -> None:
    models.on(reply=Fault.server_error())


async def tree_missing(gh: FakeGitHub, models: FakeModelServer, settings: Any, head: str) -> None:
    gh.fail("GET", rf"/repos/{REPO}/git/trees/.+", status=404, times=None)


async def binary_only(gh: FakeGitHub, models: FakeModelServer, settings: Any, head: str) -> None:
    gh.add_pull(
        REPO,
        PR,
        title="New logo",
        body="",
        head_sha=head,
        diff=BINARY_ONLY,
        files_at_head={**FILES, "logo.png": b"\x89PNG\r\n"},
        user=AUTHOR,
    )


async def comment_forbidden(
    gh: FakeGitHub, models: FakeModelServer, settings: Any, head: str
) -> None:
    """An installation without "Issues: write": every comment creation is refused."""
    body = {"message": "Resource not accessible by integration", "status": "403"}
    gh.fail("POST", rf"/repos/{REPO}/issues/{PR}/comments", status=403, body=body, times=None)


async def cancel(app: App, gh: FakeGitHub, head: str) -> None:
    await eventually(lambda: gh.check_runs(REPO), what="the check run")
    stop = gh.add_comment(REPO, PR, "/council cancel", user=AUTHOR)
    await app.deliver("issue_comment", comment_event("/council cancel", comment_id=stop))


async def newer_push(app: App, gh: FakeGitHub, head: str) -> None:
    await eventually(lambda: gh.check_runs(REPO), what="the first check run")
    newer = unique_sha()
    gh.push(REPO, PR, head_sha=newer)
    await app.deliver("pull_request", pull_request_event("synchronize", sha=newer))


ENDINGS = {
    "approved": Ending("success", "Approved"),
    "rejected": Ending("failure", "Rejected", CouncilScript(vote="REJECT", verdict="REJECT")),
    "no quorum": Ending(
        "failure", "No verdict: the council could not convene", prepare=models_fail
    ),
    "a model's key missing": Ending(
        "failure",
        "No model was called: openai:gpt-5.4: OPENAI_API_KEY is not set",
        settings={"openai_api_key": None},
    ),
    "an endpoint unreachable": Ending(
        "failure",
        "cannot reach the provider at http://127.0.0.1:9/v1",
        settings={
            "models": ["box:qwen3-coder"],
            "endpoints": {"box": {"base_url": "http://127.0.0.1:9/v1", "local": True}},
        },
    ),
    "daily cap spent": Ending(
        "failure",
        "No verdict: stopped at the cost limit",
        settings={"max_daily_cost_usd": 1.0},
        prepare=spent_today,
    ),
    "nothing to review": Ending("failure", "No verdict: nothing to review", prepare=binary_only),
    "failed": Ending("failure", "No verdict: the deliberation failed", prepare=tree_missing),
    "expired": Ending(
        "failure", "job timeout", CouncilScript(latency_s=5.0), settings={"job_timeout_s": 2}
    ),
    "a cap below one call": Ending(
        "failure", "No verdict: stopped at the cost limit", settings={"max_pr_cost_usd": 1e-6}
    ),
    "comment refused": Ending("success", "Issues: write", prepare=comment_forbidden),
    "cancelled": Ending("cancelled", "Cancelled", CouncilScript(latency_s=1.5), then=cancel),
    "superseded": Ending(
        "success", "Approved", CouncilScript(latency_s=1.5), then=newer_push, runs=2
    ),
}


@pytest.mark.parametrize("name", list(ENDINGS))
async def test_every_ending_leaves_a_completed_check_run_that_tells_the_truth(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub, name: str
) -> None:
    ending = ENDINGS[name]
    gh = fake_github
    head = unique_sha()
    seed_github(gh, KEYS[1], labels=("architecture",), head=head)
    models.default(ending.script.reply)
    settings = app_settings(tmp_path, models, gh, KEYS[0], **ending.settings)
    if ending.prepare is not None:
        await ending.prepare(gh, models, settings, head)
    async with running_app(settings) as app:
        if name == "superseded":  # automatic reviews are the ones a push supersedes
            await app.deliver(
                "pull_request", pull_request_event("labeled", label="architecture", sha=head)
            )
        else:
            comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
            await app.deliver(
                "issue_comment", comment_event("/council quick", comment_id=comment_id)
            )
        if ending.then is not None:
            await ending.then(app, gh, head)
        await eventually(
            lambda: len([r for r in gh.check_runs(REPO) if r.status == "completed"]) == ending.runs,
            timeout=45,
            what="every check run to complete",
        )
    runs = gh.check_runs(REPO)
    assert len(runs) == ending.runs and all(r.status == "completed" for r in runs)
    last = runs[-1]
    assert last.conclusion == ending.conclusion, (last.title, last.summary)
    if name not in ("approved", "superseded", "comment refused"):  # no other passing verdict
        assert last.conclusion not in ("success", "neutral", "skipped")
    said = f"{last.title}\n{last.summary}"
    assert ending.title.lower() in said.lower(), said
    advisories = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login and MARKER in c.body]
    for run in runs:
        if run.conclusion == "success" and name != "comment refused":  # with the advisory
            assert advisories and run.details_url and str(advisories[0].id) in run.details_url
    if name == "superseded":
        assert runs[0].conclusion == "cancelled" and "Superseded" in (runs[0].summary or "")
    if name.startswith(("a model's key", "an endpoint")):
        assert not models.calls  # the preflight stopped it before any seat was called
