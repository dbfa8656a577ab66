"""What a deliberation is asked to seat: the board's size and rounds, and pinned seats.

The engine takes these in its request, and the repository config (`bot.config`) reads them
from `.github/council.yml`. Like `bot.council.protocols`, whose bounds they use, this is a
leaf the config may import: pydantic and the protocol table, nothing that calls a model.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.council.protocols import (
    BOARD_SIZE,
    DEFAULT_BOARD_SIZE,
    DEFAULT_DISCUSSION_ROUNDS,
    DISCUSSION_ROUNDS,
)

__all__ = ["BoardConfig", "PinnedSeat"]


class BoardConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    default_size: int = Field(default=DEFAULT_BOARD_SIZE, ge=BOARD_SIZE[0], le=BOARD_SIZE[1])
    min_size: int = Field(default=3, ge=BOARD_SIZE[0], le=BOARD_SIZE[1])
    discussion_rounds: int = Field(
        default=DEFAULT_DISCUSSION_ROUNDS, ge=DISCUSSION_ROUNDS[0], le=DISCUSSION_ROUNDS[1]
    )


class PinnedSeat(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    persona: str
    model: str | None = None
