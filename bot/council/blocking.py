"""What keeps a verdict from passing the merge gate: open critical findings and red flags.

A critical finding (or a red flag: "a problem that alone should block the merge") that no
approving ballot answered blocks the merge whatever the council resolved, and so does a
critical finding an earlier review of the pull request raised that is still open (an
incremental re-review lists it in its scope as `open`). The council's own resolution is
not rewritten: an approval with an unanswered critical finding stays APPROVED_WITH_CONDITIONS
(its condition says "Resolve the critical finding: ..."); the check run's conclusion is
where the block shows (`bot.render.conclusion`).

A ballot answers an issue as `bot.council.resolution.answers` says: an approving vote's
rationale and conditions, or, without a vote phase, an approving assessment's merge
conditions, name most of the issue's words. Only an advisory with a verdict can be blocked;
one without a verdict already fails the gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.council.advisory import Advisory, format_location
from bot.council.findings import same_issue
from bot.council.resolution import answers

__all__ = ["Blocker", "open_blockers"]


@dataclass(frozen=True)
class Blocker:
    kind: Literal["critical", "red_flag", "earlier"]
    title: str
    location: str = ""  # path:line, or "" for a red flag
    since: str | None = None  # an earlier review's head SHA ("earlier" only)

    def describe(self) -> str:
        where = f" ({self.location})" if self.location else ""
        if self.kind == "earlier" and self.since:
            return f"{self.title}{where}, raised at {self.since[:7]} and still open"
        return f"{self.title}{where}"


def _approvals(advisory: Advisory) -> list[str]:
    """What each approving seat said, as the resolution reads its ballot."""
    valid = advisory.valid_seats()
    if any(s.vote is not None for s in valid):
        return [
            " ".join([s.vote.rationale, *s.vote.conditions])
            for s in valid
            if s.vote is not None and s.vote.vote == "APPROVE"
        ]
    return [
        " ".join(s.assessment.merge_conditions)
        for s in valid
        if s.assessment is not None and s.assessment.verdict != "REJECT"
    ]


def open_blockers(advisory: Advisory) -> list[Blocker]:
    """The open critical findings and red flags no approval answered, current ones first."""
    if not advisory.resolution.is_verdict:
        return []
    said = _approvals(advisory)

    def answered(title: str) -> bool:
        return any(answers(text, title) for text in said)

    found = [
        Blocker("critical", " ".join(f.title.split()), f.location())
        for f in advisory.findings
        if f.severity == "critical" and not answered(f.title)
    ]
    found += [
        Blocker("red_flag", t.title)
        for t in advisory.top_findings
        if t.kind == "red_flag" and not answered(t.title)
    ]
    rereview = advisory.scope.rereview if advisory.scope is not None else None
    if rereview is not None:
        for earlier in rereview.of("open"):
            if earlier.severity != "critical" or answered(earlier.title):
                continue
            again = any(
                f.path == earlier.path and same_issue(f.title, earlier.title)
                for f in advisory.findings
            )
            if not again:  # raised again now: judged above with this review's findings
                where = format_location(earlier.path, earlier.line, None)
                found.append(
                    Blocker("earlier", " ".join(earlier.title.split()), where, rereview.since)
                )
    return found
