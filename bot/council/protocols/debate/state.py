"""The `debate` protocol's own run state and its report from the run: the panel, every
cycle's replies, the judge's decisions, the outside opinion and the votes
(`bot.council.protocols.debate.record.build_report`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.council.protocols import DebateModeRule, debate_mode
from bot.council.protocols.debate.record import DebateRecord, build_report
from bot.council.protocols.debate.report import DebateReport, ExitReason, OutsideRecord
from bot.council.run import Run
from bot.council.schemas import DiscussionReply, Vote

__all__ = ["DebateState", "debate_state", "mode_rule", "report"]


@dataclass
class DebateState:
    """Every reply by cycle and seat, the cycles held and why they stopped, and the outside
    opinion (full mode); filled in by the discussion and the outside opinion."""

    replies: dict[int, dict[str, DiscussionReply]] = field(default_factory=dict)
    cycles: int = 0
    exit: ExitReason = "max_cycles"
    outside: OutsideRecord | None = None


def mode_rule(run: Run) -> DebateModeRule | None:
    """The mode of a judged protocol's run (the request's, else the default); None for a
    protocol with no judge."""
    return debate_mode(run.request.debate_mode) if run.protocol.judged else None


def debate_state(run: Run) -> DebateState:
    """The run's debate state, made the first time it is asked for."""
    return run.own_state(DebateState, DebateState)


def report(run: Run) -> DebateReport | None:
    """The debate's report (bot.council.protocols.debate.record); None for a protocol with no
    judge."""
    mode = mode_rule(run)
    if mode is None:
        return None
    state = debate_state(run)
    valid = run.valid()
    return build_report(
        DebateRecord(
            rule=mode,
            seats=valid,
            assessments={
                s.seat_id: a for s in valid if (a := run.records[s.seat_id].assessment) is not None
            },
            replies=state.replies,
            judged=[j.decision for j in run.judged],
            cycles=state.cycles,
            exit=state.exit,
            panel=run.convened.panel,
            synthesis=run.synthesis,
            outside=state.outside,
            votes={
                s.seat_id: v for s in valid if isinstance(v := run.records[s.seat_id].vote, Vote)
            },
        ),
        committee=run.order,
    )
