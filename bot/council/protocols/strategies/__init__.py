"""The `strategies` protocol's table entry: strategy lenses analyse, critique and score each
other; a conflict matrix picks the winner."""

from __future__ import annotations

from types import MappingProxyType

from bot.council.protocols.spec import PhaseCall, Protocol, Seats, member_calls

__all__ = ["MAX_CRITIQUE_ROUNDS", "STRATEGIES"]

# Cross-critique rounds at most (another runs only when one does not converge).
MAX_CRITIQUE_ROUNDS = 2


def _own_calls(phase: str, members: range, chair_votes: bool) -> list[PhaseCall]:
    """The classification (made only when the signals are ambiguous: planned as the one
    call it makes at most), every cross-critique round (another runs only when one does not
    converge: all are planned) and the reconciliation (only when the top scores are close:
    planned)."""
    if phase == "convene":
        return [PhaseCall("classify", "chair")]
    if phase == "critique":
        return [
            call
            for n in range(1, MAX_CRITIQUE_ROUNDS + 1)
            for call in member_calls(f"critique {n}", members, chair_votes)
        ]
    if phase == "reconcile":
        return [PhaseCall("reconcile", "chair")]
    return []


STRATEGIES = Protocol(
    name="strategies",
    summary="2-3 strategy lenses for the change's task type analyse it, then critique and "
    f"score each other (<= {MAX_CRITIQUE_ROUNDS} rounds); a conflict matrix picks the winner",
    rules="Strategy lenses analyse independently, then attack, check and score each other's "
    "analyses on a 100-point rubric; a chair reconciles close ones and synthesizes.",
    default_for="`/council strategies ...`",
    phases=("convene", "assess", "gate", "critique", "reconcile", "resolve", "synthesize"),
    seats=Seats(
        convene="strategies",
        rule="2-3 strategy lenses for the task type (classified from the signals; one cheap "
        "call when they are ambiguous)",
        default=3,
        minimum=2,
        maximum=3,
    ),
    own_calls=_own_calls,
    phase_words=MappingProxyType(
        {
            "critique": f"critique(<={MAX_CRITIQUE_ROUNDS} rounds)",
            "reconcile": "reconcile(if close)",
        }
    ),
)
