"""`GitHubForge` over the fake: each method of the forge seam (`bot.forge.Forge`) as the
pull-request service calls it, and the errors it raises being the forge's own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from bot.forge import Forge, ForgeNotFound, ForgeValidationError, Reactions
from bot.github.client import GitHubApp
from bot.github.forge import WORKFLOW, GitHubForge
from bot.render.checks import CheckRunOutput
from bot.render.markdown import COMMENT_MARKER
from tests.support.github_app import github_app, seed_simple
from tests.support.github_reviews import ReviewState, reviews_of
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub

HEAD = "beef" * 10


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    return seed_simple(fake_github, HEAD)


@pytest.fixture
async def app(fake: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with github_app(fake) as app:
        yield app


@pytest.fixture
async def forge(app: GitHubApp) -> AsyncIterator[GitHubForge]:
    async with app.for_installation(INSTALLATION_ID, REPO) as client:
        yield GitHubForge(client)


async def test_the_pull_request_its_diff_and_a_comparison(forge: GitHubForge) -> None:
    seam: Forge = forge
    assert seam.full_name == REPO
    pull = await seam.pull(1)
    assert (pull.number, pull.head_sha, pull.state) == (1, HEAD, "open")
    assert "a.py" in (await seam.diff(1)).text
    changed = await seam.compare(pull.default_branch, HEAD)
    assert [f.path for f in changed.files] == ["a.py"]


async def test_who_may_trigger(forge: GitHubForge, fake: FakeGitHub) -> None:
    fake.set_permission(REPO, "writer", "write")
    fake.set_permission(REPO, "reader", "read")
    assert await forge.can_trigger("writer")
    assert not await forge.can_trigger("reader")


async def test_a_reply_and_the_one_sticky_comment(
    forge: GitHubForge, app: GitHubApp, fake: FakeGitHub
) -> None:
    login = await app.app_login()
    replied = await forge.reply(1, "hello")
    first = await forge.upsert_sticky(1, "first", login)
    second = await forge.upsert_sticky(1, "second", login)
    assert first.created and not second.created and first.id == second.id != replied.id
    bodies = [c.body for c in fake.comments(REPO, 1)]
    assert bodies == ["hello", f"{COMMENT_MARKER}\nsecond"]


async def test_a_reaction_where_the_forge_has_them(forge: GitHubForge, fake: FakeGitHub) -> None:
    command = fake.add_comment(REPO, 1, "/council", user="alice")
    assert forge.capabilities.reactions and isinstance(forge, Reactions)
    await forge.react(command)
    assert [r.content for r in fake.reactions(command)] == ["eyes"]


async def test_the_status_is_the_council_check_run(forge: GitHubForge, fake: FakeGitHub) -> None:
    status = forge.status(update_interval_s=0)
    run_id = await status.create(HEAD, external_id="d-1", title="Council convening", summary="s")
    assert await status.find(HEAD, "d-1") == run_id
    await status.note(run_id, "Waiting", "for the rate limit")
    output = CheckRunOutput(title="Approved", summary="done")
    await status.complete(run_id, output, "neutral", actions=())
    (run,) = fake.check_runs(REPO)
    assert (run.name, run.status, run.conclusion) == ("Council", "completed", "neutral")


async def test_errors_are_the_forges_and_a_long_comment_is_told_apart(
    forge: GitHubForge,
) -> None:
    with pytest.raises(ForgeNotFound):
        await forge.pull(99)
    too_long = ForgeValidationError("Validation Failed: Body is too long", status=422)
    assert forge.comment_too_long(too_long)
    assert not forge.comment_too_long(ForgeValidationError("Validation Failed", status=422))


def test_a_workflow_token_has_no_buttons_and_resolves_no_threads() -> None:
    assert not WORKFLOW.buttons and not WORKFLOW.resolve_threads
    assert WORKFLOW.reactions and WORKFLOW.annotations and WORKFLOW.neutral


async def test_approvals_are_the_latest_deciding_review_at_the_head(
    forge: GitHubForge, fake: FakeGitHub
) -> None:
    """An approval stands through a later comment, ends with a request for changes, and an
    approval of an older commit is not one of the head."""
    state = reviews_of(fake)

    def review(user: str, event: str, commit: str) -> None:
        review_id = fake._next_id("review")
        state.reviews_by_id[review_id] = ReviewState(
            review_id, REPO, 1, user, "User", "", event, commit, datetime.now(UTC)
        )

    review("ana", "APPROVE", HEAD)
    review("ana", "COMMENT", HEAD)
    review("bo", "APPROVE", HEAD)
    review("bo", "REQUEST_CHANGES", HEAD)
    review("cy", "APPROVE", "0" * 40)
    review("di", "APPROVE", HEAD)
    assert await forge.approvals(1, HEAD) == ["ana", "di"]
