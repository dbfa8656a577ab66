"""`GitHubForge`'s files at a ref and setup files (`bot.forge.Forge`), against the fake
GitHub over real sockets: the files at a commit with its archive, the PR's commits, two heads
compared, the configuration and personas from the default branch, and where the
organization keeps its configuration."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.config import AGENTS_DIR, CONFIG_PATH
from bot.forge import Forge
from bot.forge.cache import MemoryBlobCache
from bot.github.client import RepoClient
from bot.github.forge import GitHubForge
from tests.support.github_app import github_app
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app, tree_diff

BASE: dict[str, bytes] = {
    "README.md": b"# r\n",
    CONFIG_PATH: b"protocol: quick\n",
    f"{AGENTS_DIR}/tester.md": b"---\nid: tester\n---\nTests.\n",
    f"{AGENTS_DIR}/.hidden.md": b"not a persona\n",
}
HEAD: dict[str, bytes] = {**BASE, **{f"pkg/m{i}.py": f"V{i} = {i}\n".encode() for i in range(12)}}
H1, H2 = "a1" * 20, "b2" * 20


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.reset()
    install_app(fake_github)
    fake_github.add_repo(REPO, installation_id=INSTALLATION_ID, files=BASE)
    fake_github.add_pull(
        REPO, 1, title="t", body="", head_sha=H1, diff=tree_diff(BASE, HEAD),
        files_at_head=HEAD, commits=("first",),
    )  # fmt: skip
    return fake_github


@pytest.fixture
async def forge(fake: FakeGitHub) -> AsyncIterator[Forge]:
    async with github_app(fake) as app, app.for_installation(INSTALLATION_ID, REPO) as repo:
        yield GitHubForge(repo)


async def test_the_files_at_a_commit_come_through_its_archive(
    forge: Forge, fake: FakeGitHub
) -> None:
    files = await forge.files_at(
        H1, MemoryBlobCache(), max_file_bytes=10_000, archive_max_bytes=1_000_000, blob_reads=1
    )
    async with files:
        assert "pkg/m3.py" in files.files and not files.truncated
        await files.expect(f"pkg/m{i}.py" for i in range(12))  # many misses: the archive
        assert await files.read("pkg/m3.py") == b"V3 = 3\n"
        assert files.entries["pkg/m3.py"].sha
        assert await files.read("absent.py") is None
    assert any("/tarball/" in call.path for call in fake.calls)


async def test_commits_and_a_comparison_of_two_heads(forge: Forge, fake: FakeGitHub) -> None:
    assert await forge.commit_messages(1) == ["first"]
    second = {**HEAD, "pkg/m0.py": b"V0 = 1\n"}
    fake.push(
        REPO, 1, head_sha=H2, diff=tree_diff(BASE, second), files_at_head=second,
        commits=("second",),
    )  # fmt: skip
    compared = await forge.compare(H1, H2)
    assert (compared.status, compared.ahead_by, compared.commit_messages) == (
        "ahead",
        1,
        ["second"],
    )
    assert "+V0 = 1" in compared.diff


async def test_the_setup_files_come_from_the_default_branch(forge: Forge) -> None:
    cache = MemoryBlobCache()
    assert await forge.setup_config("main", cache) == "protocol: quick\n"
    agents = await forge.setup_agents("main", cache)
    assert list(agents) == [f"{AGENTS_DIR}/tester.md"]
    assert forge.org_config_repo == f"{REPO.split('/')[0]}/.github"


async def test_a_repository_client_is_what_the_forge_wraps(fake: FakeGitHub) -> None:
    async with github_app(fake) as app, app.for_installation(INSTALLATION_ID, REPO) as repo:
        assert isinstance(repo, RepoClient)
        assert GitHubForge(repo).full_name == REPO
