"""Whose dismissal of an inline finding counts, on `publish_inline` against the fake GitHub:
a person with write access (each asked once per review), never the PR's author for a
critical finding, and a critical finding stays in the advisory (its condition too) whoever
dismissed it. Here with the Action's workflow token and no store (the Action's lasts one
run), so the review comments alone tell what was dismissed; the App's path is in
tests/service/test_inline_dismissals.py."""

from __future__ import annotations

import pytest

from bot.council.resolution import CRITICAL_CONDITION
from bot.github.client import RepoClient
from bot.github.forge import GitHubForge
from bot.pr.followup.inline import publish_inline
from bot.pr.followup.state import InlineResult
from bot.review.anchors import DiffLines
from bot.settings import Settings
from tests.support.github_reviews import react_as, resolve_as, reviews_of
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app
from tests.unit.pr.test_followup_inline import DIFF, HEAD, advisory, finding

BOT = "github-actions[bot]"
AUTHOR = "octocat"
MAINTAINER = "maintainer"
LOOP = finding("Unbounded retry loop", 3, 4)  # major
CRASH = finding("Division by zero", 22, severity="critical")
CONDITION = f"{CRITICAL_CONDITION}Division by zero (app/retry.py:22)"


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.reset()
    install_app(fake_github)
    fake_github.add_repo(REPO, installation_id=INSTALLATION_ID, files={"app/retry.py": "x\n"})
    fake_github.add_pull(
        REPO, 1, title="t", body="b", head_sha=HEAD, diff=DIFF,
        files_at_head={"app/retry.py": "x"}, user=AUTHOR,
    )  # fmt: skip
    fake_github.set_permission(REPO, AUTHOR, "admin")
    fake_github.set_permission(REPO, MAINTAINER, "write")
    fake_github.add_token("ghs_workflow", login=BOT)
    return fake_github


async def run(fake: FakeGitHub) -> InlineResult:
    """One run of the Action: its own client (so its own permission answers), no store."""
    settings = Settings(_env_file=None, github_api_url=fake.url, content_pacing_s=0)
    review = advisory(LOOP, CRASH).model_copy(update={"conditions": [CONDITION]})
    async with RepoClient.from_token("ghs_workflow", REPO, settings) as client:
        return await publish_inline(
            GitHubForge(client), 1, HEAD, review, DiffLines.from_diff(DIFF), None,
            bot_login=BOT, pr_author=AUTHOR, can_resolve_threads=False,
        )  # fmt: skip


def permission_asks(fake: FakeGitHub, login: str, since: int) -> int:
    path = f"/repos/{REPO}/collaborators/{login}/permission"
    return len([c for c in fake.calls[since:] if c.method == "GET" and c.path == path])


async def test_the_author_never_dismisses_a_critical_finding(fake: FakeGitHub) -> None:
    first = await run(fake)
    assert first.posted == 2
    loop, crash = reviews_of(fake).comments(REPO, 1)
    resolve_as(fake, crash.id, AUTHOR)
    react_as(fake, crash.id, "-1", AUTHOR)
    react_as(fake, loop.id, "-1", "passerby")  # a public repository's "read"

    since = len(fake.calls)
    later = await run(fake)
    assert later.dismissed == 0 and later.kept_critical == []
    assert later.advisory.findings == [LOOP, CRASH]
    assert later.advisory.conditions == [CONDITION]
    assert not any("dismiss" in note for note in later.advisory.notes)
    assert permission_asks(fake, AUTHOR, since) == 0  # the author's word: not even asked

    react_as(fake, loop.id, "-1", AUTHOR)  # a major finding: the author's word counts
    later = await run(fake)
    assert later.dismissed == 1 and later.advisory.findings == [CRASH]


async def test_a_maintainer_dismissing_a_critical_finding_keeps_it_and_its_condition(
    fake: FakeGitHub,
) -> None:
    await run(fake)
    loop, crash = reviews_of(fake).comments(REPO, 1)
    react_as(fake, crash.id, "-1", MAINTAINER)
    react_as(fake, loop.id, "-1", MAINTAINER)

    since = len(fake.calls)
    later = await run(fake)
    assert later.advisory.findings == [CRASH] and later.dismissed == 1
    assert later.kept_critical == [("Division by zero", MAINTAINER)]
    assert later.advisory.conditions == [CONDITION]  # what the verdict asks stays asked
    assert (
        'The critical finding "Division by zero" was dismissed by @maintainer; it stays in '
        "the advisory and on the check run (no dismissal waives a critical finding)."
    ) in later.advisory.notes
    assert permission_asks(fake, MAINTAINER, since) == 1  # two dismissals, one question


async def test_a_permission_github_does_not_give_dismisses_nothing(fake: FakeGitHub) -> None:
    await run(fake)
    loop, _ = reviews_of(fake).comments(REPO, 1)
    fake.set_not_collaborator(REPO, "stranger")  # 404: no collaborator
    react_as(fake, loop.id, "-1", "stranger")
    refused = {"message": "Must have push access to view collaborator permission."}
    path = rf"/repos/{REPO}/collaborators/{MAINTAINER}/permission"
    fake.fail("GET", path, status=403, body=refused, times=None)
    resolve_as(fake, loop.id, MAINTAINER)  # their word, unknown to count: the finding stays
    react_as(fake, loop.id, "-1", MAINTAINER)
    since = len(fake.calls)
    later = await run(fake)
    assert later.dismissed == 0 and later.advisory.findings == [LOOP, CRASH]
    assert permission_asks(fake, MAINTAINER, since) == 1  # refused once: not asked again
    assert permission_asks(fake, "stranger", since) == 1


async def test_dismissing_a_major_finding_leaves_the_condition_of_a_critical_one(
    fake: FakeGitHub,
) -> None:
    """The same issue raised twice, major on one line and critical on another: the major
    one dismissed takes nothing of the critical one with it."""
    twin = finding("Division by zero", 3)  # major, on another line
    settings = Settings(_env_file=None, github_api_url=fake.url, content_pacing_s=0)
    review = advisory(twin, CRASH).model_copy(update={"conditions": [CONDITION]})
    lines = DiffLines.from_diff(DIFF)
    async with RepoClient.from_token("ghs_workflow", REPO, settings) as client:
        await publish_inline(
            GitHubForge(client), 1, HEAD, review, lines, None,
            bot_login=BOT, pr_author=AUTHOR, can_resolve_threads=False,
        )  # fmt: skip
        major, _ = reviews_of(fake).comments(REPO, 1)
        react_as(fake, major.id, "-1", MAINTAINER)
        later = await publish_inline(
            GitHubForge(client), 1, HEAD, review, lines, None,
            bot_login=BOT, pr_author=AUTHOR, can_resolve_threads=False,
        )  # fmt: skip
    assert later.dismissed == 1 and later.advisory.findings == [CRASH]
    assert later.advisory.conditions == [CONDITION]
