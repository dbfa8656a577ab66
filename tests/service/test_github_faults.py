"""GitHub faults, end to end (issue 9): the App rides out what passes, says what does not,
and never drops an advisory GitHub would not take.

The fake GitHub injects the faults (5xx for a while or for good, a secondary rate limit
with `retry-after`, 422 for a body it finds too long, revoked installation tokens); the
retry budget and waits are set through the same settings an operator has.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.store.db import Database
from bot.store.deliberations import DeliberationRecord, DeliberationStatus, latest_for_pr
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, FakeRequest, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    PR,
    REPO,
    App,
    app_settings,
    comment_event,
    completed,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()
MARKER = "<!-- pr-council:advisory -->"
PULL = rf"/repos/{REPO}/pulls/{PR}"
COMMENTS = rf"/repos/{REPO}/issues/{PR}/comments"
RUNS = rf"/repos/{REPO}/check-runs"
TOKENS = r"/app/installations/\d+/access_tokens"


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


def advisories(gh: FakeGitHub) -> list[Any]:
    return [c for c in gh.comments(REPO, PR) if c.user == gh.app_login and MARKER in c.body]


def replies(gh: FakeGitHub) -> list[Any]:
    return [c for c in gh.comments(REPO, PR) if c.user == gh.app_login and MARKER not in c.body]


async def command(app: App, gh: FakeGitHub, text: str = "/council quick") -> int:
    comment_id = gh.add_comment(REPO, PR, text, user=AUTHOR)
    response = await app.deliver("issue_comment", comment_event(text, comment_id=comment_id))
    assert response.status_code == 202, response.text
    return comment_id


async def latest(app: App) -> DeliberationRecord | None:
    db = Database(app.settings.database_url)
    await db.connect()
    try:
        return await latest_for_pr(db, REPO, PR)
    finally:
        await db.dispose()


async def status_becomes(app: App, status: DeliberationStatus, *, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = await latest(app)
        if record is not None and record.status == status:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the deliberation never became {status.value}")


def for_a_while(seconds: float) -> Callable[[FakeRequest], bool]:
    until = time.monotonic() + seconds
    return lambda _request: time.monotonic() < until


@pytest.mark.slow
async def test_fifteen_seconds_of_5xx_reading_the_pull_request_are_ridden_out(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript().reply)
    # The default budget (180 s); waits capped at 4 s so the test ends soon after the storm.
    settings = app_settings(tmp_path, models, gh, KEYS[0], github_retry_max_delay_s=4.0)
    async with running_app(settings) as app:
        gh.fail("GET", PULL, status=502, times=None, when=for_a_while(15))
        started = time.monotonic()
        await command(app, gh)
        await eventually(lambda: completed(gh), timeout=90, what="the check run")
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "success"
    assert len(advisories(gh)) == 1 and replies(gh) == []
    reads = [c for c in gh.calls_to("GET", PULL) if c.accept != "application/vnd.github.diff"]
    assert [c.status for c in reads][-1] == 200 and reads[-1].time - started >= 15
    assert sum(c.status == 502 for c in reads) >= 4  # tried again and again, backing off


async def test_a_storm_past_the_budget_on_reading_the_pull_request_gets_a_reply(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript().reply)
    settings = app_settings(tmp_path, models, gh, KEYS[0], github_retry_budget_s=2.0)
    async with running_app(settings) as app:
        gh.fail("GET", PULL, status=503, times=None)
        await command(app, gh)
        await eventually(lambda: replies(gh), what="the reply")
    (answer,) = replies(gh)
    assert answer.body.startswith(f"@{AUTHOR} The council could not read the pull request")
    assert "server error" in answer.body and "`/council`" in answer.body
    assert gh.check_runs(REPO) == [] and models.calls == []
    assert len(gh.calls_to("GET", PULL)) >= 2  # tried again before giving up


async def test_a_storm_past_the_budget_on_creating_the_check_run_leaves_nothing_running(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript().reply)
    settings = app_settings(tmp_path, models, gh, KEYS[0], github_retry_budget_s=2.0)
    async with running_app(settings) as app:
        gh.fail("POST", RUNS, status=502, times=None)
        started = time.monotonic()
        await command(app, gh)
        await status_becomes(app, DeliberationStatus.FAILED)
        assert time.monotonic() - started < 20
    assert [r for r in gh.check_runs(REPO) if r.status != "completed"] == []
    assert len(gh.calls_to("POST", RUNS)) >= 2 and models.calls == []
    assert advisories(gh) == []


async def test_a_storm_past_the_budget_on_creating_the_check_run_gets_a_reply(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript().reply)
    settings = app_settings(tmp_path, models, gh, KEYS[0], github_retry_budget_s=2.0)
    async with running_app(settings) as app:
        gh.fail("POST", RUNS, status=502, times=None)
        await command(app, gh)
        await eventually(lambda: replies(gh), timeout=20, what="the reply")
    (answer,) = replies(gh)
    assert answer.body.startswith(f"@{AUTHOR} The council could not create the check run")


async def test_a_comment_refused_as_too_long_is_shortened_and_posted(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript().reply)
    limit = 1500  # as if GitHub counted this advisory's characters far above `len`
    too_long = {
        "message": "Validation Failed",
        "errors": [
            {
                "resource": "IssueComment",
                "code": "unprocessable",
                "field": "data",
                "message": "Body is too long (maximum is 65536 characters)",
            }
        ],
        "documentation_url": "https://docs.github.com/rest",
        "status": "422",
    }
    gh.fail(
        "POST",
        COMMENTS,
        status=422,
        body=too_long,
        times=None,
        when=lambda request: len((request.json or {}).get("body", "")) > limit,
    )
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await command(app, gh)
        await eventually(lambda: completed(gh), what="the check run")
    posts = gh.calls_to("POST", COMMENTS)
    assert [c.status for c in posts][-1] == 201 and 422 in [c.status for c in posts]
    sizes = [len(c.json["body"]) for c in posts]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > limit >= sizes[-1]
    (comment,) = advisories(gh)
    assert comment.body.startswith(MARKER) and "Approved" in comment.body
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "success" and str(comment.id) in (run.details_url or "")


async def test_a_rate_limited_comment_is_posted_later_by_the_retry_job(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript().reply)
    settings = app_settings(
        tmp_path, models, gh, KEYS[0], github_retry_budget_s=1.0, publish_retry_s=0.5
    )
    async with running_app(settings) as app:
        gh.rate_limit("POST", COMMENTS, retry_after=3)  # longer than the budget: not waited
        await command(app, gh)
        await status_becomes(app, DeliberationStatus.PUBLISH_PENDING)
        # The verdict is on the check run at once; it says the comment is coming.
        (run,) = completed(gh)
        assert run.conclusion == "success" and run.title.startswith("Approved")
        assert "rate limit" in (run.summary or "") and advisories(gh) == []
        await status_becomes(app, DeliberationStatus.COMPLETED)
    posts = gh.calls_to("POST", COMMENTS)
    assert [c.status for c in posts] == [403, 201]
    assert posts[1].time - posts[0].time >= 3  # the job waited out `retry-after`
    (comment,) = advisories(gh)
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "success" and str(comment.id) in (run.details_url or "")
    record = await latest(app)
    assert record is not None and record.comment_id == comment.id and record.advisory_json
    assert sum(c.request.output_name == "submit_assessment" for c in models.calls) == 3  # once


async def test_a_token_revoked_mid_job_is_replaced_and_a_later_job_works_at_once(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript().reply)
    revoked: list[bool] = []

    def revoke_once(_request: FakeRequest) -> bool:
        if not revoked:
            revoked.append(True)
            gh.expire_tokens()  # every token issued so far: 401 Bad credentials from now
        return False  # not a fault: the request goes on, and meets the revoked token

    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        gh.fail("POST", RUNS, status=500, times=None, when=revoke_once)
        start = time.monotonic()
        await command(app, gh)
        await eventually(lambda: completed(gh), what="the first check run")
        assert len(advisories(gh)) == 1
        mints = len(gh.calls_to("POST", TOKENS))
        since = time.monotonic()
        await command(app, gh)
        await eventually(lambda: len(completed(gh)) == 2, what="the second check run")
    first = [c for c in gh.calls if start <= c.time < since]
    assert [c.status for c in first if c.method == "POST" and c.path == RUNS] == [401, 201]
    renewal = [(c.method, c.status) for c in first if c.status == 401 or "access_tokens" in c.path]
    assert renewal[-2:] == [("POST", 401), ("POST", 201)]  # the 401, then a new token
    assert sum(c.status == 401 for c in gh.calls) == 1
    assert mints == 2  # the first token, and the one minted after the 401
    later = [c for c in gh.calls if c.time >= since]
    assert later and all(c.status != 401 for c in later)
    assert gh.calls_to("POST", TOKENS)[-1].time < since  # no new token: the renewed one
    assert all(r.conclusion == "success" for r in gh.check_runs(REPO))


async def test_a_kept_advisory_whose_retry_redis_lost_is_still_posted(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    """Redis restarted without its data while an advisory waited for its posting try: the
    reconciler finds the kept advisory (in the database) and schedules the try again."""
    models.default(CouncilScript().reply)
    settings = app_settings(
        tmp_path,
        models,
        gh,
        KEYS[0],
        github_retry_budget_s=1.0,
        publish_retry_s=600.0,  # the try is far off: only its loss could make it late
        reconcile_interval_s=1,
    )
    async with running_app(settings) as app:
        gh.rate_limit("POST", COMMENTS, retry_after=3)
        await command(app, gh)
        await status_becomes(app, DeliberationStatus.PUBLISH_PENDING)
        record = await latest(app)
        assert record is not None
        # The status is written before the try is enqueued: wait for the try itself. arq's
        # job keys are global to the Redis, which tests running beside this one share: only
        # this deliberation's try is ours to lose.
        lost: list[bytes] = []

        async def scheduled() -> bool:
            lost[:] = await app.redis.keys(f"arq:job:publish:{record.id}:*")
            return bool(lost)

        await eventually(scheduled, what="the deferred posting try")
        # The queue loses the try, as a Redis restart without its data would.
        await app.redis.delete(*lost)
        # ...and the kept advisory has waited longer than any try is ever deferred.
        await _age(settings.database_url, record.id, hours=2)
        # The verdict was on the check run at once; the comment comes with the lost try.
        assert completed(gh) and completed(gh)[0].conclusion == "success"
        await eventually(lambda: advisories(gh), timeout=40, what="the comment")
        await status_becomes(app, DeliberationStatus.COMPLETED)
    (comment,) = advisories(gh)
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "success" and str(comment.id) in (run.details_url or "")


async def _age(database_url: str, deliberation_id: str, *, hours: float) -> None:
    """Move a record's last change back in time (what waiting that long would leave)."""
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import update

    from bot.store.models import DeliberationRow

    db = Database(database_url)
    await db.connect()
    try:
        async with db.session() as session:
            await session.execute(
                update(DeliberationRow)
                .where(DeliberationRow.id == deliberation_id)
                .values(updated_at=datetime.now(UTC) - timedelta(hours=hours))
            )
    finally:
        await db.dispose()
