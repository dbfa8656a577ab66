"""Convene: choose the seats for a protocol and fix the anonymized member order.

How a protocol convenes, and how many seats, is its entry in `bot.council.protocols`:
- "board" (board, quick): score the catalog against the PR's signals, take the top seats;
- "models" (council): one neutral seat per model; with a single model, three samples of it,
  each with its own reviewing strategy (and temperature, where the model accepts one);
- "designed" (debate): panelists designed for the topic by one model call;
- "strategies": the strategy lenses of the change's task type
  (bot/council/protocols/strategies/seating.py).
The chair (and the judge of a judged protocol) are seats of their own that never vote.

A seat's temperature is set only where its model accepts one (`accepts_temperature`, from
the model's capabilities): otherwise it is None, and nothing claims it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from bot.council.boardplan import seat_board
from bot.council.personas import Catalog
from bot.council.protocols import NEUTRAL_DIVISION, protocol, seat_count
from bot.council.protocols.debate.panel import design_panel, panel_seats
from bot.council.protocols.strategies.report import StrategyPlan
from bot.council.protocols.strategies.seating import convene_strategies
from bot.council.request import ConveneRequest
from bot.council.schemas import PanelDesign
from bot.council.scoring import PersonaRecord, score_catalog
from bot.council.seats import (
    SAMPLE_STRATEGIES,
    SAMPLE_TEMPERATURES,
    Seat,
    assign_models,
    member_order,
    neutral_seat,
    seat_from_persona,
    with_labels,
)

if TYPE_CHECKING:
    from bot.council.calls import SeatCaller


class ConveneError(ValueError):
    """The seats cannot be formed (e.g. an unknown pinned persona, an empty catalog)."""


class Convened(BaseModel):
    """What the ledger's `convened` event stores: enough to resume without re-convening."""

    model_config = ConfigDict(frozen=True)

    seats: list[Seat]
    order: list[str]
    chair: Seat
    judge: Seat | None = None
    notes: list[str] = Field(default_factory=list)
    panel: PanelDesign | None = None
    # strategies: the task type (and how it was decided) and the lenses seated.
    strategies: StrategyPlan | None = None


async def convene(
    request: ConveneRequest,
    catalog: Catalog,
    records: Sequence[PersonaRecord],
    caller: SeatCaller | None,
    *,
    accepts_temperature: Callable[[str], bool] | None = None,
) -> Convened:
    """The seats, their order and the officers. `caller` is needed only where a model
    designs the panel (debate); None previews the other protocols without a call.
    `accepts_temperature(model)` says whether a model takes a temperature (None: none
    does, so no seat is given one)."""
    proto = protocol(request.protocol)
    members = await _members(
        request, catalog, records, caller, accepts_temperature or (lambda _model: False)
    )
    seats, notes = members.seats, members.notes
    if not proto.convenes_board and (request.board_add or request.board_remove):
        notes.append(
            f"Board adjustments ({_adjustments(request)}) apply to a board; the "
            f"{proto.name} protocol does not seat one, so they were not used."
        )
    chair_model = request.chair_model or request.models[0]
    if request.chair_votes:
        seats = [*seats, chair_member(len(seats) + 1, chair_model)]
        notes.append(
            f"The chair ({chair_model}) also sits as a voting member (chair_votes); "
            "its synthesis is still the chair's."
        )
    order = member_order([s.seat_id for s in seats], request.deliberation_id)
    seats = with_labels(seats, order)
    chair = _officer("chair", chair_model, len(seats))
    judge = (
        _officer("judge", request.chair_model or request.models[0], len(seats) + 1)
        if proto.judged
        else None
    )
    return Convened(
        seats=seats,
        order=order,
        chair=chair,
        judge=judge,
        notes=notes,
        panel=members.panel,
        strategies=members.plan,
    )


@dataclass
class _Members:
    """The members convening seats, before the chair and the order: the notes on how, and
    the designed panel or the strategy plan they were seated from."""

    seats: list[Seat]
    notes: list[str]
    panel: PanelDesign | None = None
    plan: StrategyPlan | None = None


async def _members(
    request: ConveneRequest,
    catalog: Catalog,
    records: Sequence[PersonaRecord],
    caller: SeatCaller | None,
    takes: Callable[[str], bool],
) -> _Members:
    """The members, seated the way the protocol's entry says (`Seats.convene`)."""
    proto = protocol(request.protocol)
    count = seat_count(
        proto.name, models=len(dict.fromkeys(request.models)), board_size=request.board_size
    )
    if proto.seats.convene == "models":
        return _Members(*_council_seats(request.models, count, takes))
    if proto.seats.convene == "designed":
        if caller is None:
            raise ConveneError(f"{proto.name}: a model designs the seats; there is no preview")
        designer = _officer("designer", request.chair_model or request.models[0], 0)
        panel, design_notes = await design_panel(request, caller, count, designer)
        if panel is None:
            raise ConveneError(
                "the debate panel could not be designed (the model's answers were invalid)"
            )
        return _Members(panel_seats(panel, request.models), design_notes, panel=panel)
    if proto.convenes_lenses:
        chair_seat = _officer("chair", request.chair_model or request.models[0], 0)
        seats, notes, plan = await convene_strategies(request, caller, takes, chair_seat)
        return _Members(seats, notes, plan=plan)
    return _Members(*_board_seats(request, catalog, records, count, takes))


def _board_seats(
    request: ConveneRequest,
    catalog: Catalog,
    records: Sequence[PersonaRecord],
    size: int,
    takes_temperature: Callable[[str], bool],
) -> tuple[list[Seat], list[str]]:
    pinned_ids = [persona for persona, _ in request.pinned]
    unknown = [p for p in pinned_ids if p not in catalog]
    if unknown:
        raise ConveneError(f"pinned persona(s) not in the catalog: {', '.join(unknown)}")
    scored = score_catalog(catalog, request.signals, records)
    try:
        seated = seat_board(
            scored,
            size=size,
            min_size=min(request.board_min_size, size),
            pinned=pinned_ids,
            add=request.board_add,
            remove=request.board_remove,
            languages=request.signals.languages,
            signals=request.signals,
        )
    except ValueError as err:
        raise ConveneError(str(err)) from err
    board = seated.selection
    pinned_models = dict(request.pinned)
    preferred = [pinned_models.get(s.persona.id) or s.persona.default_model for s in board.seats]
    models = assign_models(len(board.seats), request.models, preferred, request.allowed_models)
    seats = [
        seat_from_persona(
            i + 1,
            s.persona,
            models[i],
            score=s.total,
            accepts_temperature=takes_temperature(models[i]),
        )
        for i, s in enumerate(board.seats)
    ]
    return seats, list(seated.notes)


def _adjustments(request: ConveneRequest) -> str:
    added = [f"+{p}" for p in request.board_add]
    return " ".join([*added, *(f"-{p}" for p in request.board_remove)])


CHAIR_MEMBER_ID = "chair-member"


def chair_member(index: int, model: str) -> Seat:
    """The chair model seated as a voting member (the repo's `chair_votes`): a neutral
    member like a council seat's, named for what it is. Its synthesis stays the chair's."""
    seat = neutral_seat(index, model)
    return seat.model_copy(
        update={"persona_id": CHAIR_MEMBER_ID, "persona_name": "Chair (voting member)"}
    )


def _council_seats(
    models: Sequence[str], count: int, takes_temperature: Callable[[str], bool]
) -> tuple[list[Seat], list[str]]:
    distinct = list(dict.fromkeys(models))
    if len(distinct) == 1:
        return _samples(distinct[0], count, takes_temperature(distinct[0]))
    return [neutral_seat(i + 1, m) for i, m in enumerate(distinct)], []


def _samples(model: str, count: int, temperature: bool) -> tuple[list[Seat], list[str]]:
    """Samples of one model: a distinct reviewing strategy each, always (it works on every
    model); distinct temperatures too where the model accepts one. The note says which."""
    strategies = SAMPLE_STRATEGIES[:count]
    temperatures = SAMPLE_TEMPERATURES[: len(strategies)] if temperature else ()
    seats = [
        neutral_seat(i + 1, model, temperatures[i] if temperatures else None, strategy)
        for i, strategy in enumerate(strategies)
    ]
    return seats, [samples_note(model, seats)]


def samples_note(model: str, seats: Sequence[Seat]) -> str:
    """What actually varies between the samples of a single-model council, e.g.
    'Single-model council: 3 samples of openai:gpt-5.4, each with a distinct reviewing
    strategy (the model takes no temperature).'"""
    head = f"Single-model council: {len(seats)} samples of {model}"
    temperatures = [s.temperature for s in seats if s.temperature is not None]
    if temperatures and len(temperatures) == len(seats):
        shown = "/".join(str(t) for t in temperatures)
        return f"{head} at temperatures {shown} and with distinct reviewing strategies."
    return f"{head}, each with a distinct reviewing strategy (the model takes no temperature)."


def _officer(role: str, model: str, index: int) -> Seat:
    names = {"chair": "Chair", "judge": "Step-back judge", "designer": "Panel designer"}
    return Seat(
        seat_id=role,
        label=names[role],
        persona_id=role,
        persona_name=names[role],
        division=NEUTRAL_DIVISION,
        persona_text=names[role],
        lenses=("synthesis",),
        model=model,
        role=role,
    )
