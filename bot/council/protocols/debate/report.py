"""The debate's part of the advisory: plain data the engine gathers and `bot.render` shows.

Who sat (the committee), how each panelist's position moved cycle by cycle (and which
moves no new evidence supports), the points they contended and how each ended, the
tradeoff map with each dimension's weight, the decision guide and the decision
confidence as its signals. Model-written text here is untrusted, like the rest of the
advisory: the renderers sanitize it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.council.protocols import DebateMode
from bot.council.schemas import DecisionPath, OutsideOpinion, TradeoffOption

__all__ = [
    "CommitteeMember",
    "ContentionPoint",
    "CyclePosition",
    "DebateReport",
    "DecisionConfidence",
    "OutsideRecord",
    "PositionHistory",
    "TradeoffRow",
]

# How a contended point ended.
PointOutcome = Literal["resolved", "shifted", "unresolved"]
# Why the debate stopped: the judge said CONVERGED, the mode's cycles ran out, quick mode's
# single cycle, or no judge answer (the debate went on to the vote as it stood).
ExitReason = Literal["converged", "max_cycles", "single_cycle", "no_judge_answer"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CommitteeMember(_Record):
    seat_id: str
    label: str
    name: str
    lens: str
    stance: str
    model: str


class CyclePosition(_Record):
    cycle: int = Field(ge=0, description="0: the assessment; 1..n: after discussion cycle n")
    position: str
    # The member's vote, after the last cycle: what the verdict counts (its cycle is the
    # last cycle's). A vote that differs from the last stated position is a shift too.
    vote: bool = False
    confidence: int | None = None
    shifted: bool = False  # differs from the cycle before
    # A shift whose reply cites no finding, file or line: flagged in the report.
    unsupported: bool = False


class PositionHistory(_Record):
    seat_id: str
    positions: list[CyclePosition] = Field(default_factory=list)

    @property
    def shifts(self) -> int:
        return sum(1 for p in self.positions if p.shifted)


class ContentionPoint(_Record):
    point: str
    challenger: str  # seat id
    challenged: str | None = None  # seat id; None: the challenge went to everyone
    argument: str = ""
    counter: str = ""  # the challenged side's final position, as it stood
    outcome: PointOutcome = "unresolved"
    cycle: int = Field(default=1, ge=1)


class TradeoffRow(_Record):
    dimension: str
    options: list[TradeoffOption] = Field(default_factory=list)
    weight: int = Field(default=0, ge=0, description="How many panelists raised it")


class DecisionConfidence(_Record):
    lean: str | None = None  # the most common final position (the vote, where voted)
    consensus: int = 0  # panelists whose final position is the lean
    panelists: int = 0
    spread_min: int | None = None  # the final confidences' range, 0-100
    spread_max: int | None = None
    cycles: int = 0
    max_cycles: int = 0
    shifts: int = 0
    unsupported_shifts: int = 0
    judge_verdict: str | None = None  # the last judge decision; None: no judge


class OutsideRecord(_Record):
    model: str | None = None  # None: no model outside the panel was configured
    opinion: OutsideOpinion | None = None
    note: str | None = None  # why there is none


class DebateReport(_Record):
    mode: DebateMode
    max_cycles: int
    cycles: int = 0
    exit: ExitReason = "max_cycles"
    committee: list[CommitteeMember] = Field(default_factory=list)
    # The panel rules the design still broke after its one re-ask (empty: it kept them).
    panel_problems: list[str] = Field(default_factory=list)
    is_choice: bool = False
    options: list[str] = Field(default_factory=list)
    positions: list[PositionHistory] = Field(default_factory=list)
    contention: list[ContentionPoint] = Field(default_factory=list)
    tradeoffs: list[TradeoffRow] = Field(default_factory=list)
    decision_guide: list[DecisionPath] = Field(default_factory=list)
    confidence: DecisionConfidence = Field(default_factory=DecisionConfidence)
    outside: OutsideRecord | None = None  # full mode only
