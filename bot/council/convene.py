"""Convene: choose the seats for a protocol and fix the anonymized member order.

- board / quick: score the catalog against the PR's signals, take the top seats;
- council: one neutral seat per model (three samples of a single model);
- debate: panelists designed for the topic by one model call, plus a step-back judge.
The chair (and the debate judge) are seats of their own that never vote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from bot.council import prompts
from bot.council.personas import Catalog
from bot.council.schemas import PanelDesign
from bot.council.scoring import PersonaRecord, ReviewSignals, score_catalog, select_board
from bot.council.seats import (
    SAMPLE_TEMPERATURES,
    Seat,
    assign_models,
    member_order,
    neutral_seat,
    seat_from_persona,
    with_labels,
)
from bot.providers import ModelCall, SystemBlock

if TYPE_CHECKING:
    from bot.council.calls import SeatCaller


class ConveneError(ValueError):
    """The seats cannot be formed (e.g. an unknown pinned persona, an empty catalog)."""


class ConveneRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    deliberation_id: str
    protocol: str
    topic: str
    signals: ReviewSignals
    models: list[str]
    allowed_models: list[str] = Field(default_factory=list)
    chair_model: str | None = None
    size: int = 5
    min_size: int = 3
    pinned: list[tuple[str, str | None]] = Field(default_factory=list)
    system: list[SystemBlock] = Field(default_factory=list)
    max_tokens: int = 4096
    deadline_s: float = 300.0


class Convened(BaseModel):
    """What the ledger's `convened` event stores: enough to resume without re-convening."""

    model_config = ConfigDict(frozen=True)

    seats: list[Seat]
    order: list[str]
    chair: Seat
    judge: Seat | None = None
    notes: list[str] = Field(default_factory=list)
    panel: PanelDesign | None = None


async def convene(
    request: ConveneRequest,
    catalog: Catalog,
    records: Sequence[PersonaRecord],
    caller: SeatCaller,
) -> Convened:
    notes: list[str] = []
    panel: PanelDesign | None = None
    if request.protocol == "council":
        seats, notes = _council_seats(request.models)
    elif request.protocol == "debate":
        panel = await _design_panel(request, caller)
        seats = _panel_seats(panel, request.models)
    else:
        seats, notes = _board_seats(request, catalog, records)
    order = member_order([s.seat_id for s in seats], request.deliberation_id)
    seats = with_labels(seats, order)
    chair = _officer("chair", request.chair_model or request.models[0], len(seats))
    judge = (
        _officer("judge", request.chair_model or request.models[0], len(seats) + 1)
        if request.protocol == "debate"
        else None
    )
    return Convened(seats=seats, order=order, chair=chair, judge=judge, notes=notes, panel=panel)


def _board_seats(
    request: ConveneRequest, catalog: Catalog, records: Sequence[PersonaRecord]
) -> tuple[list[Seat], list[str]]:
    pinned_ids = [persona for persona, _ in request.pinned]
    unknown = [p for p in pinned_ids if p not in catalog]
    if unknown:
        raise ConveneError(f"pinned persona(s) not in the catalog: {', '.join(unknown)}")
    scored = score_catalog(catalog, request.signals, records)
    try:
        board = select_board(
            scored, size=request.size, min_size=request.min_size, pinned=pinned_ids
        )
    except ValueError as err:
        raise ConveneError(str(err)) from err
    pinned_models = dict(request.pinned)
    preferred = [pinned_models.get(s.persona.id) or s.persona.default_model for s in board.seats]
    models = assign_models(len(board.seats), request.models, preferred, request.allowed_models)
    seats = [
        seat_from_persona(i + 1, s.persona, models[i], score=s.total)
        for i, s in enumerate(board.seats)
    ]
    return seats, list(board.notes)


def _council_seats(models: Sequence[str]) -> tuple[list[Seat], list[str]]:
    distinct = list(dict.fromkeys(models))
    if len(distinct) == 1:
        seats = [neutral_seat(i + 1, distinct[0], t) for i, t in enumerate(SAMPLE_TEMPERATURES)]
        return seats, [
            f"Single-model council: three samples of {distinct[0]} at distinct temperatures."
        ]
    return [neutral_seat(i + 1, m) for i, m in enumerate(distinct)], []


async def _design_panel(request: ConveneRequest, caller: SeatCaller) -> PanelDesign:
    designer = _officer("designer", request.chair_model or request.models[0], 0)
    count = min(max(len(request.models), 3), 4)
    call: ModelCall[Any] = ModelCall(
        system=request.system,
        messages=prompts.messages(
            "", prompts.designer_brief(), prompts.design_task(request.topic, count)
        ),
        output=prompts.DESIGN_TOOL,
        tools=prompts.DELIBERATION_TOOLS,
        max_tokens=request.max_tokens,
        deadline_s=request.deadline_s,
        label="designer/submit_panel",
    )
    for attempt in range(2):
        outcome = await caller.call(designer, f"design/designer/{attempt}", call)
        if outcome.ok and isinstance(outcome.output, PanelDesign):
            return outcome.output
    raise ConveneError("the debate panel could not be designed (the model's answers were invalid)")


def _panel_seats(panel: PanelDesign, models: Sequence[str]) -> list[Seat]:
    seats = []
    for i, p in enumerate(panel.panelists):
        seats.append(
            Seat(
                seat_id=f"seat-{i + 1}",
                persona_id=f"panelist-{i + 1}",
                persona_name=p.name,
                division=p.stance,
                persona_text=f"{p.brief}\nYour stance: {p.stance}.",
                lenses=(p.lens,),
                model=models[i % len(models)],
            )
        )
    return seats


def _officer(role: str, model: str, index: int) -> Seat:
    names = {"chair": "Chair", "judge": "Step-back judge", "designer": "Panel designer"}
    return Seat(
        seat_id=role,
        label=names[role],
        persona_id=role,
        persona_name=names[role],
        division="council",
        persona_text=names[role],
        lenses=("synthesis",),
        model=model,
        role=role,
    )
