"""The `quick` protocol's table entry: a 3-seat board whose assessments decide."""

from __future__ import annotations

from bot.council.protocols.spec import Protocol, Seats

__all__ = ["QUICK"]

QUICK = Protocol(
    name="quick",
    summary="a 3-seat board assesses; the verdict follows from the assessments",
    rules="A small board assesses independently; the verdict follows from the "
    "assessments; a chair synthesizes.",
    default_for="cheap auto-review on every push",
    phases=("convene", "assess", "gate", "resolve", "synthesize"),
    seats=Seats(convene="board", rule="the top 3 personas", default=3, maximum=3, fixed=3),
)
