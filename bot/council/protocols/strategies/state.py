"""The `strategies` protocol's own run state: the analyses, the critique rounds and what
they decided (filled in by `bot.council.protocols.strategies.critique`, carried by the run)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.council.protocols.strategies.report import CritiquePoint, StrategyPlan, StrategyRound
from bot.council.protocols.strategies.schemas import CritiqueReply, Reconciliation
from bot.council.schemas import Assessment

__all__ = ["StrategiesState"]


@dataclass
class StrategiesState:
    plan: StrategyPlan
    # The independent analyses as they were (the seats' verdicts are revised after critique).
    analyses: dict[str, Assessment] = field(default_factory=dict)
    replies: dict[int, dict[str, CritiqueReply]] = field(default_factory=dict)
    points: list[CritiquePoint] = field(default_factory=list)
    rounds: list[StrategyRound] = field(default_factory=list)
    known: set[str] = field(default_factory=set)
    converged: bool = False
    reconciliation: Reconciliation | None = None
    reconciled: bool = False
    reconcile_reason: str = ""
    escalated: bool = False
