"""The dry run: who would sit, what they would read, which calls they would make, and about
what it would cost - computed by the same code that convenes, without calling a model."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from bot.council import prompts
from bot.council.engine import Engine
from bot.council.ledger import InMemoryLedger
from bot.council.protocols import planned_calls as protocol_calls
from bot.council.protocols import seat_count
from bot.council.seats import Seat
from bot.providers import CapabilityTable, ProviderRegistry, cost_usd
from bot.review.assemble import PreparedReview
from bot.settings import Settings

# What one answer costs in output tokens, and the per-call prompt beyond the shared context
# (rules, transcript, persona and task), for the estimate.
OUTPUT_ESTIMATE = 1200
PROMPT_ESTIMATE = 2000
NO_MODEL = "(none)"  # stands in for a model while previewing seats with no provider


@dataclass(frozen=True)
class SeatPreview:
    persona_id: str
    name: str
    division: str
    model: str
    score: float | None
    lenses: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlannedCall:
    phase: str
    seat: str
    model: str


@dataclass
class ReviewPlan:
    prepared: PreparedReview
    seats: list[SeatPreview]
    calls: list[PlannedCall]
    estimate_cost_usd: float | None  # None: no model to price
    notes: list[str] = field(default_factory=list)
    first_seat: Seat | None = None  # for the prompt preview


async def plan_review(prepared: PreparedReview, settings: Settings) -> ReviewPlan:
    """Convene as the engine would (scoring without recorded outcomes: the dry run opens
    no database) and list the calls a deliberation makes when every answer is complete."""
    notes = list(prepared.notes)
    seats: list[Seat] = []
    chair = prepared.setup.config.chair_model or (prepared.models[0] if prepared.models else "")
    # Who would sit is known without a model; what they would run on is not.
    seated = prepared if prepared.models else replace(prepared, models=[NO_MODEL])
    request = seated.request("dry-run", settings, max_cost_usd=None)
    engine = Engine(ProviderRegistry(settings), prepared.setup.catalog, InMemoryLedger())
    convened = await engine.preview(request)
    if convened is not None:
        seats = list(convened.seats)  # by rank; the member order is for the seats only
        chair = convened.chair.model if prepared.models else ""
        notes.extend(convened.notes)
    previews = [_preview(s) for s in seats]
    count = len(seats) or seat_count(
        prepared.protocol, models=len(prepared.models), board_size=prepared.board.default_size
    )
    if prepared.protocol == "debate":
        notes.append(
            f"Debate panelists ({count}) are designed for the question by {chair} at run time."
        )
    calls = _calls(prepared, previews, count, chair)
    return ReviewPlan(
        prepared=prepared,
        seats=previews,
        calls=calls,
        estimate_cost_usd=estimate_cost(settings, calls, prepared.context_tokens)
        if prepared.models
        else None,
        notes=notes,
        first_seat=seats[0] if seats else None,
    )


def _preview(seat: Seat) -> SeatPreview:
    return SeatPreview(
        persona_id=seat.persona_id,
        name=seat.persona_name,
        division=seat.division,
        model="" if seat.model == NO_MODEL else seat.model,
        score=seat.score,
        lenses=tuple(seat.lenses),
    )


def _calls(
    prepared: PreparedReview, seats: list[SeatPreview], count: int, chair: str
) -> list[PlannedCall]:
    models = prepared.models or [""]
    planned: list[PlannedCall] = []
    for call in protocol_calls(
        prepared.protocol, seats=count, rounds=prepared.board.discussion_rounds
    ):
        if call.seat is None:
            planned.append(PlannedCall(call.phase, call.party, chair))
        elif call.seat < len(seats):
            seat = seats[call.seat]
            planned.append(PlannedCall(call.phase, seat.name, seat.model))
        else:  # a debate panelist, designed at run time; models go round by seat
            model = models[call.seat % len(models)]
            planned.append(PlannedCall(call.phase, f"Panelist {call.seat + 1}", model))
    return planned


def estimate_cost(settings: Settings, calls: list[PlannedCall], context_tokens: int) -> float:
    """Every call reads the context: the first call of each phase and model writes it to
    the cache, the others read it."""
    table = CapabilityTable(settings.model_capabilities)
    registry = ProviderRegistry(settings, table=table)
    seen: set[tuple[str, str]] = set()
    total = 0.0
    for call in calls:
        ref = registry.resolve(call.model)
        caps = table.lookup(ref.family, ref.model)
        first = (call.phase, call.model) not in seen
        seen.add((call.phase, call.model))
        total += cost_usd(
            caps,
            input_tokens=PROMPT_ESTIMATE,
            cache_write_tokens=context_tokens if first else 0,
            cache_read_tokens=0 if first else context_tokens,
            output_tokens=OUTPUT_ESTIMATE,
        )
    return round(total, 4)


def prompt_preview(plan: ReviewPlan) -> dict[str, str]:
    """What the first seat's assessment call sends, the context itself aside: the rules
    (system), then the seat's persona, lenses and task (the last message)."""
    prepared = plan.prepared
    rules = prompts.system_blocks(prepared.protocol, "", language=prepared.setup.config.language)
    seat = plan.first_seat
    if seat is None:
        return {"system": rules[0].text, "seat": "(the seats are designed at run time)"}
    (message,) = prompts.messages("", prompts.seat_brief(seat), prompts.assess_task(prepared.topic))
    return {"system": rules[0].text, "seat": message.content}
