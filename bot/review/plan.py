"""The dry run: who would sit, what they would read, which calls they would make, and about
what it would cost - computed by the same code that convenes, without calling a model."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from bot.council import prompts
from bot.council.convene import CHAIR_MEMBER_ID
from bot.council.engine import Engine
from bot.council.ledger import InMemoryLedger
from bot.council.protocols import planned_calls as protocol_calls
from bot.council.protocols import protocol, seat_count
from bot.council.seats import NEUTRAL_PERSONA_ID, Seat
from bot.providers import ModelCapabilities, ProviderError, ProviderRegistry, cost_usd
from bot.review.assemble import PreparedReview
from bot.review.debate_plan import DebatePlan, plan_debate
from bot.settings import Settings, call_deadline_s

# What one answer costs in output tokens (a thorough assessment runs 1,750-2,400 on current
# models), and the per-call prompt beyond the shared context (rules, transcript, persona and
# task), for the estimate.
OUTPUT_ESTIMATE = 2000
PROMPT_ESTIMATE = 2000
PREVIEW_MODEL = "(none)"  # stands in for a model while previewing seats with no provider


@dataclass(frozen=True)
class SeatPreview:
    persona_id: str
    name: str
    division: str
    model: str
    score: float | None
    lenses: tuple[str, ...] = ()
    # Only where the model accepts one (None: none is sent).
    temperature: float | None = None
    # A single-model council's sample: the name of its reviewing strategy.
    strategy: str | None = None


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
    # Models no price is known for: their part of the estimate is unknown, not $0.
    unpriced: list[str] = field(default_factory=list)
    # Endpoints whose calls of a phase queue (fewer slots than seats), with how long.
    queues: list[str] = field(default_factory=list)
    # A debate: its mode and committee (bot.review.debate_plan).
    debate: DebatePlan | None = None


async def plan_review(prepared: PreparedReview, settings: Settings) -> ReviewPlan:
    """Convene as the engine would (scoring without recorded outcomes: the dry run opens
    no database) and list the calls a deliberation makes when every answer is complete."""
    notes = list(prepared.notes)
    seats: list[Seat] = []
    chair = prepared.setup.config.chair_model or (prepared.models[0] if prepared.models else "")
    # Who would sit is known without a model; what they would run on is not.
    seated = prepared if prepared.models else replace(prepared, models=[PREVIEW_MODEL])
    request = seated.request("dry-run", settings, max_cost_usd=None)
    engine = Engine(ProviderRegistry(settings), prepared.setup.catalog, InMemoryLedger())
    convened = await engine.preview(request)
    if convened is not None:
        seats = list(convened.seats)  # by rank; the member order is for the seats only
        chair = convened.chair.model if prepared.models else ""
        notes.extend(_seated_notes(convened.notes, seats, bool(prepared.models)))
    previews = [_preview(s) for s in seats]
    count = len(seats) or seat_count(
        prepared.protocol, models=len(prepared.models), board_size=prepared.board.default_size
    )
    debate = None
    if protocol(prepared.protocol).seats.convene == "designed":  # a debate's committee
        debate = plan_debate(
            prepared.debate_mode, prepared.models, count, chair, prepared.setup.config.chair_model
        )
        notes.extend(debate.notes)
    calls = _calls(prepared, previews, count, chair, debate)
    registry = ProviderRegistry(settings)
    return ReviewPlan(
        prepared=prepared,
        seats=previews,
        calls=calls,
        estimate_cost_usd=estimate_cost(settings, calls, prepared.context_tokens)
        if prepared.models
        else None,
        notes=notes,
        first_seat=seats[0] if seats else None,
        unpriced=_unpriced(registry, calls) if prepared.models else [],
        queues=queue_times(registry, calls) if prepared.models else [],
        debate=debate,
    )


def _unpriced(registry: ProviderRegistry, calls: list[PlannedCall]) -> list[str]:
    models = dict.fromkeys(c.model for c in calls if c.model)
    return [m for m in models if not getattr(_capabilities(registry, m), "priced", False)]


def _capabilities(registry: ProviderRegistry, model: str) -> ModelCapabilities | None:
    """None for a reference that does not resolve (the review itself reports it)."""
    try:
        return registry.capabilities_of(model)
    except ProviderError:
        return None


def queue_times(registry: ProviderRegistry, calls: list[PlannedCall]) -> list[str]:
    """Where a phase's calls wait for each other: an endpoint with fewer slots than the
    phase has calls for it (a local server takes one at a time). The longest wait is what
    the deadline allows each call in turn."""
    deadline = call_deadline_s(registry.settings)
    per_phase: dict[tuple[str, str], int] = {}
    slots_of: dict[str, int] = {}  # provider -> its slots
    for call in calls:
        if not call.model:
            continue
        try:
            ref = registry.resolve(call.model)
        except ProviderError:
            continue
        slots_of.setdefault(ref.provider, registry.concurrency(ref))
        per_phase[(call.phase, ref.provider)] = per_phase.get((call.phase, ref.provider), 0) + 1
    widest: dict[str, tuple[int, int]] = {}  # provider -> (most calls in a phase, slots)
    for (_, provider), count in per_phase.items():
        slots = slots_of[provider]
        if count > slots and count > widest.get(provider, (0, 0))[0]:
            widest[provider] = (count, slots)
    lines = []
    for provider, (count, slots) in widest.items():
        turns = math.ceil(count / slots)
        lines.append(
            f"{provider} takes {slots} call{'s' if slots > 1 else ''} at a time: a phase's "
            f"{count} calls to it run in {turns} turns, each with its own {deadline:g} s "
            f"deadline (up to {_duration(turns * deadline)} a phase; the job's timeout "
            "covers it)."
        )
    return lines


def _duration(seconds: float) -> str:
    """ "40 s", "15 min", "2 h 5 min"."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def _seated_notes(notes: list[str], seats: list[Seat], models: bool) -> list[str]:
    """Convening's notes. Without a model, what varies between a single-model council's
    samples depends on the model that will run them: say so instead of naming none."""
    samples = [s for s in seats if s.strategy is not None and s.persona_id == NEUTRAL_PERSONA_ID]
    if models or not samples:
        return list(notes)
    kept = [n for n in notes if PREVIEW_MODEL not in n]
    return [
        *kept,
        f"Single-model council: {len(seats)} samples of the one model, each with a distinct "
        "reviewing strategy (and at distinct temperatures only if that model accepts one).",
    ]


def _preview(seat: Seat) -> SeatPreview:
    return SeatPreview(
        persona_id=seat.persona_id,
        name=seat.persona_name,
        division=seat.division,
        model="" if seat.model == PREVIEW_MODEL else seat.model,
        score=seat.score,
        lenses=tuple(seat.lenses),
        temperature=seat.temperature,
        strategy=seat.strategy.name if seat.strategy is not None else None,
    )


def _calls(
    prepared: PreparedReview,
    seats: list[SeatPreview],
    count: int,
    chair: str,
    debate: DebatePlan | None = None,
) -> list[PlannedCall]:
    models = prepared.models or [""]
    planned: list[PlannedCall] = []
    # A voting chair (`chair_votes`) is planned by the protocol as the chair's member calls.
    members = [s for s in seats if s.persona_id != CHAIR_MEMBER_ID]
    count -= len(seats) - len(members)
    seats = members
    for call in protocol_calls(
        prepared.protocol,
        seats=count,
        rounds=prepared.board.discussion_rounds,
        chair_votes=prepared.setup.config.chair_votes,
        mode=prepared.debate_mode,
        models=len(dict.fromkeys(prepared.models)),
    ):
        if call.party == "outside":  # debate --full: the opinion of a model off the panel
            outside = debate.outside_model if debate is not None else None
            planned.append(PlannedCall(call.phase, "Outside opinion", outside or chair))
        elif call.seat is None:
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
    the cache, the others read it. A model with no known price adds nothing here; the plan
    names it (`ReviewPlan.unpriced`)."""
    registry = ProviderRegistry(settings)
    seen: set[tuple[str, str]] = set()
    total = 0.0
    for call in calls:
        caps = _capabilities(registry, call.model)
        if caps is None:
            continue
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
    rules = prompts.system_blocks(
        prepared.protocol,
        "",
        language=prepared.setup.config.language,
        mode=prepared.debate_mode,
    )
    seat = plan.first_seat
    if seat is None:
        return {"system": rules[0].text, "seat": "(the seats are designed at run time)"}
    (message,) = prompts.messages("", prompts.seat_brief(seat), prompts.assess_task(prepared.topic))
    return {"system": rules[0].text, "seat": message.content}
