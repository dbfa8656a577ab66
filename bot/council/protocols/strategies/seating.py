"""The `strategies` protocol's convening (docs/deliberation.md, "Strategies"): what kind of
task the change is and which strategy lenses sit for it.

Classification reads the change's signals (`ReviewSignals`: the dominant area, the areas,
the PR's title, description and commit subjects, the words of a question someone asked);
only when they are ambiguous does one cheap call to the chair model decide
(`classify_call`). Each task type seats 2-3 lenses, each with a prompt style and a
temperature; the temperature is sent only where the seat's model accepts one, otherwise
the style alone varies and the report says so. A lens reaches its seat as the seat's
reviewing strategy (`Seat.strategy`), the same mechanism a single-model council's samples
use (`bot.council.seats.ReviewStrategy`).

Everything but `convene_strategies` and `classify_call` is pure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bot.council.calls import CostLimitReached, SeatCaller
from bot.council.evidence import asked, intent_points
from bot.council.prompts import messages, tools_for
from bot.council.protocols.strategies.lenses import LENSES
from bot.council.protocols.strategies.prompts import TASK_TYPE_TOOL, classify_brief, classify_task
from bot.council.protocols.strategies.report import (
    Classification,
    LensChoice,
    StrategyPlan,
)
from bot.council.protocols.strategies.schemas import (
    TASK_TYPES,
    TaskType,
    TaskTypeAnswer,
)
from bot.council.request import ConveneRequest
from bot.council.scoring import ReviewSignals
from bot.council.seats import NEUTRAL_PERSONA_TEXT, Seat
from bot.providers import ModelCall

__all__ = [
    "CLASSIFY_MAX_TOKENS",
    "classify",
    "classify_call",
    "convene_strategies",
    "strategy_seats",
]


# The classification call's output limit: a task type and one sentence (its budget).
CLASSIFY_MAX_TOKENS = TaskTypeAnswer.OUTPUT_TOKENS

# What the topic's words say about the task (a word starting with one of these counts).
_WORDS: Mapping[TaskType, tuple[str, ...]] = {
    "bug-fix": ("fix", "bug", "regression", "crash", "hotfix", "broken", "incorrect"),
    "feature": ("feature", "add", "implement", "support", "introduc", "new"),
    "refactor": ("refactor", "rename", "cleanup", "simplif", "restructur", "extract", "tidy"),
    "architecture": ("architect", "design", "redesign", "migrat", "boundar", "layering"),
    "performance": ("perf", "faster", "latency", "slow", "speed", "optimi", "throughput"),
    "security": ("secur", "vulnerab", "cve", "xss", "csrf", "injection", "exploit"),
    "dependency": ("bump", "upgrad", "dependenc", "lockfile"),
    "docs": ("doc", "readme", "typo", "changelog"),
    "tests-only": ("test", "coverage", "flaky"),
}
# Touched areas that point to a task type; the dominant one counts most.
_AREAS: Mapping[str, TaskType] = {
    "security": "security",
    "performance": "performance",
    "dependencies": "dependency",
    "docs-only": "docs",
    "tests-only": "tests-only",
}
_WHOLE_CHANGE = ("docs-only", "tests-only")  # the whole change is of one kind: decisive
_TOKEN = re.compile(r"[a-z][a-z0-9-]*")
_DECIDES = 2  # the top type needs this many points and this lead over the next


def classify(
    signals: ReviewSignals, topic: str
) -> Classification | tuple[list[TaskType], list[str]]:
    """The task type the signals decide, or (candidates, evidence) when they are ambiguous
    and one cheap call must decide. Read: the areas, the PR's own words (title, description,
    commit subjects: `signals.intent`) and the topic's words only when someone asked it
    (the default question's "well designed" says nothing about the change)."""
    dominant = signals.dominant_area
    if dominant in _WHOLE_CHANGE:
        kind = _AREAS[dominant]
        return Classification(
            task_type=kind, decided_by="signals", evidence=[f"the whole change is {dominant}"]
        )
    points: Counter[TaskType] = Counter()
    evidence: list[str] = []
    for area in signals.areas:
        if area in _AREAS:
            weight = 3 if area == dominant else 1
            points[_AREAS[area]] += weight
            evidence.append(f"{'dominant ' if area == dominant else ''}area {area}")
    intent, cited = intent_points(signals.intent)
    points.update(intent)
    evidence += cited
    words = _TOKEN.findall(" ".join([topic if asked(topic) else "", *signals.keywords]).lower())
    for kind, stems in _WORDS.items():
        hits = sorted({w for w in words if w.startswith(stems)})
        if hits:
            points[kind] += 2 * min(len(hits), 2)
            evidence.append(f"{kind} words ({', '.join(hits[:3])})")
    ranked = sorted(points, key=lambda k: (-points[k], TASK_TYPES.index(k)))
    top = ranked[0] if ranked else None
    second = points[ranked[1]] if len(ranked) > 1 else 0
    if top is not None and points[top] >= _DECIDES and points[top] - second >= _DECIDES:
        return Classification(task_type=top, decided_by="signals", evidence=evidence)
    candidates = [k for k in ranked if points[k] > 0][:3] or list(TASK_TYPES)
    return candidates, evidence


def strategy_seats(
    task_type: TaskType, models: Sequence[str], takes_temperature: Callable[[str], bool]
) -> tuple[list[Seat], list[LensChoice], str | None]:
    """The task type's lenses as seats, models taken in turn; each lens's temperature kept
    only where its model accepts one. The note says which models take none."""
    distinct = list(dict.fromkeys(models))
    seats: list[Seat] = []
    choices: list[LensChoice] = []
    cold: list[str] = []
    for i, lens in enumerate(LENSES[task_type]):
        model = distinct[i % len(distinct)]
        temperature = lens.temperature if takes_temperature(model) else None
        if temperature is None and model not in cold:
            cold.append(model)
        seat = Seat(
            seat_id=f"seat-{i + 1}",
            persona_id=f"strategy-{lens.key}",
            persona_name=lens.persona_name,
            division="strategies",
            persona_text=NEUTRAL_PERSONA_TEXT,
            lenses=lens.lenses,
            model=model,
            temperature=temperature,
            strategy=lens.strategy(),
        )
        seats.append(seat)
        choices.append(
            LensChoice(
                seat_id=seat.seat_id,
                lens=lens.title,
                style=lens.style,
                mandate=lens.mandate,
                model=model,
                temperature=temperature,
            )
        )
    note = None
    if cold:
        note = f"temperatures not accepted by {', '.join(cold)}: the styles alone vary"
    return seats, choices, note


async def convene_strategies(
    request: ConveneRequest,
    caller: SeatCaller | None,
    takes_temperature: Callable[[str], bool],
    chair: Seat,
) -> tuple[list[Seat], list[str], StrategyPlan]:
    """Classify (one cheap call to the chair's model only when the signals are ambiguous;
    `caller` None, as in a dry run: no call, the best guess, and the notes say so), then
    seat the task type's lenses."""
    found = classify(request.signals, request.topic)
    notes: list[str] = []
    if isinstance(found, Classification):
        classification = found
    else:
        candidates, evidence = found
        answer = await classify_call(request, caller, chair, candidates, evidence)
        if answer is not None:
            classification = Classification(
                task_type=answer.task_type,
                decided_by="model",
                evidence=evidence,
                candidates=candidates,
                reason=answer.reason,
                model=chair.model,
            )
        else:
            classification = Classification(
                task_type=candidates[0] if len(candidates) < len(TASK_TYPES) else "feature",
                decided_by="fallback",
                evidence=evidence,
                candidates=candidates,
            )
            if caller is None:
                notes.append(
                    "The change's signals do not say what kind of task it is: one call to "
                    f"{chair.model} will classify it (the preview assumes "
                    f"{classification.task_type})."
                )
    seats, choices, temperature_note = strategy_seats(
        classification.task_type, request.models, takes_temperature
    )
    if temperature_note:
        notes.append(f"Strategies: {temperature_note}.")
    plan = StrategyPlan(
        classification=classification, composition=choices, temperature_note=temperature_note
    )
    return seats, notes, plan


async def classify_call(
    request: ConveneRequest,
    caller: SeatCaller | None,
    chair: Seat,
    candidates: Sequence[TaskType],
    evidence: Sequence[str],
) -> TaskTypeAnswer | None:
    """The one cheap classification call (small output limit, no re-ask); None without a
    caller or a valid answer."""
    if caller is None:
        return None
    call: ModelCall[Any] = ModelCall(
        system=request.system,
        messages=messages("", classify_brief(), classify_task(request.topic, candidates, evidence)),
        output=TASK_TYPE_TOOL,
        tools=tools_for(request.protocol),
        max_tokens=TASK_TYPE_TOOL.output_tokens(request.max_tokens),
        deadline_s=request.deadline_s,
        label=f"{chair.seat_id}/{TASK_TYPE_TOOL.name}",
    )
    try:
        outcome = await caller.call(chair, f"classify/{chair.seat_id}/0", call)
    except CostLimitReached as stop:
        stop.where = "before the change was classified"
        raise
    if outcome.ok and isinstance(outcome.output, TaskTypeAnswer):
        return outcome.output
    return None


# --- the deterministic deliberation ----------------------------------------------------------
