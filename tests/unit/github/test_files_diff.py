"""The diff GitHub refuses (406 too_large past 300 files or 20,000 lines) rebuilt from the
paginated files API, and comparing two heads of a pull request (ahead, diverged after a
force-push, missing), against the fake GitHub's wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from unidiff.patch import PatchSet

from bot.github.client import RepoClient
from bot.github.fetch import fetch_diff, list_files
from bot.github.files_diff import compare
from tests.support.github_app import github_app
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app, tree_diff

BASE = {"README.md": b"# r\n"}
H1, H2, H3 = "a1" * 20, "b2" * 20, "c3" * 20


def files(n: int, *, lines: int = 1) -> dict[str, bytes]:
    body = "".join(f"x{j} = {j}\n" for j in range(lines)).encode()
    return {**BASE, **{f"m{i:03}.py": body for i in range(n)}}


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.reset()
    install_app(fake_github)
    fake_github.add_repo(REPO, installation_id=INSTALLATION_ID, files=BASE)
    return fake_github


@pytest.fixture
async def client(fake: FakeGitHub) -> AsyncIterator[RepoClient]:
    async with github_app(fake) as app, app.for_installation(INSTALLATION_ID, REPO) as repo:
        yield repo


def add(fake: FakeGitHub, head: dict[str, bytes]) -> None:
    fake.add_pull(
        REPO,
        1,
        title="t",
        body="",
        head_sha=H1,
        diff=tree_diff(BASE, head),
        files_at_head=head,
    )


async def test_past_300_files_the_diff_is_refused_and_rebuilt_from_the_files(
    client: RepoClient, fake: FakeGitHub
) -> None:
    head = files(301)
    head["logo.png"] = b"\x89PNG\x00\x01"
    add(fake, head)
    diff = await fetch_diff(client, 1)
    refused = [c for c in fake.calls if c.accept == "application/vnd.github.diff"]
    assert [c.status for c in refused] == [406]
    pages = [c for c in fake.calls if c.path.endswith("/pulls/1/files")]
    assert [c.query.get("page", "1") for c in pages] == ["1", "2", "3", "4"]
    assert diff.rebuilt_from_files and diff.refused == "more than 300 files"
    assert diff.listed == 302 and diff.skipped == {"logo.png": "binary"} and not diff.capped
    assert len(PatchSet(diff.text)) == 302


async def test_past_20000_lines_and_a_patch_too_large_to_show(
    client: RepoClient, fake: FakeGitHub
) -> None:
    fake.diff_max_lines = 50
    fake.patch_max_lines = 30
    head = files(2, lines=20)
    head["big.csv"] = b"".join(b"%d\n" % i for i in range(40))
    add(fake, head)
    diff = await fetch_diff(client, 1)
    assert diff.refused == "more than 20,000 lines"
    assert diff.skipped == {"big.csv": "too large for GitHub to show"}
    assert "+x19 = 19" in diff.text and "big.csv" not in diff.text.split("+++ b/m001.py")[1]


async def test_the_files_api_lists_at_most_its_limit(client: RepoClient, fake: FakeGitHub) -> None:
    fake.files_max = 150
    add(fake, files(160))
    assert len(await list_files(client, 1)) == 150
    fake.reset()  # the limits are GitHub's again
    assert (fake.files_max, fake.diff_max_files) == (3_000, 300)


async def test_compare_ahead_diverged_and_missing(client: RepoClient, fake: FakeGitHub) -> None:
    first = files(2)
    add(fake, first)
    second = {**first, "m000.py": b"x0 = 1\n"}
    fake.push(
        REPO,
        1,
        head_sha=H2,
        diff=tree_diff(BASE, second),
        files_at_head=second,
        commits=("one", "two"),
    )
    ahead = await compare(client, H1, H2)
    assert (ahead.status, ahead.ahead_by, ahead.commit_messages) == ("ahead", 2, ["one", "two"])
    assert [f.path for f in ahead.files] == ["m000.py"] and "+x0 = 1" in ahead.diff
    rewritten = {**first, "m001.py": b"x0 = 2\n"}
    fake.push(
        REPO, 1, head_sha=H3, diff=tree_diff(BASE, rewritten), files_at_head=rewritten, force=True
    )
    diverged = await compare(client, H2, H3)
    assert diverged.status == "diverged" and diverged.behind_by == 3  # H1 and its two
    assert (await compare(client, "d4" * 20, H3)).status == "missing"
