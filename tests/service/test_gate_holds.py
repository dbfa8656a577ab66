"""The merge gate holds (end to end: uvicorn, arq, Redis, the fake GitHub and model APIs).

GitHub passes a required check whose conclusion is `success`, `neutral` or `skipped`, and
every new head gets a new check run. So a pull request the council rejected must stay
blocked through whatever comes next without a verdict: a merge of the base branch (nothing
new to review), a push while every model fails, a cost cap, a benign push while its critical
finding is still open. And a verdict must reach the check run whatever GitHub does with the
comment: a missing permission, a GitHub that keeps failing, a long rate limit.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bot.settings import Settings
from bot.store.db import Database
from bot.store.deliberations import DeliberationStatus, latest_for_pr
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair, tree_diff
from tests.support.model_server import FakeModelServer, Fault
from tests.support.service import (
    AUTHOR,
    PR,
    REPO,
    App,
    app_settings,
    comment_event,
    completed,
    eventually,
    pull_request_event,
    running_app,
    seed_github,
    unique_sha,
)

KEYS = app_keypair()
SEAT = "Correctness Reviewer"  # seated on every board
MARKER = "<!-- pr-council:advisory -->"
COMMENTS = rf"/repos/{REPO}/issues/{PR}/comments"
PASSING = {"success", "neutral", "skipped"}

BASE: dict[str, str | bytes] = {
    "README.md": "# Calc\n",
    "app/__init__.py": "",
    "app/calc.py": "def add(a, b):\n    return a + b\n",
}
HEAD1: dict[str, str | bytes] = {
    **BASE,
    "app/calc.py": "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n",
}
# A push that adds a doc file only: nothing fixes the division.
HEAD2: dict[str, str | bytes] = {**HEAD1, "docs/divide.md": "Divide two numbers.\n"}
CRITICAL = {
    "severity": "critical",
    "path": "app/calc.py",
    "start_line": 6,
    "end_line": None,
    "title": "Division by zero crashes the request",
    "detail": "divide(a, 0) raises ZeroDivisionError.",
    "suggestion": None,
}


def bytes_of(files: dict[str, str | bytes]) -> dict[str, bytes]:
    return {p: c.encode() if isinstance(c, str) else c for p, c in files.items()}


def pr_diff(head: dict[str, str | bytes]) -> str:
    return tree_diff(bytes_of(BASE), bytes_of(head))


def seed(gh: FakeGitHub) -> tuple[str, str]:
    h1, h2 = unique_sha(), unique_sha()
    seed_github(gh, KEYS[1], labels=("architecture",))
    gh.set_files(REPO, "main", BASE)
    gh.add_pull(
        REPO,
        PR,
        title="Division",
        body="Adds divide.",
        head_sha=h1,
        diff=pr_diff(HEAD1),
        files_at_head=HEAD1,
        labels=("architecture",),
        user=AUTHOR,
        commits=("Add divide",),
    )
    return h1, h2


def advisories(gh: FakeGitHub) -> list[Any]:
    return [c for c in gh.comments(REPO, PR) if c.user == gh.app_login and MARKER in c.body]


async def command(gh: FakeGitHub, app: App, text: str = "/council quick") -> None:
    done = len(completed(gh))
    comment_id = gh.add_comment(REPO, PR, text, user=AUTHOR)
    response = await app.deliver("issue_comment", comment_event(text, comment_id=comment_id))
    assert response.status_code == 202, response.text
    await eventually(lambda: len(completed(gh)) > done, what="the check run", timeout=60)


async def pushed(gh: FakeGitHub, app: App, sha: str) -> Any:
    done = len(completed(gh))
    response = await app.deliver("pull_request", pull_request_event("synchronize", sha=sha))
    assert response.status_code == 202, response.text
    await eventually(lambda: len(completed(gh)) > done, what="the push's check run", timeout=60)
    (run,) = [r for r in gh.check_runs(REPO) if r.head_sha == sha]
    return run


async def rejected(gh: FakeGitHub, app: App, script: CouncilScript, h1: str) -> None:
    """The first review: a critical finding, and the council rejects."""
    script.findings = {SEAT: [CRITICAL]}
    script.verdict = "REJECT"
    await command(gh, app)
    (run,) = completed(gh)
    assert run.head_sha == h1 and run.conclusion == "failure", run.title


async def test_a_rejected_pull_request_stays_blocked_through_a_merge_of_the_base_branch(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    h1, h2 = seed(gh)
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await rejected(gh, app, script, h1)
        calls = len(models.calls)
        # GitHub's "Update branch": main moved on, and the PR merges it.
        main = {**BASE, "README.md": "# Calc\n\nNow documented.\n"}
        gh.set_files(REPO, "main", main)
        gh.push(
            REPO,
            PR,
            head_sha=h2,
            files_at_head={**HEAD1, **main, "app/calc.py": HEAD1["app/calc.py"]},
            diff=pr_diff(HEAD1),
            commits=("Merge branch 'main' into feature",),
            base_merged=True,
        )
        run = await pushed(gh, app, h2)

    assert len(models.calls) == calls  # nothing new to review: no model call
    assert run.conclusion == "failure" and run.conclusion not in PASSING
    title = run.title or ""
    assert title.startswith(f"Carried from {h1[:7]}: ") and "Rejected" in title, title
    summary = run.summary or ""
    assert f"The verdict given on {h1[:7]} stands" in summary
    assert "nothing to review beyond a merge of the base branch" in summary
    assert "Division by zero crashes the request" in (run.text or "")
    assert run.annotations == []  # its lines were read at the other head


async def test_a_carried_verdict_carries_the_original_head(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """Two base merges in a row: the second still names the head the verdict was given on."""
    gh = fake_github
    h1, h2 = seed(gh)
    h3 = unique_sha()
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await rejected(gh, app, script, h1)
        for n, sha in enumerate((h2, h3)):
            main = {**BASE, "README.md": f"# Calc\n\nRevision {n}.\n"}
            gh.set_files(REPO, "main", main)
            gh.push(
                REPO,
                PR,
                head_sha=sha,
                files_at_head={**HEAD1, **main, "app/calc.py": HEAD1["app/calc.py"]},
                diff=pr_diff(HEAD1),
                commits=("Merge branch 'main' into feature",),
                base_merged=True,
            )
            run = await pushed(gh, app, sha)
    assert run.head_sha == h3 and run.conclusion == "failure"
    assert (run.title or "").startswith(f"Carried from {h1[:7]}: "), run.title


async def test_a_rejected_pull_request_stays_blocked_when_every_model_fails(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    h1, h2 = seed(gh)
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await rejected(gh, app, script, h1)
        models.on(reply=Fault.server_error())  # a provider outage
        gh.push(REPO, PR, head_sha=h2, files_at_head=HEAD2, diff=pr_diff(HEAD2))
        run = await pushed(gh, app, h2)
    assert run.conclusion == "failure", run.title
    assert (run.title or "").startswith("No verdict: the council could not convene"), run.title
    assert "re-run the review" in (run.summary or "")


async def test_a_benign_push_with_the_critical_finding_still_open_stays_blocked(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """The re-review of a doc-only push approves; the earlier critical finding is still
    open, so the check fails, and the comment lists it as still open."""
    gh = fake_github
    h1, h2 = seed(gh)
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await rejected(gh, app, script, h1)
        script.findings, script.verdict = {}, "APPROVE"
        gh.push(
            REPO,
            PR,
            head_sha=h2,
            files_at_head=HEAD2,
            diff=pr_diff(HEAD2),
            commits=("Document divide",),
        )
        run = await pushed(gh, app, h2)

    assert run.conclusion == "failure", (run.title, run.summary)
    title = run.title or ""
    assert title.startswith(
        "Blocked by an open critical finding: Division by zero crashes the request"
    ), title
    assert f"raised at {h1[:7]} and still open" in (run.summary or "")
    (comment,) = advisories(gh)
    assert "check `failure`" in comment.body
    assert "Division by zero crashes the request" in comment.body


async def test_a_per_pr_cap_below_one_call_ends_without_a_verdict_that_blocks(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    settings = app_settings(tmp_path, models, gh, KEYS[0], max_pr_cost_usd=0.000_001)
    async with running_app(settings) as app:
        await command(gh, app)
    (run,) = completed(gh)
    assert run.conclusion == "failure", run.title
    assert (run.title or "").startswith("No verdict: stopped at the cost limit"), run.title
    assert "COUNCIL_MAX_PR_COST_USD" in (run.summary or "")


async def test_a_failed_job_blocks_and_says_what_to_fix(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """A typo in `/council board +persona` fails the job: no verdict, and it says so."""
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await command(gh, app, "/council board +apsec-reviewer")
    (run,) = completed(gh)
    assert run.conclusion == "failure", run.title
    assert (run.title or "").startswith("No verdict: "), run.title
    assert "apsec-reviewer" in f"{run.title}\n{run.summary}"
    assert not models.calls


# -- a verdict is never stranded ---------------------------------------------------------


async def latest_status(settings: Settings) -> tuple[str, str | None]:
    db = Database(settings.database_url)
    await db.connect()
    try:
        record = await latest_for_pr(db, REPO, PR)
    finally:
        await db.dispose()
    assert record is not None
    return record.status, record.conclusion


async def status_becomes(settings: Settings, status: DeliberationStatus) -> None:
    deadline = time.monotonic() + 20
    while (await latest_status(settings))[0] != status.value:
        assert time.monotonic() < deadline, f"the deliberation never became {status.value}"
        await asyncio.sleep(0.1)


def last_model_call_to_completion(gh: FakeGitHub, models: FakeModelServer) -> float:
    """Seconds from the council's last model answer to the request that completed the
    check run (both clocks are this process's monotonic one)."""
    completing = [
        c
        for c in gh.calls_to("PATCH", rf"/repos/{REPO}/check-runs/\d+")
        if (c.json or {}).get("status") == "completed"
    ]
    assert completing, "the check run was never completed"
    return completing[0].time - max(c.ended_at for c in models.calls)


async def test_a_forbidden_comment_still_completes_the_check_run_with_the_verdict(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """An installation without "Issues: write": 403 on every comment creation. The check
    run completes with the verdict, names the missing permission, and nothing is retried."""
    gh = fake_github
    seed(gh)
    script = CouncilScript()
    script.findings = {SEAT: [CRITICAL]}
    script.verdict = "REJECT"
    models.default(script.reply)
    gh.fail(
        "POST",
        COMMENTS,
        status=403,
        body={
            "message": "Resource not accessible by integration",
            "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
            "status": "403",
        },
        times=None,
        when=lambda request: MARKER in (request.json or {}).get("body", ""),
    )
    settings = app_settings(tmp_path, models, gh, KEYS[0])
    async with running_app(settings) as app:
        await command(gh, app)
    (run,) = completed(gh)
    assert run.conclusion == "failure" and (run.title or "").startswith("Rejected"), run.title
    summary = run.summary or ""
    assert "Issues: write" in summary and "403" in summary
    assert "Division by zero crashes the request" in summary + (run.text or "")
    assert advisories(gh) == []
    await status_becomes(settings, DeliberationStatus.COMPLETED)
    assert await latest_status(settings) == (DeliberationStatus.COMPLETED.value, "failure")
    assert last_model_call_to_completion(gh, models) < 60


async def test_a_comment_github_keeps_failing_leaves_the_verdict_on_the_check_run_in_a_minute(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """At the defaults a user gets (a three-minute retry budget for each GitHub call,
    content pacing, progress updates): a 502 on every comment creation. The check run
    carries the verdict within 60 s of the council's last answer; the comment waits for
    the background job."""
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    gh.fail("POST", COMMENTS, status=502, times=None)
    defaults = Settings(_env_file=None).model_dump(
        include={"github_retry_budget_s", "content_pacing_s", "check_update_interval_s"}
    )
    settings = app_settings(tmp_path, models, gh, KEYS[0], **defaults)
    assert settings.github_retry_budget_s == 180.0 and settings.publish_retry_s == 60.0
    started = time.monotonic()
    async with running_app(settings) as app:
        comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
        await eventually(lambda: completed(gh), what="the check run", timeout=90)
        waited = time.monotonic() - started
        await status_becomes(settings, DeliberationStatus.PUBLISH_PENDING)
        status, conclusion = await latest_status(settings)
    (run,) = completed(gh)
    assert run.conclusion == "success", run.title
    took = last_model_call_to_completion(gh, models)
    print(f"verdict on the check run {took:.1f} s after the last model answer")
    assert took < 60, waited
    assert "is not on the pull request yet" in (run.summary or "")
    assert "posted again in about 60 s" in (run.summary or "")
    assert (status, conclusion) == (DeliberationStatus.PUBLISH_PENDING.value, "success")


async def test_a_long_rate_limit_on_the_comment_completes_the_check_and_posts_it_later(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """A secondary rate limit asking 600 s on the comment: the check run is complete at
    once; the comment follows when the limit lets it (a shortened retry as an addition)."""
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    gh.rate_limit("POST", COMMENTS, retry_after=600)
    settings = app_settings(tmp_path, models, gh, KEYS[0], publish_retry_s=0.5)
    async with running_app(settings) as app:
        await command(gh, app)
        (run,) = completed(gh)
        assert run.conclusion == "success" and advisories(gh) == []
        assert "rate limit" in (run.summary or "")
        assert last_model_call_to_completion(gh, models) < 60
        await status_becomes(settings, DeliberationStatus.PUBLISH_PENDING)  # waits 600 s
