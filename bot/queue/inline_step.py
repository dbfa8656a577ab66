"""The App's follow-up step (`bot.pr.followup.step.follow_up`, the Action's too), run by
`publishing.publish` before the sticky comment is written, as the App's bot."""

from __future__ import annotations

import structlog

from bot.council.advisory import Advisory
from bot.forge import Forge, ForgeError, PullInfo
from bot.pr.followup.step import InlineRequest, follow_up
from bot.queue.jobcontext import JobContext

__all__ = ["inline_step"]

log = structlog.get_logger(__name__)


async def inline_step(
    ctx: JobContext, forge: Forge, pull: PullInfo, advisory: Advisory, inline: InlineRequest
) -> Advisory:
    try:
        login = await ctx.deps.github.app_login()
    except ForgeError as error:
        log.warning("inline_step_failed", pr=pull.number, error=str(error))
        return advisory
    return await follow_up(forge, pull, advisory, inline, ctx.db, bot_login=login)
