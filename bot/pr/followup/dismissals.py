"""Whose dismissal of a finding counts, and which findings people dismissed: our thread
resolved by a person with write access (never the bot), or their thumbs-down on our
comment; for a critical finding never the pull request's author's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog

from bot.council.advisory import MergedFinding
from bot.forge import Forge, ForgeError
from bot.forge.reviews import ReviewComment
from bot.pr.followup.markers import marker_severity, same_login
from bot.pr.followup.state import PrState

__all__ = ["MAX_REACTION_READS", "Deciders", "critical_prints", "dismissals"]

log = structlog.get_logger(__name__)

MAX_REACTION_READS = 50  # our comments whose reactions are read per review


def critical_prints(
    findings: Sequence[MergedFinding], prints: Sequence[str], state: PrState
) -> set[str]:
    """Fingerprints of the critical findings: as this advisory rates them; one it does not
    raise, as the store or, without one (the Action's lasts one run), our comment says."""
    severity: dict[str, str] = {fp: f.severity for f, fp in zip(findings, prints, strict=True)}
    for fp, row in state.store.items():
        severity.setdefault(fp, row.severity)
    for fp, c in state.ours.items():
        severity.setdefault(fp, marker_severity(c.body) or "")
    return {fp for fp, rated in severity.items() if rated == "critical"}


@dataclass
class Deciders:
    """Whose dismissal counts, each person's permission read once per review: a person
    with write access (never the bot), and for a critical finding not the PR's author."""

    bot_login: str
    pr_author: str
    unreadable: set[str] = field(default_factory=set)  # logins the forge did not answer for

    async def counts(self, forge: Forge, login: str | None, *, critical: bool) -> bool:
        if not login or same_login(login, self.bot_login):
            return False
        if critical and same_login(login, self.pr_author):
            return False
        if login.casefold() in self.unreadable:
            return False
        try:
            return await forge.can_write(login)
        except ForgeError as error:  # not known to write: the finding stands
            log.warning("dismisser_permission_unreadable", login=login, error=str(error))
            self.unreadable.add(login.casefold())
            return False


async def dismissals(
    forge: Forge, state: PrState, critical: set[str], deciders: Deciders
) -> dict[str, str]:
    """Fingerprints dismissed, and by whom: our thread resolved by a person whose word
    counts, or their thumbs-down. Non-critical findings already dismissed in the store are
    not read again; critical ones are (the store keeps them open), to say who dismissed
    them."""
    by_comment = {t.first_comment_id: t for t in state.threads}
    store = state.store
    found: dict[str, str] = {}
    for n, (fp, comment) in enumerate(state.ours.items()):
        is_critical = fp in critical
        if fp in found or (fp in store and store[fp].status == "dismissed" and not is_critical):
            continue
        thread = by_comment.get(comment.id)
        fixed = fp in store and store[fp].status == "fixed"
        if (
            thread is not None
            and thread.is_resolved
            and not fixed  # resolved after it was fixed: not a dismissal
            and await deciders.counts(forge, thread.resolved_by, critical=is_critical)
        ):
            assert thread.resolved_by is not None
            found[fp] = thread.resolved_by
            continue
        if n >= MAX_REACTION_READS:
            continue
        login = await _thumbs_down(forge, comment, deciders, critical=is_critical)
        if login is not None:
            found[fp] = login
    return found


async def _thumbs_down(
    forge: Forge, comment: ReviewComment, deciders: Deciders, *, critical: bool
) -> str | None:
    """Who gave our comment a thumbs-down whose word counts (the first of them), if anyone."""
    try:
        reactions = await forge.review_comment_reactions(comment.id)
    except ForgeError as error:
        log.warning("reactions_unreadable", comment_id=comment.id, error=str(error))
        return None
    for content, login in reactions:
        if content == "-1" and await deciders.counts(forge, login, critical=critical):
            return login
    return None
