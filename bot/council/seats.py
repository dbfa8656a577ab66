"""Seats: a persona bound to a model, with the anonymous label other seats know it by."""

from __future__ import annotations

import random
import string
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from bot.council.personas import Persona
from bot.council.protocols import NEUTRAL_DIVISION

NEUTRAL_PERSONA_ID = "council-member"
NEUTRAL_PERSONA_TEXT = (
    "You are a senior software engineer on a review council. Judge the change on its "
    "merits: correctness, design, risk, and whether it does what it claims. Be specific, "
    "cite the code, and say what would change your mind."
)
NEUTRAL_LENSES = ("correctness", "design", "risk")


class ReviewStrategy(BaseModel):
    """How a sample of a single-model council reads the change: what makes its samples
    differ on every model (most current models take no temperature)."""

    model_config = ConfigDict(frozen=True)

    name: str  # short, for people: "data and control flow"
    text: str  # what the seat's brief tells it


# A single available model is sampled three times, each sample with its own strategy...
SAMPLE_STRATEGIES = (
    ReviewStrategy(
        name="data and control flow",
        text=(
            "Start from the entry points the change touches (handlers, public functions, "
            "commands) and trace how data and control flow through the new code: inputs, "
            "their validation, state changes, the calls made and what they return, every "
            "branch and early exit. Judge the change by what you can trace."
        ),
    ),
    ReviewStrategy(
        name="failure modes and tests",
        text=(
            "Start from how the change can fail: edge cases, empty and extreme inputs, "
            "errors and their handling, retries and timeouts, concurrency, resources left "
            "open. Then read the tests: which of those failures they cover, which they miss, "
            "and whether they would catch a regression."
        ),
    ),
    ReviewStrategy(
        name="the future maintainer",
        text=(
            "Read the change as the engineer who will maintain it in a year: its interfaces "
            "and contracts, naming, coupling between modules, duplication, what a reader "
            "must know that the code does not say, and how hard the next change here will be."
        ),
    ),
)
# ...and, where its model accepts a temperature, at these temperatures (None where not).
SAMPLE_TEMPERATURES = (0.3, 0.7, 1.0)


class Seat(BaseModel):
    model_config = ConfigDict(frozen=True)

    seat_id: str
    label: str = ""
    persona_id: str
    persona_name: str
    division: str = ""
    persona_text: str
    lenses: tuple[str, ...] = Field(min_length=1)
    model: str
    # Sent only where the model accepts one; None where it takes none (convene decides).
    temperature: float | None = None
    # A sample's reviewing strategy (single-model council); None for the other seats.
    strategy: ReviewStrategy | None = None
    score: float | None = None
    role: str = "member"  # "member", "judge" or "chair"


def seat_from_persona(
    index: int,
    persona: Persona,
    model: str,
    *,
    score: float | None = None,
    accepts_temperature: bool = False,
) -> Seat:
    """The persona's temperature is kept only where its model accepts one."""
    return Seat(
        seat_id=f"seat-{index}",
        persona_id=persona.id,
        persona_name=persona.name,
        division=persona.division,
        persona_text=persona.text,
        lenses=persona.lenses,
        model=model,
        temperature=persona.temperature if accepts_temperature else None,
        score=score,
    )


def neutral_seat(
    index: int,
    model: str,
    temperature: float | None = None,
    strategy: ReviewStrategy | None = None,
) -> Seat:
    return Seat(
        seat_id=f"seat-{index}",
        persona_id=NEUTRAL_PERSONA_ID,
        persona_name="Council member",
        division=NEUTRAL_DIVISION,
        persona_text=NEUTRAL_PERSONA_TEXT,
        lenses=NEUTRAL_LENSES,
        model=model,
        temperature=temperature,
        strategy=strategy,
    )


def assign_models(
    count: int, models: Sequence[str], preferred: Sequence[str | None], allowed: Sequence[str]
) -> list[str]:
    """Seats take the configured models in turn by rank; a persona's `default_model` wins
    when the operator allows it."""
    chosen: list[str] = []
    for rank in range(count):
        wish = preferred[rank] if rank < len(preferred) else None
        if wish and (wish in allowed or wish in models):
            chosen.append(wish)
        else:
            chosen.append(models[rank % len(models)])
    return chosen


def member_order(seat_ids: Sequence[str], seed: str) -> list[str]:
    """The anonymized presentation order, shuffled once per deliberation (position bias is a
    measured effect of LLM judges) and deterministic for the same deliberation id."""
    order = list(seat_ids)
    random.Random(seed).shuffle(order)
    return order


def label(position: int) -> str:
    letters = string.ascii_uppercase
    name = letters[position % 26]
    if position >= 26:
        name = letters[position // 26 - 1] + name
    return f"Member {name}"


def with_labels(seats: Sequence[Seat], order: Sequence[str]) -> list[Seat]:
    labels = {seat_id: label(i) for i, seat_id in enumerate(order)}
    return [s.model_copy(update={"label": labels[s.seat_id]}) for s in seats]
