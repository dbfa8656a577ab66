"""The forge seam's review comments and threads: `GitHubForge` over the fake GitHub (a
review on lines of the diff, the comments and threads read back, a reply, reactions, a
thread resolved by the App and refused to a workflow token, who may write), and the
follow-up step on a forge that cannot resolve threads (the "Fixed in <sha>." fallback)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.forge.reviews import LineComment
from bot.github import GitHubApp, RepoClient
from bot.github.forge import WORKFLOW, GitHubForge
from bot.pr.followup.step import InlineRequest, follow_up
from bot.settings import Settings
from tests.support.github_app import github_app
from tests.support.github_reviews import react_as, resolve_as, reviews_of
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app
from tests.unit.pr.test_followup_inline import (
    AUTHOR,
    DIFF,
    FIXED_DIFF,
    FIXED_HEAD,
    HEAD,
    advisory,
    finding,
)
from tests.unit.pr.test_forge_seam import BareForge


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.reset()
    install_app(fake_github)
    fake_github.add_repo(REPO, installation_id=INSTALLATION_ID, files={"app/retry.py": "x\n"})
    fake_github.add_pull(
        REPO, 1, title="t", body="b", head_sha=HEAD, diff=DIFF, files_at_head={"app/retry.py": "x"}
    )
    return fake_github


@pytest.fixture
async def app(fake: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with github_app(fake) as app:
        yield app


@pytest.fixture
async def forge(app: GitHubApp) -> AsyncIterator[GitHubForge]:
    async with app.for_installation(INSTALLATION_ID, REPO) as client:
        yield GitHubForge(client)


async def test_a_review_on_lines_of_the_diff_and_its_comments_read_back(
    fake: FakeGitHub, forge: GitHubForge
) -> None:
    comments = [
        LineComment(path="app/retry.py", line=4, body="a range", start_line=3),
        LineComment(path="app/retry.py", line=22, body="one line"),
    ]
    review_id = await forge.post_review(1, commit_id=HEAD, body="two", comments=comments)
    (review,) = reviews_of(fake).reviews(REPO, 1)
    assert review.id == review_id and review.event == "COMMENT"
    posted = [(c.start_line, c.line) for c in reviews_of(fake).comments(REPO, 1)]
    assert posted == [(3, 4), (None, 22)]
    sent = fake.calls_to("POST", rf"/repos/{REPO}/pulls/1/reviews")[0].json or {}
    assert {c["side"] for c in sent["comments"]} == {"RIGHT"}
    assert sent["comments"][0]["start_side"] == "RIGHT"

    read = await forge.review_comments(1)
    assert [(c.path, c.line, c.body) for c in read] == [
        ("app/retry.py", 4, "a range"),
        ("app/retry.py", 22, "one line"),
    ]
    assert {c.user for c in read} == {fake.app_login}
    first = read[0].id
    reply = await forge.reply_in_thread(1, first, "Fixed in 5678567.")
    replies = [c for c in await forge.review_comments(1) if c.in_reply_to_id == first]
    assert [(c.id, c.body) for c in replies] == [(reply, "Fixed in 5678567.")]


async def test_threads_reactions_and_who_may_write(fake: FakeGitHub, forge: GitHubForge) -> None:
    comments = [LineComment(path="app/retry.py", line=3, body="loop")]
    await forge.post_review(1, commit_id=HEAD, body="one", comments=comments)
    (comment,) = await forge.review_comments(1)
    fake.set_permission(REPO, "maintainer", "write")
    fake.set_permission(REPO, "reader", "read")
    react_as(fake, comment.id, "-1", "maintainer")
    assert await forge.review_comment_reactions(comment.id) == [("-1", "maintainer")]
    assert await forge.can_write("maintainer") and not await forge.can_write("reader")

    (thread,) = await forge.review_threads(1)
    assert thread.first_comment_id == comment.id and not thread.is_resolved
    resolve_as(fake, comment.id, "maintainer")
    (thread,) = await forge.review_threads(1)
    assert thread.is_resolved and thread.resolved_by == "maintainer"


async def test_the_app_resolves_a_thread_and_a_workflow_token_may_not(
    fake: FakeGitHub, forge: GitHubForge
) -> None:
    comments = [LineComment(path="app/retry.py", line=3, body="loop")]
    await forge.post_review(1, commit_id=HEAD, body="one", comments=comments)
    (thread,) = await forge.review_threads(1)
    assert await forge.resolve_thread(thread.id)
    assert (await forge.review_threads(1))[0].is_resolved

    fake.add_token("ghs_workflow", login="github-actions[bot]")
    settings = Settings(_env_file=None, github_api_url=fake.url, content_pacing_s=0)
    async with RepoClient.from_token("ghs_workflow", REPO, settings) as client:
        workflow = GitHubForge(client, WORKFLOW)
        assert not workflow.capabilities.resolve_threads
        assert await workflow.resolve_thread(thread.id) is False  # FORBIDDEN


async def test_a_forge_without_thread_resolution_replies_fixed() -> None:
    """The same follow-up step on a forge that cannot resolve threads (Gitea's review
    comments): posted once, and a fixed finding's comment gets "Fixed in <sha>." once."""
    forge = BareForge()
    pull = await forge.pull(1)
    loop = finding("Unbounded retry loop", 3, 4)
    inline = InlineRequest(post=True, pr_diff=DIFF)
    first = pull.model_copy(update={"head_sha": HEAD, "author_login": AUTHOR})
    for _ in range(2):
        shown = await follow_up(forge, first, advisory(loop), inline, None, bot_login="council")
    assert [c.line for c in forge.notes] == [4]  # posted once: the marker found it again
    assert shown.notes[0] == "1 finding posted as a review comment on its line."

    fixed = pull.model_copy(update={"head_sha": FIXED_HEAD, "author_login": AUTHOR})
    after = InlineRequest(post=True, pr_diff=FIXED_DIFF)
    for _ in range(2):
        review = advisory(deliberation="d-2")
        await follow_up(forge, fixed, review, after, None, bot_login="council")
    replies = [c.body for c in forge.notes if c.in_reply_to_id is not None]
    assert replies == [f"Fixed in {FIXED_HEAD[:7]}."]
