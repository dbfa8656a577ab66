"""Seats: a persona bound to a model, with the anonymous label other seats know it by."""

from __future__ import annotations

import random
import string
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from bot.council.personas import Persona

NEUTRAL_PERSONA_ID = "council-member"
NEUTRAL_PERSONA_TEXT = (
    "You are a senior software engineer on a review council. Judge the change on its "
    "merits: correctness, design, risk, and whether it does what it claims. Be specific, "
    "cite the code, and say what would change your mind."
)
NEUTRAL_LENSES = ("correctness", "design", "risk")
# A single available model is sampled three times at these temperatures.
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
    temperature: float | None = None
    score: float | None = None
    role: str = "member"  # "member", "judge" or "chair"


def seat_from_persona(
    index: int, persona: Persona, model: str, *, score: float | None = None
) -> Seat:
    return Seat(
        seat_id=f"seat-{index}",
        persona_id=persona.id,
        persona_name=persona.name,
        division=persona.division,
        persona_text=persona.text,
        lenses=persona.lenses,
        model=model,
        temperature=persona.temperature,
        score=score,
    )


def neutral_seat(index: int, model: str, temperature: float | None = None) -> Seat:
    return Seat(
        seat_id=f"seat-{index}",
        persona_id=NEUTRAL_PERSONA_ID,
        persona_name="Council member",
        division="council",
        persona_text=NEUTRAL_PERSONA_TEXT,
        lenses=NEUTRAL_LENSES,
        model=model,
        temperature=temperature,
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
