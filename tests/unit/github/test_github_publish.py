"""Writing to a pull request through the fake: reactions, the sticky comment, the check run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bot.github.client import GitHubApp, RepoClient
from bot.github.publish import (
    CheckRunPublisher,
    find_sticky_comment,
    react,
    reply,
    upsert_sticky_comment,
)
from bot.github.retry import Backoff, RetryPolicy
from bot.render.checks import Annotation, CheckRunOutput
from bot.render.markdown import COMMENT_MARKER
from tests.support.github_app import github_app, seed_simple
from tests.support.github_server import (
    APP_ID,
    INSTALLATION_ID,
    REPO,
    FakeGitHub,
)

HEAD = "abcd" * 10
RUNS = rf"/repos/{REPO}/check-runs(/\d+)?"


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    return seed_simple(fake_github, HEAD)


@pytest.fixture
async def app(fake: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with github_app(fake) as app:
        yield app


@pytest.fixture
async def client(app: GitHubApp) -> AsyncIterator[RepoClient]:
    async with app.for_installation(INSTALLATION_ID, REPO) as repo_client:
        yield repo_client


async def test_react_with_eyes(client: RepoClient, fake: FakeGitHub) -> None:
    command = fake.add_comment(REPO, 1, "/council", user="alice")
    await react(client, command, "eyes")
    assert [(r.content, r.user) for r in fake.reactions(command)] == [("eyes", fake.app_login)]


async def test_the_sticky_comment_is_created_once_then_updated(
    client: RepoClient, app: GitHubApp, fake: FakeGitHub
) -> None:
    login = await app.app_login()
    first = await upsert_sticky_comment(client, 1, f"{COMMENT_MARKER}\nfirst advisory", login)
    second = await upsert_sticky_comment(client, 1, f"{COMMENT_MARKER}\nsecond advisory", login)
    assert first.created and not second.created and second.id == first.id
    assert [c.body for c in fake.comments(REPO, 1)] == [f"{COMMENT_MARKER}\nsecond advisory"]
    assert second.html_url.endswith(f"#issuecomment-{first.id}")
    assert len(fake.calls_to("POST", rf"/repos/{REPO}/issues/1/comments")) == 1
    assert len(fake.calls_to("PATCH", rf"/repos/{REPO}/issues/comments/\d+")) == 1


async def test_the_marker_in_someone_elses_comment_is_not_ours(
    client: RepoClient, app: GitHubApp, fake: FakeGitHub
) -> None:
    login = await app.app_login()
    theirs = fake.add_comment(REPO, 1, f"{COMMENT_MARKER}\nfake advisory", user="mallory")
    other_bot = fake.add_comment(REPO, 1, f"{COMMENT_MARKER}\n", user="x[bot]", user_type="Bot")
    ours = await upsert_sticky_comment(client, 1, "the advisory", login)
    assert ours.created and ours.id not in (theirs, other_bot)
    bodies = {c.id: c.body for c in fake.comments(REPO, 1)}
    assert bodies[theirs] == f"{COMMENT_MARKER}\nfake advisory"  # untouched
    assert bodies[ours.id] == f"{COMMENT_MARKER}\nthe advisory"  # marker added
    assert await find_sticky_comment(client, 1, login) == ours.model_copy(update={"created": False})


async def test_the_sticky_comment_is_found_past_the_first_page(
    client: RepoClient, app: GitHubApp, fake: FakeGitHub
) -> None:
    login = await app.app_login()
    ours = await upsert_sticky_comment(client, 1, "advisory", login)
    for n in range(120):
        fake.add_comment(REPO, 1, f"chatter {n}", user="bob")
    fake.calls.clear()
    again = await upsert_sticky_comment(client, 1, "advisory, updated", login)
    assert again.id == ours.id and len(fake.comments(REPO, 1)) == 121
    # Ours is the oldest comment, so it is found on the first page of 100.
    assert [c.query.get("per_page") for c in fake.calls_to("GET")] == ["100"]


async def test_a_reply_is_a_new_comment(client: RepoClient, fake: FakeGitHub) -> None:
    one = await reply(client, 1, "Only collaborators with write access can convene.")
    two = await reply(client, 1, "Another.")
    assert one.id != two.id and len(fake.comments(REPO, 1)) == 2


def _annotations(count: int) -> list[Annotation]:
    return [
        Annotation(
            path="a.py",
            start_line=n + 1,
            end_line=n + 1,
            annotation_level="warning",
            title=f"finding {n}",
            message=f"detail {n}",
        )
        for n in range(count)
    ]


async def test_check_run_lifecycle_with_120_annotations(
    client: RepoClient, fake: FakeGitHub
) -> None:
    publisher = CheckRunPublisher(client, update_interval_s=0)
    run_id = await publisher.create(
        HEAD, external_id="delib-1", title="Convening", summary="Choosing seats"
    )
    state = fake.check_runs(REPO)[0]
    assert (state.name, state.status, state.external_id) == ("Council", "in_progress", "delib-1")
    assert await publisher.progress(run_id, "Assessing")
    assert fake.check_runs(REPO)[0].summary == "Assessing"
    output = CheckRunOutput(
        title="Approved with conditions",
        summary="Summary",
        text="Details",
        annotations=_annotations(120),
    )
    await publisher.complete(
        run_id, output, "neutral", details_url="https://github.com/acme/widgets/pull/1#c"
    )
    patches = fake.calls_to("PATCH", rf"/repos/{REPO}/check-runs/{run_id}")[1:]  # after progress
    sizes = [len(call.json["output"].get("annotations", [])) for call in patches]
    assert sizes == [50, 50, 20] and all(call.status == 200 for call in patches)
    assert ["status" in call.json for call in patches] == [False, False, True]  # completed last
    done = fake.check_runs(REPO)[0]
    assert (done.status, done.conclusion, done.title) == (
        "completed",
        "neutral",
        "Approved with conditions",
    )
    assert [a["start_line"] for a in done.annotations] == list(range(1, 121))
    assert done.details_url == "https://github.com/acme/widgets/pull/1#c"
    assert [a["label"] for a in done.actions] == ["Re-convene", "Full debate"]
    assert [a["identifier"] for a in done.actions] == ["reconvene", "debate"]
    assert done.text == "Details"


async def test_progress_is_throttled(client: RepoClient, fake: FakeGitHub) -> None:
    now = [100.0]
    publisher = CheckRunPublisher(client, update_interval_s=5, clock=lambda: now[0])
    run_id = await publisher.create(HEAD, external_id="d", title="Convening", summary="start")
    assert not await publisher.progress(run_id, "too soon")
    now[0] += 5
    assert await publisher.progress(run_id, "phase 2")
    assert not await publisher.progress(run_id, "phase 3, too soon")
    assert fake.check_runs(REPO)[0].summary == "phase 2"
    assert len(fake.calls_to("PATCH", RUNS)) == 1


async def test_find_by_external_id_after_a_crash(client: RepoClient, fake: FakeGitHub) -> None:
    publisher = CheckRunPublisher(client, update_interval_s=0)
    crashed = await publisher.create(HEAD, external_id="delib-7", title="t", summary="s")
    newer = await publisher.create(HEAD, external_id="delib-8", title="t", summary="s")
    restarted = CheckRunPublisher(client, update_interval_s=0)  # a new worker process
    # GitHub's default listing shows only the newest run of a name; we ask for all of them.
    assert await restarted.find(HEAD, "delib-7") == crashed
    assert await restarted.find(HEAD, "delib-8") == newer
    assert await restarted.find(HEAD, "delib-9") is None
    listing = fake.calls_to("GET", rf"/repos/{REPO}/commits/{HEAD}/check-runs")[-1]
    assert listing.query["check_name"] == "Council" and listing.query["app_id"] == str(APP_ID)
    assert len(fake.check_runs(REPO)) == 2


async def test_cancel_and_complete_without_annotations(
    client: RepoClient, fake: FakeGitHub
) -> None:
    publisher = CheckRunPublisher(client, update_interval_s=0)
    cancelled = await publisher.create(HEAD, external_id="a", title="t", summary="s")
    await publisher.cancel(cancelled, "Cancelled by @alice with /council cancel.")
    plain = await publisher.create(HEAD, external_id="b", title="t", summary="s")
    await publisher.complete(plain, CheckRunOutput(title="Approved", summary="ok"), "success")
    runs = {r.id: r for r in fake.check_runs(REPO)}
    assert (runs[cancelled].conclusion, runs[cancelled].summary) == (
        "cancelled",
        "Cancelled by @alice with /council cancel.",
    )
    assert runs[plain].conclusion == "success" and runs[plain].annotations == []
    assert len(fake.calls_to("PATCH", rf"/repos/{REPO}/check-runs/{plain}")) == 1


async def test_a_progress_update_retrying_through_a_storm_never_lands_after_the_verdict(
    fake: FakeGitHub,
) -> None:
    quick = RetryPolicy(Backoff(budget_s=30, first_s=0.05, max_delay_s=0.1))
    async with (
        github_app(fake, retry=quick) as app,
        app.for_installation(INSTALLATION_ID, REPO) as client,
    ):
        publisher = CheckRunPublisher(client, update_interval_s=0)
        run_id = await publisher.create(HEAD, external_id="d-9", title="t", summary="s")
        run = rf"/repos/{REPO}/check-runs/{run_id}"
        fake.fail("PATCH", run, status=502, times=None, when=lambda r: "Phases" in str(r.json))
        flying = asyncio.create_task(publisher.progress(run_id, "Phases so far: assess"))
        while not fake.calls_to("PATCH", run):
            await asyncio.sleep(0.01)
        await publisher.complete(run_id, CheckRunOutput(title="Approved", summary="ok"), "success")
        await asyncio.gather(flying, return_exceptions=True)
        assert flying.cancelled()
        assert not await publisher.progress(run_id, "Phases so far: late")  # closed
        await asyncio.sleep(0.3)  # a retry would have been due several times by now
    (state,) = fake.check_runs(REPO)
    assert (state.status, state.conclusion, state.title) == ("completed", "success", "Approved")
    last = fake.calls_to("PATCH", run)[-1]
    assert last.json["status"] == "completed"
