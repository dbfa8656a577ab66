"""The dry run's view of a debate: its mode, the committee it would convene (the panelists'
lenses and stances are designed at run time; their models, the judge's and the outside
opinion's are known now) and what the mode means for the run, with a warning where a
`full` debate has no second model for its outside opinion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.council.protocols import DebateModeRule, debate_mode
from bot.council.protocols.debate.panel import outside_model

__all__ = ["DESIGNED", "CommitteeRow", "DebatePlan", "plan_debate"]

DESIGNED = "designed at run time"


@dataclass(frozen=True)
class CommitteeRow:
    panelist: str
    lens: str
    stance: str
    model: str


@dataclass
class DebatePlan:
    mode: str
    rule: DebateModeRule
    committee: list[CommitteeRow]
    judge_model: str | None  # None: quick mode has no judge
    outside_model: str | None  # None: not full, or a single model
    notes: list[str] = field(default_factory=list)


def plan_debate(
    mode: str | None, models: Sequence[str], count: int, chair: str, chair_model: str | None
) -> DebatePlan:
    """`count` panelists on `models` in turn (as convening seats them), the officers on
    `chair`. Its notes say what the mode runs; a `full` debate with a single model warns
    that it runs without an outside opinion."""
    rule = debate_mode(mode)
    panel_models = [models[i % len(models)] if models else "" for i in range(count)]
    committee = [
        CommitteeRow(f"Panelist {i + 1}", DESIGNED, DESIGNED, m) for i, m in enumerate(panel_models)
    ]
    outside = outside_model(models, panel_models, chair_model) if rule.outside_opinion else None
    notes = [
        f"Debate mode {rule.name}: {rule.summary}; {count} panelists are designed for the "
        f"question by {chair or 'the chair model'} at run time (their lenses and stances)."
    ]
    if rule.outside_opinion and outside is None and models:
        notes.append(
            "Warning: a full debate asks an outside opinion of a second model, but only one "
            "model is configured: it will run without one."
        )
    elif outside is not None:
        notes.append(f"The outside opinion is asked of {outside}.")
    return DebatePlan(
        mode=rule.name,
        rule=rule,
        committee=committee,
        judge_model=(chair or None) if rule.judged else None,
        outside_model=outside,
        notes=notes,
    )
