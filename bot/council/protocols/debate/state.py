"""The `debate` protocol's report from its run: the panel, every cycle's replies, the judge's
decisions, the outside opinion and the votes (`bot.council.protocols.debate.rules.build_report`)."""

from __future__ import annotations

from bot.council.protocols.debate.report import DebateReport
from bot.council.protocols.debate.rules import DebateRecord, build_report
from bot.council.run import Run
from bot.council.schemas import Vote

__all__ = ["report"]


def report(run: Run) -> DebateReport | None:
    """The debate's report (bot.council.protocols.debate.rules); None for the other protocols."""
    mode = run.mode
    if mode is None:
        return None
    valid = run.valid()
    return build_report(
        DebateRecord(
            rule=mode,
            seats=valid,
            assessments={
                s.seat_id: a for s in valid if (a := run.records[s.seat_id].assessment) is not None
            },
            replies=run.replies,
            judged=[j.decision for j in run.judged],
            cycles=run.cycles,
            exit=run.exit,
            panel=run.convened.panel,
            synthesis=run.synthesis,
            outside=run.outside,
            votes={
                s.seat_id: v for s in valid if isinstance(v := run.records[s.seat_id].vote, Vote)
            },
        ),
        committee=run.order,
    )
