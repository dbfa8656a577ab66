"""What a `strategies` deliberation reports beyond the common advisory: plain data.

The engine fills it in (`bot.council.protocols.strategies.critique`), `Advisory.strategies`
carries it, the renderers show it (`bot.render.strategies`). Model-written text in it is
untrusted and is sanitized by the renderers.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.council.protocols.strategies.schemas import TaskType
from bot.council.schemas import Severity

__all__ = [
    "RUBRIC",
    "Classification",
    "CritiquePoint",
    "LensChoice",
    "Matrix",
    "PlanConfidence",
    "Position",
    "RubricRow",
    "StrategiesReport",
    "StrategyItem",
    "StrategyPlan",
    "StrategyRound",
]

# The five dimensions of the 100-point rubric and their weights (docs/deliberation.md,
# "Strategies").
RUBRIC: tuple[tuple[str, int], ...] = (
    ("correctness", 30),
    ("completeness", 20),
    ("elegance", 15),
    ("robustness", 20),
    ("integration", 15),
)
# How the conflict-resolution matrix decided.
Matrix = Literal["clear-winner", "merge", "all-low", "contradictory", "incomplete"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Classification(_Record):
    task_type: TaskType
    # "signals": the change's own signals decided; "model": they were ambiguous and one
    # cheap call decided; "fallback": ambiguous and no answer, the best guess was taken.
    decided_by: Literal["signals", "model", "fallback"]
    evidence: list[str] = Field(default_factory=list)  # the signals that counted
    candidates: list[TaskType] = Field(default_factory=list)  # when ambiguous
    reason: str | None = None  # the model's, when it decided
    model: str | None = None  # the model asked, when one was


class LensChoice(_Record):
    seat_id: str
    lens: str  # "Root cause"
    style: str  # "analytical", "critical", ...
    mandate: str
    model: str
    temperature: float | None = None  # None: the model takes none, the style alone varies


class RubricRow(_Record):
    """One analysis on the rubric: the referees' mean scores before critique, the bounded
    adjustment the critique rounds added, and the total after."""

    seat_id: str
    dimensions: list[float | None] = Field(default_factory=list)  # in RUBRIC order
    before: float | None = None
    adjustment: float = 0.0
    after: float | None = None
    referees: int = 0  # how many critics scored it


class CritiquePoint(_Record):
    round: int = Field(ge=1)
    critic: str  # seat id
    target: str  # seat id
    role: Literal["HUNTER", "SKEPTIC"]
    text: str
    severity: Severity | None = None
    location: str | None = None
    new: bool = False  # a high-severity HUNTER point nobody had raised before


class Position(_Record):
    seat_id: str
    round: int = Field(ge=0)  # 0: the independent analysis
    verdict: str
    evidence: list[str] = Field(default_factory=list)  # new evidence cited (locations)
    flipped: bool = False
    # Flipped while citing no evidence not cited before: a sycophantic shift.
    flagged: bool = False


class StrategyRound(_Record):
    round: int = Field(ge=1)
    agreement: float = Field(ge=0.0, le=1.0)  # share of the seats on the commonest verdict
    new_high: int = 0  # high-severity findings raised for the first time
    converged: bool = False
    why: str = ""


class StrategyItem(_Record):
    seat_id: str  # the strategy it comes from
    text: str


class PlanConfidence(_Record):
    overall: int = Field(ge=0, le=100)
    agreement: float = Field(ge=0.0, le=1.0)
    quality: Literal["strong", "moderate", "weak"]
    quality_reason: str
    risk: Literal["low", "medium", "high"]
    risk_reason: str


class StrategyPlan(_Record):
    """What convening decided, stored with the seats (a resumed run reads it back)."""

    classification: Classification
    composition: list[LensChoice] = Field(default_factory=list)
    temperature_note: str | None = None


class StrategiesReport(_Record):
    classification: Classification
    composition: list[LensChoice] = Field(default_factory=list)
    # e.g. "temperatures not accepted by openai:gpt-5.4: the styles alone vary"
    temperature_note: str | None = None
    rows: list[RubricRow] = Field(default_factory=list)
    points: list[CritiquePoint] = Field(default_factory=list)
    positions: list[Position] = Field(default_factory=list)
    rounds: list[StrategyRound] = Field(default_factory=list)
    max_rounds: int = 0
    converged: bool = False
    reconciled: bool = False
    reconcile_reason: str = ""
    matrix: Matrix = "incomplete"
    matrix_reason: str = ""
    winner: str | None = None  # seat id
    presented: list[str] = Field(default_factory=list)  # contradictory: both, seat ids
    complementary: list[StrategyItem] = Field(default_factory=list)
    dropped: list[StrategyItem] = Field(default_factory=list)
    merged_plan: str | None = None
    unresolved: str | None = None
    confidence: PlanConfidence | None = None
    action_items: list[StrategyItem] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # e.g. a convergence-sycophancy warning

    def flagged(self) -> list[Position]:
        return [p for p in self.positions if p.flagged]

    def row(self, seat_id: str) -> RubricRow | None:
        return next((r for r in self.rows if r.seat_id == seat_id), None)

    def lens_of(self, seat_id: str) -> str:
        found = next((c for c in self.composition if c.seat_id == seat_id), None)
        return found.lens if found else seat_id
