"""`publish_inline`: dismissals read, the advisory filtered, new findings posted as one
review, fixed ones' threads closed (the order is the package's docstring's)."""

from __future__ import annotations

import structlog

from bot.council.advisory import Advisory
from bot.council.schemas import Severity
from bot.forge import Forge
from bot.pr.followup.dismissals import Deciders, critical_prints, dismissals
from bot.pr.followup.fixed import close_fixed
from bot.pr.followup.markers import finding_fingerprint
from bot.pr.followup.posting import MAX_COMMENTS, Poster, choose
from bot.pr.followup.shown import filtered
from bot.pr.followup.state import InlineResult, read_state
from bot.review.anchors import DiffLines
from bot.store.db import Database
from bot.store.findings import mark

__all__ = ["publish_inline"]

log = structlog.get_logger(__name__)


async def publish_inline(
    forge: Forge,
    pr: int,
    head_sha: str,
    advisory: Advisory,
    lines: DiffLines,
    db: Database | None,
    *,
    bot_login: str,
    pr_author: str,
    can_resolve_threads: bool,
    min_severity: Severity = "major",
    post: bool = True,
) -> InlineResult:
    """Dismissals read, the advisory filtered, new findings posted as one review that only
    comments, fixed ones resolved (or replied to). `post=False` only filters (inline
    comments off: a dismissed finding is still not raised again) and resolves fixed
    threads. `pr_author`: the pull request's author, whose dismissal of a critical finding
    never counts.

    Never raises ForgeError for the review itself (the sticky comment matters more): a
    refusal is in `error` and in the advisory's notes."""
    repo = forge.full_name
    state = await read_state(forge, pr, db, bot_login)
    prints = [finding_fingerprint(f, lines) for f in advisory.findings]
    critical = critical_prints(advisory.findings, prints, state)
    deciders = Deciders(bot_login=bot_login, pr_author=pr_author)
    who = await dismissals(forge, state, critical, deciders)
    # A critical finding is never marked dismissed: it stays open, whoever dismissed it.
    if db is not None:
        await mark(db, repo, pr, sorted(set(who) - critical - state.dismissed()), "dismissed")
    dismissed = set(who) | state.dismissed()

    pairs = list(zip(advisory.findings, prints, strict=True))
    kept = [(f, fp) for f, fp in pairs if fp not in dismissed or fp in critical]
    dropped = [f for f, fp in pairs if fp in dismissed and fp not in critical]
    result = InlineResult(advisory=advisory, dismissed=len(dropped))
    result.kept_critical = [(f.title, who[fp]) for f, fp in pairs if fp in critical and fp in who]

    poster = Poster(forge, pr, head_sha, db, bot_login, can_resolve_threads)
    on_pr = set(state.ours) | {
        fp for fp, row in state.store.items() if row.review_comment_id is not None
    }
    wanted = choose(kept, on_pr, lines, min_severity, result)
    if post and wanted:
        await poster.post(wanted[:MAX_COMMENTS], lines, result)
    result.fixed = await close_fixed(poster, state, set(prints), dismissed, lines)
    result.advisory = filtered(advisory, dropped, dismissed - critical, lines, result)
    _logged(repo, pr, result)
    return result


def _logged(repo: str, pr: int, result: InlineResult) -> None:
    log.info(
        "inline_published",
        repo=repo,
        pr=pr,
        posted=result.posted,
        already=result.already,
        dismissed=result.dismissed,
        off_diff=result.off_diff,
        kept_critical=len(result.kept_critical),
        resolved=result.fixed.resolved,
        replied=result.fixed.replied,
    )
