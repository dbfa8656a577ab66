"""The `council` protocol's table entry: one neutral seat per model, ranked by its peers."""

from __future__ import annotations

from bot.council.protocols.spec import Protocol, Seats

__all__ = ["COUNCIL"]

COUNCIL = Protocol(
    name="council",
    summary="one neutral seat per model; the members rank each other's answers and the "
    "verdict follows from the assessments",
    rules="Several models answer independently as equals; a chair synthesizes.",
    default_for="`/council council ...`",
    phases=("convene", "assess", "gate", "rank", "resolve", "synthesize"),
    seats=Seats(
        convene="models",
        rule="one neutral seat per model; three samples of a single model",
        single_model_samples=3,
    ),
    rank_min_seats=3,
)
