"""What a deliberation may spend: the lower of the repo's cap and what is left of the
installation's daily budget (COUNCIL_MAX_DAILY_COST_USD)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from bot.queue.jobcontext import JobContext
from bot.store.records import daily_cost


class DailyCapReached(Exception):
    """The installation spent its daily model budget; the message says when it resets."""


def today() -> date:
    return datetime.now(UTC).date()


async def cost_cap(ctx: JobContext, repo_cap: float | None) -> float | None:
    daily = ctx.settings.max_daily_cost_usd
    installation = ctx.request.installation_id
    if daily is None or installation is None:
        return repo_cap
    left = daily - await daily_cost(ctx.db, installation, today())
    if left <= 0:
        raise DailyCapReached(
            f"The installation's daily model budget (${daily:.2f}) is spent; the council "
            "can convene again after midnight UTC, or when the operator raises "
            "COUNCIL_MAX_DAILY_COST_USD."
        )
    return left if repo_cap is None else min(repo_cap, left)
