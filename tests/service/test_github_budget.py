"""A review's GitHub request budget, end to end (uvicorn, arq, Redis, the fakes).

A pull request changes 30 files of a repository of ~300, most of which import the changed
ones: the council still gets the importers as related files, and the whole review (admission,
check run, context, comment) stays within ~15 GitHub requests, because files come from one
tree, a few blobs and one archive of the head instead of a `contents` call each. A second
review of the same head reads its files from the blob cache; after a push changing one
file, that file's new blob is the only one read. With few requests left in the rate limit,
a review waits in the queue until the reset.
"""

from __future__ import annotations

import difflib
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import REGISTRY

from bot.pr.books import resumes
from bot.store.db import Database
from tests.support.council_answers import CouncilScript
from tests.support.diffs import diff_of
from tests.support.github_server import FakeGitHub, RecordedCall, app_keypair
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

KEYS = app_keypair()
HEAD = "b0d9e7" + "5" * 34
CHANGED = 30
BUDGET = 15


def module(i: int, *, head: bool, pushed: bool = False) -> str:
    body = f"def step{i}(x):\n    return x + {i}\n"
    body += f"\n\ndef extra{i}(x):\n    return step{i}(x) * 2\n" if head else ""
    return body + ("\n\nPUSHED = True\n" if pushed and i == 0 else "")


def user(j: int) -> str:
    i = j % CHANGED
    return f"from pkg import mod{i}\n\nIMPORTER_{j}_MARK = mod{i}.step{i}(1)\n"


def repo_files(*, head: bool, pushed: bool = False) -> dict[str, str]:
    files = {"README.md": "# Widgets\n\nEvery change needs a test.\n", "pkg/__init__.py": ""}
    files |= {f"pkg/mod{i}.py": module(i, head=head, pushed=pushed) for i in range(CHANGED)}
    files |= {f"pkg/use{j}.py": user(j) for j in range(270)}
    return files


def diff_text(*, pushed: bool = False) -> str:
    parts = []
    for i in range(CHANGED):
        path = f"pkg/mod{i}.py"
        lines = difflib.unified_diff(
            module(i, head=False).splitlines(keepends=True),
            module(i, head=True, pushed=pushed).splitlines(keepends=True),
            f"a/{path}",
            f"b/{path}",
        )
        parts.append(f"diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n")
        parts.append("".join(lines))
    return "".join(parts)


def seed(gh: FakeGitHub) -> None:
    seed_github(gh, KEYS[1])
    gh.set_files(REPO, "main", repo_files(head=False))
    gh.add_pull(
        REPO,
        PR,
        title="Extra steps",
        body="Adds an extra step to every module.",
        head_sha=HEAD,
        diff=diff_text(),
        files_at_head=repo_files(head=True),
        user=AUTHOR,
        commits=("Extra steps",),
    )


def progress(call: RecordedCall) -> bool:
    """A check-run progress update (not the one completing it)."""
    body = call.json if isinstance(call.json, dict) else {}
    return call.method == "PATCH" and "/check-runs/" in call.path and "status" not in body


def summary(calls: list[RecordedCall]) -> str:
    return "\n".join(f"{c.method} {c.path} -> {c.status}" for c in calls)


async def review(gh: FakeGitHub, app: object, comment: str) -> list[RecordedCall]:
    """One `/council` review; the GitHub requests made from its delivery to its end."""
    start = len(gh.calls)
    done = len([c for c in gh.check_runs(REPO) if c.status == "completed"])
    comment_id = gh.add_comment(REPO, PR, comment, user=AUTHOR)
    response = await app.deliver(  # type: ignore[attr-defined]
        "issue_comment", comment_event(comment, comment_id=comment_id)
    )
    assert response.status_code == 202, response.text
    await eventually(
        lambda: len([c for c in gh.check_runs(REPO) if c.status == "completed"]) > done,
        what="the completed check run",
        timeout=60,
    )
    # The sticky comment comes after the check run.
    await eventually(
        lambda: any(
            c.method in ("POST", "PATCH") and "/comments" in c.path for c in gh.calls[start:]
        ),
        what="the advisory comment",
    )
    return list(gh.calls[start:])


async def test_a_thirty_file_review_stays_within_the_budget_and_reads_by_symbol(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    # Progress updates at the default pace (the other service tests send every one).
    settings = app_settings(tmp_path, models, gh, KEYS[0], check_update_interval_s=5.0)
    async with running_app(settings) as app:
        first = await review(gh, app, "/council quick")
        models_first = list(models.calls)
        second = await review(gh, app, "/council quick")
        # A push changing one file: its new blob is read alone, the rest from the cache.
        gh.push(
            REPO,
            PR,
            head_sha="c0ffee" + "7" * 34,
            diff=diff_text(pushed=True),
            files_at_head=repo_files(head=True, pushed=True),
        )
        third = await review(gh, app, "/council quick")

    # Progress updates come on top: at most one per phase, paced by
    # COUNCIL_CHECK_UPDATE_INTERVAL_S (a slow test machine may send one or two).
    budgeted = [c for c in first if not progress(c)]
    assert len(budgeted) <= BUDGET, summary(first)
    assert not [c for c in first if "/contents/" in c.path and "council" not in c.path]
    system = "\n".join(call.request.system_text for call in models_first)
    # Context by symbol: the changed functions and the definitions they call; the 270
    # importers use only the unchanged `step` functions, so none of them is sent.
    assert "def extra0(x):" in system and "def step0(x):" in system
    assert "IMPORTER_" not in system

    # The same head again: every blob comes from the cache, no archive, no blob read.
    content = [
        c for c in second if any(k in c.path for k in ("/git/blobs/", "/tarball/", "/codeload/"))
    ]
    assert content == [], summary(second)
    assert len(second) < len(first), summary(second)

    assert not [c for c in third if "/tarball/" in c.path or "/codeload/" in c.path]
    assert len([c for c in third if "/git/blobs/" in c.path]) == 1, summary(third)


async def test_a_review_waits_for_the_rate_limit_at_the_default_reserve(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """10 requests left (the default reserve is 300): the review goes back to the queue,
    says so on its check run, counts in the metric, and runs once the limit has reset."""
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    reset_in = 3.0
    gh.set_rate_limit(10, reset_in_s=reset_in)
    reset_at = datetime.now(UTC) + timedelta(seconds=reset_in)
    waits = REGISTRY.get_sample_value("council_github_reviews_waiting_total") or 0.0
    settings = app_settings(tmp_path, models, gh, KEYS[0])
    assert settings.github_reserve == 300
    async with running_app(settings) as app:
        calls = await review(gh, app, "/council quick")

    notes = [
        c.json["output"]["summary"]
        for c in calls
        if c.method == "PATCH" and "/check-runs/" in c.path and "status" not in (c.json or {})
    ]
    assert any(
        "waiting for GitHub's rate limit until" in n and n.endswith("UTC.") for n in notes
    ), notes
    assert (REGISTRY.get_sample_value("council_github_reviews_waiting_total") or 0) > waits
    (run,) = gh.check_runs(REPO)
    assert run.status == "completed" and run.conclusion is not None
    assert run.completed_at is not None and run.completed_at >= reset_at - timedelta(seconds=1)
    assert models.calls  # the council did deliberate, after the wait
    assert REGISTRY.get_sample_value("council_github_requests_left", {"installation": "1"}) == 4999


async def test_a_limit_low_through_more_resets_than_tries_still_reviews(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """The limit stays under the reserve for four reset windows in a row, more than arq's
    three tries: a wait is not a try, so the review waits through all four and then
    deliberates, instead of failing with "max retries exceeded"."""
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    gh.set_rate_limit(10, reset_in_s=1.0, windows=4)
    waits = REGISTRY.get_sample_value("council_github_reviews_waiting_total") or 0.0
    settings = app_settings(tmp_path, models, gh, KEYS[0])
    async with running_app(settings) as app:
        await review(gh, app, "/council quick")

    assert (REGISTRY.get_sample_value("council_github_reviews_waiting_total") or 0) >= waits + 4
    (run,) = gh.check_runs(REPO)
    assert run.status == "completed" and run.conclusion in ("success", "failure"), run.summary
    assert "retries" not in (run.summary or "") and models.calls
    # Not handed back by the reconciler after arq gave up: the same job ran it.
    db = Database(settings.database_url)
    await db.connect()
    try:
        assert run.external_id is not None
        assert await resumes(db, run.external_id) == 0
    finally:
        await db.dispose()


async def test_a_review_stops_saying_so_after_the_most_waits(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """A limit that never comes back: after COUNCIL_GITHUB_MAX_WAITS resets the review
    stops, and its check run says why and what to do, without a model call."""
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    gh.set_rate_limit(10, reset_in_s=1.0, windows=50)
    settings = app_settings(tmp_path, models, gh, KEYS[0], github_max_waits=2)
    async with running_app(settings) as app:
        comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        response = await app.deliver(
            "issue_comment", comment_event("/council quick", comment_id=comment_id)
        )
        assert response.status_code == 202, response.text
        await eventually(
            lambda: any(c.status == "completed" for c in gh.check_runs(REPO)),
            what="the completed check run",
            timeout=60,
        )

    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "failure"  # no verdict: the gate does not pass
    assert "stayed below 300 requests through 2 resets" in (run.summary or ""), run.summary
    assert "Comment /council to try again" in (run.summary or "")
    assert not models.calls


async def test_at_the_default_the_review_stops_after_24_resets(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """The default COUNCIL_GITHUB_MAX_WAITS (24) itself: the job has waited through 23
    resets already (its count in Redis, as 23 real windows would have left it); one more
    low window, and it stops, saying 24 resets, at the settings a user gets."""
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    gh.set_rate_limit(10, reset_in_s=1.0, windows=50)
    settings = app_settings(tmp_path, models, gh, KEYS[0])
    assert settings.github_max_waits == 24
    async with running_app(settings) as app:
        comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        await app.redis.set(f"{settings.key_prefix}:github-waits:comment:{comment_id}", 23)
        response = await app.deliver(
            "issue_comment", comment_event("/council quick", comment_id=comment_id)
        )
        assert response.status_code == 202, response.text
        await eventually(
            lambda: any(c.status == "completed" for c in gh.check_runs(REPO)),
            what="the completed check run",
            timeout=60,
        )

    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "failure"  # no verdict: the gate does not pass
    assert "stayed below 300 requests through 24 resets" in (run.summary or ""), run.summary
    assert not models.calls


def caller(j: int) -> str:
    return f"from pkg.core import settle\n\n\ndef use_{j}(x):\n    return settle(x) + {j}\n"


async def test_over_the_archive_limit_the_name_index_reads_what_it_has_and_says_so(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """The head's archive is over COUNCIL_ARCHIVE_MAX_BYTES: the name index does not read
    the 300 files one request each. It searches what the blob cache and the few single
    blob reads give, and the "Not included" list says how many files it did not search;
    the review stays within the request budget."""
    gh = fake_github
    seed_github(gh, KEYS[1])
    core_before = "def settle(x):\n    return x\n"
    core_after = "def settle(x):\n    return round(x, 2)  # ARCHIVE_LIMIT_MARK\n"
    base = {"README.md": "# Ledger\n", "pkg/__init__.py": "", "pkg/core.py": core_before}
    base |= {f"pkg/caller{j}.py": caller(j) for j in range(300)}
    gh.set_files(REPO, "main", base)
    gh.add_pull(
        REPO,
        PR,
        title="Round the settlement",
        body="Settle to cents.",
        head_sha="a1c4" + "9" * 36,
        diff=diff_of("pkg/core.py", core_before, core_after, index=True),
        files_at_head={**base, "pkg/core.py": core_after},
        user=AUTHOR,
        commits=("Round the settlement",),
    )
    models.default(CouncilScript().reply)
    settings = app_settings(
        tmp_path, models, gh, KEYS[0], check_update_interval_s=5.0, archive_max_bytes=2_000
    )
    async with running_app(settings) as app:
        calls = await review(gh, app, "/council quick")

    budgeted = [c for c in calls if not progress(c)]
    assert len(budgeted) <= 20, summary(calls)
    assert len([c for c in calls if "/git/blobs/" in c.path]) <= 4, summary(calls)
    assert [c for c in calls if "/tarball/" in c.path]  # it tried the archive once
    system = "\n".join(call.request.system_text for call in models.calls)
    assert "ARCHIVE_LIMIT_MARK" in system  # the change itself is read
    assert re.search(
        r"name index: \d+ files not searched for the change's names: the archive of the head "
        r"is over COUNCIL_ARCHIVE_MAX_BYTES \(2,000 bytes\)",
        system,
    ), system[-3000:]
