"""The code of each phase a protocol can list, by the phase's name (`PHASES`).

"convene" runs before the others (its result is the run itself); "judge" runs inside the
discussion, after each round. The shared phases live in this package; a protocol's own
phases in its package (strategies' critique and reconciliation:
`bot.council.protocols.strategies.critique`).
`register_phase` adds the code of a new phase (a new protocol's).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any

from bot.council.phases.assess import assess, gate
from bot.council.phases.discuss import discuss
from bot.council.phases.outside import outside
from bot.council.phases.rank import rank
from bot.council.phases.resolve import resolve
from bot.council.phases.synthesize import synthesize
from bot.council.phases.vote import vote
from bot.council.protocols.debate import state as debate_state
from bot.council.protocols.strategies import critique
from bot.council.run import Run, Stop

__all__ = ["PHASES", "PhaseCode", "register_phase", "report_parts", "unregister_phase"]

# One phase of a run: None to go on, or how the deliberation ended early.
PhaseCode = Callable[[Run], Awaitable[Stop | None]]


_CODE: dict[str, PhaseCode] = {
    "assess": assess,
    "gate": gate,
    "discuss": discuss,
    "outside": outside,
    "critique": critique.critique,
    "reconcile": critique.reconcile,
    "rank": rank,
    "vote": vote,
    "resolve": resolve,
    "synthesize": synthesize,
}
PHASES: Mapping[str, PhaseCode] = MappingProxyType(_CODE)


def register_phase(name: str, code: PhaseCode) -> None:
    """Add the code of a phase no protocol listed before (ValueError for a known one)."""
    if name in _CODE:
        raise ValueError(f"phase {name!r} already has its code")
    _CODE[name] = code


def unregister_phase(name: str) -> None:
    """Take the code of a phase `register_phase` added off again."""
    _CODE.pop(name, None)


def report_parts(run: Run) -> dict[str, Any]:
    """The advisory's protocol parts: each protocol's report of its run (None for a run of
    another protocol)."""
    return dict(debate=debate_state.report(run), strategies=critique.report(run))
