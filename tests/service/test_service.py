"""Service tests: a webhook in, a comment and a check run out (docs/architecture.md, "Testing")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.council.advisory import Advisory
from bot.store.db import Database
from bot.store.deliberations import latest_for_pr
from bot.store.history import PersonaStats, usage_stats
from bot.store.installations import add_cost, get_installation
from bot.store.outcomes import get_outcome
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    DIFF,
    FILES,
    HEAD,
    PR,
    REPO,
    App,
    app_settings,
    check_run_event,
    comment_event,
    completed,
    drained,
    eventually,
    fixture,
    pull_request_event,
    running_app,
    seed_github,
    unique_sha,
)

KEYS = app_keypair()


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as running:
        yield running


async def test_council_command_posts_one_comment_and_one_check_run(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
    response = await app.deliver(
        "issue_comment", comment_event("/council quick", comment_id=comment_id)
    )
    assert response.status_code == 202, response.text
    await eventually(lambda: completed(gh), what="a completed check run")
    (run,) = gh.check_runs(REPO)
    assert run.name == "Council" and run.head_sha == HEAD
    assert run.conclusion == "success" and "Approved" in (run.title or "")
    comments = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    assert len(comments) == 1 and "<!-- pr-council:advisory -->" in comments[0].body
    assert run.details_url and str(comments[0].id) in run.details_url
    assert [r.content for r in gh.reactions(comment_id)] == ["eyes"]
    assert {a["identifier"] for a in run.actions} == {"reconvene", "debate"}
    # The summary followed the phases while the council worked.
    progress = [
        c.json
        for c in gh.calls_to("PATCH", r"/repos/.+/check-runs/\d+")
        if c.json and "Phases so far" in str(c.json.get("output", {}).get("summary"))
    ]
    assert progress and all(p.get("status", "in_progress") == "in_progress" for p in progress)
    assert all(c.api_version == "2022-11-28" for c in gh.calls)
    names = [c.request.output_name for c in models.calls]
    assert names.count("submit_assessment") == 3  # quick: three seats
    assert any('password == "admin"' in c.request.system_text for c in models.calls)
    assert AUTHOR


async def test_unauthorized_commenter_gets_one_reply_per_hour(app: App, gh: FakeGitHub) -> None:
    gh.set_permission(REPO, "visitor", "read")
    for _ in range(2):
        comment_id = gh.add_comment(REPO, PR, "/council", user="visitor")
        response = await app.deliver(
            "issue_comment", comment_event("/council", comment_id=comment_id, sender="visitor")
        )
        assert response.status_code == 202
        await eventually(lambda: len(_replies(gh)) >= 1, what="the refusal")
    await drained(app)
    assert len(_replies(gh)) == 1 and "write or admin" in _replies(gh)[0].body
    assert gh.check_runs(REPO) == []


async def test_bot_sender_is_ignored(app: App, gh: FakeGitHub, models: FakeModelServer) -> None:
    comment_id = gh.add_comment(REPO, PR, "/council", user="dependabot[bot]", user_type="Bot")
    response = await app.deliver(
        "issue_comment",
        comment_event(
            "/council", comment_id=comment_id, sender="dependabot[bot]", sender_type="Bot"
        ),
    )
    assert response.status_code in (200, 202) and "ignored" in response.text
    await drained(app)
    assert gh.check_runs(REPO) == [] and models.calls == []


async def test_ten_copies_of_one_delivery_make_one_job(app: App, gh: FakeGitHub) -> None:
    comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
    payload = comment_event("/council quick", comment_id=comment_id)
    responses = await asyncio.gather(
        *(app.deliver("issue_comment", payload, delivery="same-delivery-id") for _ in range(10))
    )
    assert all(r.status_code in (200, 202) for r in responses)
    assert sum("queued" in r.text for r in responses) == 1
    await eventually(lambda: completed(gh), what="the check run")
    await drained(app)
    assert len(gh.check_runs(REPO)) == 1
    assert len([c for c in gh.comments(REPO, PR) if c.user == gh.app_login]) == 1


def _replies(gh: FakeGitHub) -> list[Any]:
    return [
        c
        for c in gh.comments(REPO, PR)
        if c.user == gh.app_login and "<!-- pr-council:advisory -->" not in c.body
    ]


@pytest.fixture
def head() -> str:
    return unique_sha()


@pytest.fixture
def labelled(fake_github: FakeGitHub, head: str) -> FakeGitHub:
    seed_github(fake_github, KEYS[1], labels=("architecture",), head=head)
    return fake_github


async def test_architecture_label_convenes_the_board(
    tmp_path: Path, models: FakeModelServer, labelled: FakeGitHub, head: str
) -> None:
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, labelled, KEYS[0])) as app:
        bug = await app.deliver(
            "pull_request", pull_request_event("labeled", label="bug", sha=head)
        )
        assert bug.status_code == 202
        await drained(app)
        assert labelled.check_runs(REPO) == []  # not a trigger label
        # ...and skipped before reading the repo's personas.
        assert not labelled.calls_to("GET", rf"/repos/{REPO}/contents/\.github/council/agents")
        response = await app.deliver(
            "pull_request", pull_request_event("labeled", label="architecture", sha=head)
        )
        assert response.status_code == 202
        await eventually(lambda: completed(labelled), what="the board's check run")
    names = [c.request.output_name for c in models.calls]
    assert "submit_vote" in names and "submit_discussion" in names  # board, not quick


async def test_drafts_are_skipped_unless_configured(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub, head: str
) -> None:
    seed_github(fake_github, KEYS[1], labels=("architecture",), draft=True, head=head)
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, fake_github, KEYS[0])) as app:
        await app.deliver(
            "pull_request",
            pull_request_event("labeled", label="architecture", draft=True, sha=head),
        )
        await drained(app)
    assert fake_github.check_runs(REPO) == [] and models.calls == []


async def test_fork_pull_request(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    seed_github(fake_github, KEYS[1], fork=True)
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, fake_github, KEYS[0])) as app:
        comment_id = fake_github.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
        await eventually(lambda: completed(fake_github), what="the check run")
    (run,) = fake_github.check_runs(REPO)
    assert run.conclusion == "success" and run.head_sha == HEAD


async def test_invalid_repo_config_is_reported_and_defaults_used(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    gh.set_files(
        REPO,
        "main",
        {
            "app/auth.py": FILES["app/auth.py"],
            ".github/council.yml": "protocol: banana\ngate: advisory\n",
        },
    )
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        comment_id = gh.add_comment(REPO, PR, "/council", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council", comment_id=comment_id))
        await eventually(lambda: completed(gh), what="the check run")
    (run,) = gh.check_runs(REPO)
    assert "`protocol`" in (run.summary or "") and "Input should be" in (run.summary or "")
    assert "submit_vote" in [c.request.output_name for c in models.calls]  # default: board


async def test_secondary_rate_limit_is_waited_out(app: App, gh: FakeGitHub) -> None:
    gh.rate_limit("POST", f"/repos/{REPO}/issues/{PR}/comments", retry_after=1)
    comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
    await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
    await eventually(lambda: completed(gh), what="the check run")
    posts = gh.calls_to("POST", f"/repos/{REPO}/issues/{PR}/comments")
    assert [c.status for c in posts] == [403, 201]
    assert posts[1].time - posts[0].time >= 0.9


class _Shares(dict[str, list[dict[str, Any]]]):
    """Findings by persona: each persona asked gets the next `size` of `findings` (the
    same share each time it is asked), the last one the rest."""

    def __init__(self, findings: list[dict[str, Any]], size: int) -> None:
        super().__init__()
        self._findings, self._size = findings, size

    def get(self, persona: str, default: Any = None) -> list[dict[str, Any]]:
        if persona not in self:
            start = len(self) * self._size
            self[persona] = self._findings[start : start + self._size]
        return self[persona]


async def test_an_over_long_advisory_still_fits(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    finding = {
        "severity": "major",
        "path": "app/auth.py",
        "start_line": 2,
        "end_line": 3,
        "title": "Hard-coded admin password bypasses authentication",
        # Long and never repeating itself (a run of one character is a model's loop, which
        # the adapter cuts: bot/providers/repetition.py).
        "detail": " ".join(f"w{n * 7919 % 100_003}" for n in range(500)),
        "suggestion": "Remove it.",
    }
    words = [f"{a}{b}" for a in "bcdfghjklm" for b in ("ax", "ex", "ix", "ox", "ux", "yz")]
    many = [
        dict(finding, start_line=10 * i, end_line=10 * i, title=f"{words[i]} defect")
        for i in range(1, 60)
    ]
    many = [dict(f, path="app/rules.py") for f in many]
    # A new 600-line file: every finding is anchored on a line the diff adds, so each one is
    # an annotation (59: more than GitHub takes in one request).
    rules = "".join(f"RULE_{i} = {i}\n" for i in range(1, 601))
    added = "".join(f"+{line}\n" for line in rules.splitlines())
    diff = (
        DIFF + "diff --git a/app/rules.py b/app/rules.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/app/rules.py\n@@ -0,0 +1,600 @@\n" + added
    )
    gh.add_pull(
        REPO,
        PR,
        title="Fix login",
        body="Makes login faster.",
        head_sha=HEAD,
        diff=diff,
        files_at_head={**FILES, "app/rules.py": rules},
        user=AUTHOR,
        commits=("Fix login",),
    )
    # An assessment holds at most 15 findings (its schema's bound): each seat of the board
    # raises its own share, so four of its five raise the 59 between them.
    gh.set_files(
        REPO, "main", {**FILES, ".github/council.yml": "board:\n  default_size: 5\n  min_size: 5\n"}
    )
    script = CouncilScript(findings=_Shares(many, 15))
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        comment_id = gh.add_comment(REPO, PR, "/council board", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council board", comment_id=comment_id))
        await eventually(lambda: completed(gh), what="the check run")
    (comment,) = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    assert len(comment.body) < 65_536
    (run,) = gh.check_runs(REPO)
    assert len(run.summary or "") < 65_535 and len(run.annotations) == 59


async def test_cancel_stops_the_running_deliberation(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript(latency_s=1.5).reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        start = gh.add_comment(REPO, PR, "/council", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council", comment_id=start))
        await eventually(lambda: gh.check_runs(REPO), what="the check run")
        stop = gh.add_comment(REPO, PR, "/council cancel", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council cancel", comment_id=stop))
        await eventually(lambda: completed(gh), what="the cancelled check run")
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "cancelled" and "Cancelled by @Codertocat" in (run.summary or "")
    assert [
        c
        for c in gh.comments(REPO, PR)
        if c.user == gh.app_login and "<!-- pr-council:advisory -->" in c.body
    ] == []


async def test_a_new_push_supersedes_the_running_deliberation(
    tmp_path: Path, models: FakeModelServer, labelled: FakeGitHub, head: str
) -> None:
    models.default(CouncilScript(latency_s=1.5).reply)
    newer = unique_sha()
    async with running_app(app_settings(tmp_path, models, labelled, KEYS[0])) as app:
        await app.deliver(
            "pull_request", pull_request_event("labeled", label="architecture", sha=head)
        )
        await eventually(lambda: labelled.check_runs(REPO), what="the first check run")
        labelled.push(REPO, PR, head_sha=newer)
        await app.deliver("pull_request", pull_request_event("synchronize", sha=newer))
        await eventually(lambda: len(completed(labelled)) == 2, timeout=60, what="both check runs")
    runs = {r.head_sha: r for r in labelled.check_runs(REPO)}
    assert runs[head].conclusion == "cancelled" and "Superseded" in (runs[head].summary or "")
    assert runs[newer].conclusion == "success"


async def test_rerun_and_full_debate_buttons_convene_again(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
    await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
    first = (await eventually(lambda: completed(gh), what="the first check run"))[0]
    await app.deliver("check_run", check_run_event("rerequested", first.id))
    await eventually(lambda: len(completed(gh)) == 2, what="the re-run")
    models.default(CouncilScript(panelists=2).reply)
    await app.deliver(
        "check_run", check_run_event("requested_action", first.id, identifier="debate")
    )
    await eventually(lambda: len(completed(gh)) == 3, what="the debate")
    assert "submit_panel" in [c.request.output_name for c in models.calls]
    sticky = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    assert len(sticky) == 1  # updated in place each time


async def test_help_replies_with_the_grammar_and_config(app: App, gh: FakeGitHub) -> None:
    comment_id = gh.add_comment(REPO, PR, "/council help", user=AUTHOR)
    await app.deliver("issue_comment", comment_event("/council help", comment_id=comment_id))
    (reply,) = await eventually(lambda: _replies(gh), what="the help reply")
    assert "/council cancel" in reply.body and "protocol: board" in reply.body


async def test_closing_records_the_outcome(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    """A `quick` review (no vote) of a PR that then merges: the seat whose finding the push
    fixed held up by it, the approving seats by their assessment (`bot.review.outcomes`)."""
    script = CouncilScript(
        findings={
            "Application Security Reviewer": [
                {
                    "severity": "critical",
                    "path": "app/auth.py",
                    "start_line": 2,
                    "end_line": 3,
                    "title": "Hard-coded admin password",
                    "detail": "Anyone can log in.",
                    "suggestion": None,
                }
            ]
        }
    )
    models.default(script.reply)
    comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
    await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
    await eventually(lambda: completed(gh), what="the advisory")
    fixed = unique_sha()
    gh.push(
        REPO,
        PR,
        head_sha=fixed,
        diff=DIFF.replace('"admin"', '"never"'),
        files_at_head={**FILES, "app/auth.py": FILES["app/auth.py"].replace('"admin"', '"never"')},
    )
    gh.close_pull(REPO, PR, merged=True)
    await app.deliver("pull_request", pull_request_event("closed", sha=fixed, merged=True))
    await drained(app)
    db = Database(app.settings.database_url)
    await db.connect()
    record = await latest_for_pr(db, REPO, PR)
    assert record is not None
    outcome = await eventually_async(lambda: get_outcome(db, record.id))
    assert outcome.merged is True
    assert outcome.addressed_findings == ["app/auth.py:2-3:Hard-coded admin password"]
    stats = await eventually_async(lambda: _scored_personas(db))
    await db.dispose()
    advisory = Advisory.model_validate_json(record.advisory_json or "")
    assert advisory.protocol == "quick" and len(advisory.valid_seats()) == 3
    assert all(s.vote is None and s.assessment for s in advisory.valid_seats())
    held = {p.persona_id: (p.held_up, p.outcomes) for p in stats}
    assert held == {s.persona_id: (1, 1) for s in advisory.valid_seats()}
    bases = {p.persona_id: {b: n for b, n in p.bases.items() if n} for p in stats}
    assert bases.pop("appsec-reviewer") == {"finding-addressed": 1}
    assert bases and all(b == {"assessment": 1} for b in bases.values())


async def _scored_personas(db: Database) -> list[PersonaStats]:
    return [p for p in (await usage_stats(db, repos=[REPO])).personas if p.outcomes]


async def eventually_async(fetch: Any, timeout: float = 20.0) -> Any:
    for _ in range(int(timeout / 0.05)):
        value = await fetch()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")


async def test_daily_cost_cap_stops_cleanly(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript().reply)
    settings = app_settings(tmp_path, models, gh, KEYS[0], max_daily_cost_usd=1.0)
    db = Database(settings.database_url)
    await db.connect()
    await add_cost(db, 1, datetime.now(UTC).date(), 1.5)  # today's budget is spent
    await db.dispose()
    async with running_app(settings) as app:
        comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
        await eventually(lambda: completed(gh), what="the check run")
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "failure" and "cost" in (run.title or "").lower()
    assert models.calls == []  # stopped before the first model call
    (comment,) = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    assert "cost" in comment.body.lower()


async def test_installation_events_are_recorded(app: App) -> None:
    response = await app.deliver("installation", fixture("installation/created.payload.json"))
    assert response.status_code == 202
    await drained(app)
    db = Database(app.settings.database_url)
    await db.connect()
    installation = await get_installation(db, 957387)
    await db.dispose()
    assert installation is not None and installation.account == "Codertocat"
    assert installation.repositories == ["Codertocat/Hello-World"]


async def test_a_failed_job_still_completes_its_check_run(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    gh.fail("GET", rf"/repos/{REPO}/git/trees/.+", status=404, times=None)
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
        await eventually(lambda: completed(gh), what="the check run")
    (run,) = gh.check_runs(REPO)
    summary = run.summary or ""
    assert run.conclusion == "failure" and (run.title or "").startswith("No verdict: ")
    # A sentence for people: what failed and what to do, not the exception and its path.
    assert "could not read the repository's file tree from GitHub (not found" in summary
    assert "comment `/council` on the pull request to try again" in summary
    assert "ForgeNotFound" not in summary and "/repos/" not in summary


async def test_an_expired_job_still_completes_its_check_run(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    models.default(CouncilScript(latency_s=5.0).reply)
    settings = app_settings(tmp_path, models, gh, KEYS[0], job_timeout_s=2)
    async with running_app(settings) as app:
        comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
        await eventually(lambda: completed(gh), timeout=20, what="the check run")
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "failure" and "job timeout" in (run.summary or "")
