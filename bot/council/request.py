"""What a deliberation is asked to do (`DeliberationRequest`), what its convening is asked
to seat (`ConveneRequest`), and what it tells a person watching it (`ProgressEvent`)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.council.board import BoardConfig, PinnedSeat
from bot.council.protocols import DEFAULT_PROTOCOL, DebateMode
from bot.council.protocols import protocol as protocol_spec
from bot.council.scoring import ReviewSignals
from bot.providers import SystemBlock

__all__ = ["ConveneRequest", "DeliberationRequest", "ProgressEvent"]


class DeliberationRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    deliberation_id: str
    topic: str
    protocol: str = DEFAULT_PROTOCOL  # a registered protocol (bot.council.protocols)
    context: str  # the packed, fenced context every seat reads
    signals: ReviewSignals = Field(default_factory=lambda: ReviewSignals(topic=""))
    models: list[str] = Field(min_length=1)
    allowed_models: list[str] = Field(default_factory=list)
    chair_model: str | None = None
    board: BoardConfig = Field(default_factory=BoardConfig)
    pinned: list[PinnedSeat] = Field(default_factory=list)
    max_cost_usd: float | None = Field(default=None, gt=0)
    assessment_timeout_s: float = Field(default=300.0, gt=0)
    language: str | None = None
    notes: list[str] = Field(default_factory=list)
    # Every answer's ceiling: a call asks its tool's budget, at most this (then clipped).
    max_tokens: int = Field(default=8192, ge=256)
    # A cap in tokens (input, cache writes and reads, output) over the deliberation, beside
    # the dollar caps: what bounds a model with no known price. None: no token cap.
    max_spend_tokens: int | None = Field(default=None, gt=0)
    # debate: "quick" (one cycle, no judge), "standard" (a judge, up to 2 cycles), "full"
    # (up to 3 cycles and an outside opinion); None: as the protocol table plans it.
    debate_mode: DebateMode | None = None
    # board: personas seated (`+persona`) or kept off (`-persona`) for this run.
    board_add: list[str] = Field(default_factory=list)
    board_remove: list[str] = Field(default_factory=list)
    # The repo's `chair_votes`: the chair model also sits as a voting member.
    chair_votes: bool = False
    # The operator's COUNCIL_MODEL_STRENGTHS: model -> areas (concepts) it is strong in,
    # weighed on a divergence (bot.council.strengths).
    model_strengths: dict[str, list[str]] = Field(default_factory=dict)

    @field_validator("protocol")
    @classmethod
    def _registered(cls, name: str) -> str:
        protocol_spec(name)  # ValueError naming the registered ones
        return name


class ConveneRequest(BaseModel):
    """What convening is asked to seat (the engine's, from a `DeliberationRequest`)."""

    model_config = ConfigDict(frozen=True)

    deliberation_id: str
    protocol: str
    topic: str
    signals: ReviewSignals
    models: list[str]
    allowed_models: list[str] = Field(default_factory=list)
    chair_model: str | None = None
    board_size: int = 5  # the repo's board.default_size; the protocol decides what it means
    board_min_size: int = 3
    pinned: list[tuple[str, str | None]] = Field(default_factory=list)
    # This run's board adjustments (`/council board +x -y`; see bot.council.boardplan).
    board_add: list[str] = Field(default_factory=list)
    board_remove: list[str] = Field(default_factory=list)
    # The repo's `chair_votes`: the chair model also sits as a voting member.
    chair_votes: bool = False
    system: list[SystemBlock] = Field(default_factory=list)
    max_tokens: int = 8192
    deadline_s: float = 300.0


@dataclass
class ProgressEvent:
    phase: str
    seat_id: str | None
    status: str
    # Who the seat is, for a person watching (its persona's name, "Chair", ...).
    label: str | None = None
