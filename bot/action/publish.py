"""Posting from a workflow run: the App's sticky comment, written with the workflow's token
through the forge (`bot.pr.comment`), rendered by `bot.render` exactly as the App renders
it; the status is `bot.pr.status.StatusRun`, whose details link is the workflow run.

There is no Redis to hold a lock across the comment's look-up and write: the workflow's
`concurrency` group (one run per pull request) serialises them instead. There is no queue
to post a refused comment later either: the check run completes with the verdict anyway
(within `COMMENT_WAIT_S` of the advisory), saying why the comment is missing.
"""

from __future__ import annotations

from bot.council.advisory import Advisory
from bot.forge import Forge, PostedComment
from bot.pr.comment import post_sticky
from bot.render import render_comment
from bot.render.markdown import comment_options
from bot.review.setup import RepoSetup

__all__ = ["post_advisory_comment"]


async def post_advisory_comment(
    forge: Forge, pr: int, advisory: Advisory, setup: RepoSetup, login: str
) -> PostedComment:
    """The sticky comment (updated in place, never a second one), rendered shorter while
    the forge refuses it as too long."""
    options = comment_options(setup.config).model_copy(update={"gate": setup.config.gate})

    def render(limit: int) -> str:
        return render_comment(advisory, max_chars=limit, repo=forge.full_name, options=options)

    return await post_sticky(forge, pr, render, login)
