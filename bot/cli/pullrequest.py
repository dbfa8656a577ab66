"""`council review --pr OWNER/REPO#N`: the App's own fetch and context, with a GITHUB_TOKEN,
printed instead of posted."""

from __future__ import annotations

import re

from bot.cli.runner import ReviewPlan, plan_from
from bot.context import BuiltContext
from bot.settings import Settings

_PR = re.compile(r"^(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(?P<number>[1-9][0-9]*)$")


class PullRefError(ValueError):
    """A --pr value that is not OWNER/REPO#N, or no token to read it with."""


def parse_pr(text: str) -> tuple[str, int]:
    match = _PR.match(text.strip())
    if match is None:
        raise PullRefError(f"--pr takes OWNER/REPO#NUMBER, not {text!r}")
    return match["repo"], int(match["number"])


async def plan_pull_request(
    settings: Settings, pr: str, *, protocol: str, question: str | None, models: list[str]
) -> tuple[ReviewPlan, str]:
    """The plan, and the PR's head SHA."""
    # Imported here: githubkit costs every other command's start-up ~0.15 s.
    from bot.github.client import RepoClient
    from bot.github.errors import GitHubError
    from bot.github.fetch import fetch_pull
    from bot.review.inputs import pull_context

    repo, number = parse_pr(pr)
    if settings.github_token is None:
        raise PullRefError("--pr needs GITHUB_TOKEN (a token that can read the repository)")
    token = settings.github_token.get_secret_value()
    try:
        async with RepoClient.from_token(token, repo, settings) as client:
            pull = await fetch_pull(client, number)

            async def remote(budget: int) -> tuple[BuiltContext, str, list[str]]:
                found = await pull_context(client, pull, budget_tokens=budget)
                return found.built, pull.title, found.notes

            plan = await plan_from(
                settings, remote, protocol=protocol, question=question, models=models
            )
    except GitHubError as error:
        raise PullRefError(f"cannot read {pr}: {error}") from None
    return plan, pull.head_sha
