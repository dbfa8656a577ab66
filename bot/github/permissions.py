"""Who may pull the trigger, and whose word dismisses a finding: the collaborator-permission
API, not `author_association`.

A person's permission is read once per client (`RepoClient`: one job of the App, one run
of the Action): every later question about them in that job is answered from the first
answer, so a review that checks a commenter and then their dismissals asks GitHub once.
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from bot.forge.errors import ForgeNotFound
from bot.github.client import RepoClient
from bot.github.errors import github_errors

__all__ = ["WRITE_PERMISSIONS", "can_trigger", "can_write", "permission"]

# The API's `permission` is one of admin, write, read, none (maintain reads as write,
# triage as read); `maintain` is accepted too in case a server reports the role itself.
WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})

# Each client's answers by login (casefolded: GitHub's logins are case-insensitive).
_ANSWERS: WeakKeyDictionary[RepoClient, dict[str, str]] = WeakKeyDictionary()


async def permission(client: RepoClient, login: str) -> str:
    """The user's permission on the repository; "none" when GitHub knows no such user or
    counts them as no collaborator (404). Asked once per client and login."""
    known = _ANSWERS.setdefault(client, {})
    key = login.casefold()
    if key in known:
        return known[key]
    try:
        with github_errors("read a collaborator's permission"):
            response = await client.rest.repos.async_get_collaborator_permission_level(
                client.owner, client.name, login
            )
            answer = response.parsed_data.permission
    except ForgeNotFound:
        answer = "none"
    known[key] = answer
    return answer


async def can_write(client: RepoClient, login: str) -> bool:
    """Admin, maintain or write on the repository."""
    return await permission(client, login) in WRITE_PERMISSIONS


async def can_trigger(client: RepoClient, login: str) -> bool:
    """Only people who can write to the repository convene the council."""
    return await can_write(client, login)
