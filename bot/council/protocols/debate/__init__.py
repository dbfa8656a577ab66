"""The `debate` protocol's table entry and its modes (`/council debate --quick|--standard|
--full`, repo `debate.mode`): a designed panel debates until a step-back judge calls
convergence."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from bot.council.protocols.spec import Button, Discussion, Protocol, Seats

__all__ = [
    "DEBATE",
    "DEBATE_MODES",
    "DEFAULT_DEBATE_MODE",
    "MAX_JUDGE_CYCLES",
    "DebateMode",
    "DebateModeRule",
    "debate_mode",
]

# How deep a debate goes (`/council debate --quick|--standard|--full`, repo `debate.mode`).
DebateMode = Literal["quick", "standard", "full"]
MAX_JUDGE_CYCLES = 3


@dataclass(frozen=True, slots=True)
class DebateModeRule:
    """What a debate mode runs: a judge or not, how many cycles at most, and whether an
    outside opinion is asked of a configured model that is not on the panel."""

    name: DebateMode
    judged: bool
    max_cycles: int
    outside_opinion: bool
    summary: str


DEFAULT_DEBATE_MODE: DebateMode = "standard"
DEBATE_MODES: Mapping[str, DebateModeRule] = MappingProxyType(
    {
        "quick": DebateModeRule(
            "quick",
            judged=False,
            max_cycles=1,
            outside_opinion=False,
            summary="one discussion cycle, no judge",
        ),
        "standard": DebateModeRule(
            "standard",
            judged=True,
            max_cycles=2,
            outside_opinion=False,
            summary="a step-back judge, at most 2 cycles",
        ),
        "full": DebateModeRule(
            "full",
            judged=True,
            max_cycles=MAX_JUDGE_CYCLES,
            outside_opinion=True,
            summary=f"a step-back judge, at most {MAX_JUDGE_CYCLES} cycles, and an outside "
            "opinion from a configured model not on the panel (none with a single model)",
        ),
    }
)


def debate_mode(mode: str | None) -> DebateModeRule:
    """The rule of a debate mode; None: `DEFAULT_DEBATE_MODE`. ValueError for another name."""
    found = DEBATE_MODES.get(mode or DEFAULT_DEBATE_MODE)
    if found is None:
        raise ValueError(f"unknown debate mode {mode!r}; choose one of {', '.join(DEBATE_MODES)}")
    return found


DEBATE = Protocol(
    name="debate",
    summary="2-4 panelists designed for the question debate, then vote; `debate.mode`: quick "
    "(1 cycle, no judge), standard (a judge, <=2 cycles), full (<=3, outside opinion)",
    rules="Panelists designed for the question debate it; a step-back judge decides "
    "when the debate has converged; members vote; a chair synthesizes.",
    default_for="`/council debate ...`",
    phases=(
        "convene",
        "assess",
        "gate",
        "discuss",
        "judge",
        "outside",
        "vote",
        "resolve",
        "synthesize",
    ),
    seats=Seats(
        convene="designed",
        rule="2-4 panelists designed for the question (3; 4 with 4 or more models), "
        "plus a step-back judge",
        default=3,
        minimum=2,
        maximum=4,
    ),
    discussion=Discussion(
        rounds_from="judge", default_rounds=MAX_JUDGE_CYCLES, max_rounds=MAX_JUDGE_CYCLES
    ),
    button=Button("Full debate", "Convene a full debate"),
)
