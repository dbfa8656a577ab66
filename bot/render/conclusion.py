"""The merge gate: the check run's conclusion for an advisory, and the words that say why.

GitHub counts a required check as passed when its conclusion is `success`, `neutral` or
`skipped`; `failure`, `action_required`, `cancelled` and `timed_out` keep the pull request
from merging. Under `gate: verdict` (the default) nothing passes without a verdict:

| ending | conclusion | passes a required check |
| --- | --- | --- |
| APPROVED | success | yes |
| APPROVED_WITH_CONDITIONS | neutral | yes |
| ESCALATE | action_required | no |
| REJECTED | failure | no |
| any verdict with an open critical finding or red flag no approval answered | failure | no |
| nothing new to review, with an earlier verdict | that verdict's conclusion | as it |
| nothing to review, no earlier verdict | failure | no |
| NO_QUORUM (the one-seat limited advisory too), COST_LIMIT, FAILED (expired too) | failure | no |
| CANCELLED (superseded too) | cancelled | no |

Under `gate: advisory` the check never blocks: `failure` and `action_required` become
`neutral`. `GATE_TABLE` is this table as data: README's table is checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.council.advisory import Advisory, Resolution
from bot.council.blocking import Blocker, open_blockers
from bot.safety.markdown import sanitize_inline

__all__ = [
    "GATE_TABLE",
    "PASSING",
    "Conclusion",
    "Gate",
    "GateRow",
    "blocked_title",
    "conclusion_for",
    "gate_blockers",
    "gate_note",
    "no_verdict_title",
]

Gate = Literal["verdict", "advisory"]
Conclusion = Literal["success", "neutral", "action_required", "failure", "cancelled"]
# What GitHub lets through a required check.
PASSING: frozenset[str] = frozenset({"success", "neutral", "skipped"})

NO_VERDICT = "No verdict"
BLOCKED = "Blocked by an open critical finding"

_VERDICTS: dict[Resolution, Conclusion] = {
    Resolution.APPROVED: "success",
    Resolution.APPROVED_WITH_CONDITIONS: "neutral",
    Resolution.ESCALATE: "action_required",
    Resolution.REJECTED: "failure",
}
# What a reader does about an ending without a verdict, said on the check run.
_WHAT_TO_DO: dict[Resolution, str] = {
    Resolution.NO_QUORUM: (
        "re-run the review (comment `/council`, or press Re-convene) once the models "
        "answer; `council models check` shows which model fails."
    ),
    Resolution.COST_LIMIT: (
        "the operator raises the cap named above (COUNCIL_MAX_COST_USD for one review, "
        "COUNCIL_MAX_PR_COST_USD for a pull request, COUNCIL_MAX_DAILY_COST_USD for a day; "
        "a repository's `max_cost_usd` can only lower them), then re-run with `/council`."
    ),
    Resolution.FAILED: (
        "fix what the reason names (the configuration, a persona, the App's access), then "
        "re-run with `/council`."
    ),
    Resolution.NOTHING_TO_REVIEW: (
        "the council reads changed text lines only: a person reviews this change, or a "
        "push with changed text lines gets a review."
    ),
}


def conclusion_for(advisory: Advisory, gate: Gate = "verdict") -> Conclusion:
    """The check run's conclusion: the verdict's, `failure` while an open critical finding
    blocks it, `failure` without a verdict; `gate: advisory` never blocks."""
    conclusion = _strict(advisory)
    if gate == "advisory" and conclusion in ("failure", "action_required"):
        return "neutral"
    return conclusion


def _strict(advisory: Advisory) -> Conclusion:
    r = advisory.resolution
    if r is Resolution.CANCELLED:
        return "cancelled"
    if not r.is_verdict:
        return "failure"
    if open_blockers(advisory):
        return "failure"
    return _VERDICTS[r]


def no_verdict_title(advisory: Advisory, heading: str) -> str | None:
    """ "No verdict: the council could not convene: ..." for an ending without a verdict
    (`heading`: the resolution's own title); None for a verdict or a cancellation."""
    r = advisory.resolution
    if r.is_verdict or r is Resolution.CANCELLED:
        return None
    reason = " ".join((advisory.reason or "").split())
    head = f"{NO_VERDICT}: {heading[:1].lower()}{heading[1:]}"
    return f"{head}: {reason}" if reason else head


def gate_blockers(advisory: Advisory) -> list[Blocker]:
    """The open blockers that change the conclusion: none for a rejection, which fails the
    gate by itself and says why in its own words."""
    if advisory.resolution is Resolution.REJECTED:
        return []
    return open_blockers(advisory)


def blocked_title(blockers: list[Blocker]) -> str:
    first = blockers[0].describe()
    more = f" (and {len(blockers) - 1} more)" if len(blockers) > 1 else ""
    return f"{BLOCKED}: {first}{more}"


def gate_note(advisory: Advisory, gate: Gate, *, list_current: bool = True) -> str | None:
    """A paragraph saying why the check blocks, or what to do. `list_current=False` (the
    comment, whose findings table lists them) names only blockers from earlier reviews."""
    if gate == "advisory":
        return None
    what = _WHAT_TO_DO.get(advisory.resolution)
    if what is not None:
        return f"**{NO_VERDICT}, so this check blocks the merge (gate: verdict).** To go on: {what}"
    blockers = gate_blockers(advisory)
    if not blockers:
        return None
    head = f"**{BLOCKED}: the check fails until it is fixed or a vote answers it.**"
    shown = blockers if list_current else [b for b in blockers if b.kind == "earlier"]
    if not shown:
        return f"{head} It is listed below."
    # Finding titles are the models' words: one sanitized line each.
    lines = "\n".join(f"- {sanitize_inline(b.describe()[:300])}" for b in shown[:10])
    if len(shown) > 10:
        lines += f"\n- …and {len(shown) - 10} more"
    return f"{head} No approval addressed:\n\n{lines}"


@dataclass(frozen=True)
class GateRow:
    """One row of README's gate table: an ending, its conclusion under `gate: verdict`,
    whether that passes a required check, and its conclusion under `gate: advisory`."""

    ending: str
    verdict_gate: str
    advisory_gate: str

    @property
    def passes(self) -> str:
        if self.verdict_gate == CARRIED:
            return "as that verdict"
        return "yes" if self.verdict_gate in PASSING else "no"


CARRIED = "the earlier verdict's"


def _advisory_of(conclusion: str) -> str:
    if conclusion == CARRIED:
        return "the earlier verdict's, never blocking"
    return "neutral" if conclusion in ("failure", "action_required") else conclusion


GATE_TABLE: tuple[GateRow, ...] = tuple(
    GateRow(ending, c, _advisory_of(c))
    for ending, c in (
        ("APPROVED", "success"),
        ("APPROVED_WITH_CONDITIONS", "neutral"),
        ("ESCALATE", "action_required"),
        ("REJECTED", "failure"),
        ("any verdict with an open critical finding or red flag no approval answered", "failure"),
        ("nothing new to review (a base merge, an unchanged diff) after a verdict", CARRIED),
        ("nothing to review, and no earlier verdict", "failure"),
        ("NO_QUORUM (the one-seat limited advisory too)", "failure"),
        ("COST_LIMIT", "failure"),
        ("FAILED (a failed or expired review)", "failure"),
        ("CANCELLED (cancelled, or superseded by a newer push)", "cancelled"),
    )
)
