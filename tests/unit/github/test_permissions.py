"""A person's permission on the repository, from the collaborator-permission endpoint of
the fake GitHub: a 404 (no collaborator) is no access, and each person is asked once per
client (one job of the App, one run of the Action)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.github.client import RepoClient
from bot.github.permissions import can_write, permission
from tests.support.github_app import github_app
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app

PATH = f"/repos/{REPO}/collaborators/{{login}}/permission"


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.reset()
    install_app(fake_github)
    fake_github.add_repo(REPO, installation_id=INSTALLATION_ID, files={"README.md": "hi\n"})
    return fake_github


@pytest.fixture
async def app_clients(fake: FakeGitHub) -> AsyncIterator[tuple[RepoClient, RepoClient]]:
    """Two jobs' clients on the same repository."""
    async with (
        github_app(fake) as app,
        app.for_installation(INSTALLATION_ID, REPO) as one,
        app.for_installation(INSTALLATION_ID, REPO) as two,
    ):
        yield one, two


def asks(fake: FakeGitHub, login: str) -> int:
    return len(fake.calls_to("GET", PATH.format(login=login)))


async def test_a_non_collaborator_is_a_404_and_no_access(
    fake: FakeGitHub, app_clients: tuple[RepoClient, RepoClient]
) -> None:
    client, _ = app_clients
    fake.set_not_collaborator(REPO, "stranger")
    assert await permission(client, "stranger") == "none"
    assert await can_write(client, "stranger") is False
    (call,) = fake.calls_to("GET", PATH.format(login="stranger"))
    assert call.status == 404
    fake.set_permission(REPO, "stranger", "write")  # invited since: an answer again
    assert await permission(app_clients[1], "stranger") == "write"


@pytest.mark.parametrize(
    ("granted", "writes"), [("admin", True), ("write", True), ("read", False), ("none", False)]
)
async def test_each_person_is_asked_once_per_client(
    fake: FakeGitHub, app_clients: tuple[RepoClient, RepoClient], granted: str, writes: bool
) -> None:
    one, two = app_clients
    fake.set_permission(REPO, "carol", granted)  # type: ignore[arg-type]
    assert await can_write(one, "carol") is writes
    assert await can_write(one, "Carol") is writes  # logins are case-insensitive
    assert await permission(one, "carol") == granted
    assert asks(fake, "carol") == 1
    assert await can_write(two, "carol") is writes  # another job asks for itself
    assert asks(fake, "carol") == 2
