"""Who may pull the trigger: the collaborator-permission API, not `author_association`."""

from __future__ import annotations

from bot.github.client import RepoClient
from bot.github.errors import GitHubNotFound, github_errors

__all__ = ["TRIGGER_PERMISSIONS", "can_trigger", "permission"]

# The API's `permission` is one of admin, write, read, none (maintain reads as write,
# triage as read); `maintain` is accepted too in case a server reports the role itself.
TRIGGER_PERMISSIONS = frozenset({"admin", "maintain", "write"})


async def permission(client: RepoClient, login: str) -> str:
    """The user's permission on the repository; "none" when GitHub knows no such user."""
    try:
        with github_errors("read a collaborator's permission"):
            response = await client.rest.repos.async_get_collaborator_permission_level(
                client.owner, client.name, login
            )
            return response.parsed_data.permission
    except GitHubNotFound:
        return "none"


async def can_trigger(client: RepoClient, login: str) -> bool:
    """Only people who can write to the repository convene the council."""
    return await permission(client, login) in TRIGGER_PERMISSIONS
