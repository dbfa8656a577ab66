"""Before a deliberation starts: is the installation's daily budget already spent?

What each call may spend is decided as it starts, not here: `bot.review.run.deliberate`
reserves every call's worst case in the store against the deliberation's cap, the pull
request's and the installation's daily cap (COUNCIL_MAX_DAILY_COST_USD), atomically across
workers (`bot.store.spend`). This check only says early, before any GitHub read or model
call, that a day's budget is gone.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from bot.queue.jobcontext import JobContext
from bot.store.installations import daily_cost


class DailyCapReached(Exception):
    """The installation spent its daily model budget; the message says when it resets."""


def today() -> date:
    return datetime.now(UTC).date()


async def cost_cap(ctx: JobContext, repo_cap: float | None) -> float | None:
    """The deliberation's own cap (`repo_cap`: the repo config's, within the operator's);
    raises DailyCapReached if the installation's day is spent already."""
    daily = ctx.settings.max_daily_cost_usd
    installation = ctx.request.installation_id
    if daily is None or installation is None:
        return repo_cap
    if await daily_cost(ctx.db, installation, today()) >= daily:
        raise DailyCapReached(
            f"The installation's daily model budget (${daily:.2f}) is spent; the council "
            "can convene again after midnight UTC, or when the operator raises "
            "COUNCIL_MAX_DAILY_COST_USD."
        )
    return repo_cap
