"""What a call reserves before it starts: its input estimate and the usual size of its
model's answers, not the full output limit.

A call's input is estimated as before (`bot.providers.worstcase.worst_case_input`: the
estimator's margin and the framing allowance, at the dearest input rate). Its output is
reserved at the 95th percentile of the output tokens of its model's last 50 answers
(`AnswerSizes`, kept in the store so that every worker and the command line share them); a
model never seen reserves the full `max_tokens`, as every call did before.

Caps stay hard: the budget admits the call only if every cap has room for its input and at
least `floor_output` tokens of answer (the p95, and never less than `FLOOR_OUTPUT_TOKENS`
unless the call asks for fewer), and tells the caller how much room is left beyond what it
holds. When that room is less than the worst case, the `max_tokens` the call is sent is
clipped to what the room pays for (`CallPlan.max_tokens`), so the call cannot spend past
the cap. Calls running at once are each clipped to the room the others' holds (at their
p95) left: a call alone never goes past a cap, and only several of them answering beyond
their p95 at the same time could together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bot.providers import ModelCall, ModelCapabilities
from bot.providers.worstcase import call_cost, max_output_tokens, worst_case_input
from bot.tokens import TokenEstimator

__all__ = [
    "FLOOR_OUTPUT_TOKENS",
    "PERCENTILE",
    "RECENT_ANSWERS",
    "AnswerSizes",
    "CallPlan",
    "InMemoryAnswerSizes",
    "percentile_95",
    "plan_call",
    "plan_for_input",
]

# How many of a model's answers its reservation follows, and which percentile of them.
RECENT_ANSWERS = 50
PERCENTILE = 95
# A call is never clipped below this many output tokens (a structured answer needs room);
# a cap without room for them refuses the call.
FLOOR_OUTPUT_TOKENS = 1024


def percentile_95(sizes: Sequence[int]) -> int | None:
    """The 95th percentile (nearest rank) of `sizes`; None for none. With 50 answers it is
    the 48th smallest: the two longest answers do not set it."""
    if not sizes:
        return None
    ordered = sorted(sizes)
    return ordered[math.ceil(PERCENTILE / 100 * len(ordered)) - 1]


class AnswerSizes(Protocol):
    """The output tokens of each model's recent answers (`bot.store.answer_sizes` keeps
    them in the store)."""

    async def p95(self, model: str) -> int | None:
        """The 95th percentile of the output tokens of `model`'s last `RECENT_ANSWERS`
        answers; None when none is recorded (the model was never seen)."""
        ...

    async def record(self, model: str, output_tokens: int) -> None:
        """One more answer of `model`, of `output_tokens` output tokens."""
        ...


class InMemoryAnswerSizes:
    """`AnswerSizes` held in this process (tests, and runs without a store)."""

    def __init__(self) -> None:
        self.sizes: dict[str, list[int]] = {}

    async def p95(self, model: str) -> int | None:
        return percentile_95(self.sizes.get(model, [])[-RECENT_ANSWERS:])

    async def record(self, model: str, output_tokens: int) -> None:
        kept = self.sizes.setdefault(model, [])
        kept.append(output_tokens)
        del kept[:-RECENT_ANSWERS]


@dataclass(frozen=True)
class CallPlan:
    """What one call holds, what must fit under the caps, and what it may be sent."""

    input_tokens: int  # the input estimate, margin and framing allowance included
    max_output: int  # the `max_tokens` the call asks for, clipped to what the model allows
    expected_output: int  # held: the model's p95 (at most `max_output`), or `max_output`
    floor_output: int  # must fit: the p95, or the floor if more (at most `max_output`)
    caps: ModelCapabilities | None  # None: the reference does not resolve (nothing is sent)
    seen: bool  # False: no answer of the model is recorded; the call holds its worst case

    @property
    def hold_tokens(self) -> int:
        return self.input_tokens + self.expected_output

    @property
    def need_tokens(self) -> int:
        return self.input_tokens + self.floor_output

    @property
    def hold_usd(self) -> float:
        return self._cost(self.expected_output)

    @property
    def need_usd(self) -> float:
        return self._cost(self.floor_output)

    def worst_usd(self, max_tokens: int) -> float:
        """What the call can cost when sent `max_tokens`."""
        return self._cost(max_tokens)

    def worst_tokens(self, max_tokens: int) -> int:
        return self.input_tokens + max_tokens

    def max_tokens(self, room_tokens: int | None, room_usd: float | None) -> int:
        """The output limit to send: the model's, clipped so that the call's worst case
        fits in what the caps had left (None: no cap) beyond what it holds."""
        limit = self.max_output
        if self.caps is None:
            return limit  # nothing is sent: the call fails before it starts
        if room_tokens is not None:
            limit = min(limit, self.expected_output + room_tokens)
        price = self.caps.output_price
        if room_usd is not None and price > 0:
            # A hair under, so that rounding never lets the worst case past the cap.
            paid = math.floor(max(room_usd, 0.0) * 1_000_000 / price * (1 - 1e-9))
            limit = min(limit, self.expected_output + paid)
        return max(limit, 1)

    def _cost(self, output_tokens: int) -> float:
        if self.caps is None:
            return 0.0
        return call_cost(self.caps, self.input_tokens, output_tokens)


def plan_call(
    caps: ModelCapabilities | None,
    request: ModelCall[Any],
    estimator: TokenEstimator,
    p95: int | None,
) -> CallPlan:
    """The plan of one call to a model whose answers' p95 is `p95` (None: never seen)."""
    if caps is None:
        return CallPlan(0, request.max_tokens, 0, 0, None, seen=False)
    limit = max_output_tokens(caps, request)
    return plan_for_input(caps, worst_case_input(request, estimator), limit, p95)


def plan_for_input(
    caps: ModelCapabilities, input_tokens: int, max_output: int, p95: int | None
) -> CallPlan:
    """The plan of a call of `input_tokens` (estimated) allowed `max_output` tokens of
    answer (already clipped to the model's limit)."""
    if p95 is None:
        return CallPlan(input_tokens, max_output, max_output, max_output, caps, seen=False)
    expected = min(max(p95, 0), max_output)
    floor = min(max(expected, FLOOR_OUTPUT_TOKENS), max_output)
    return CallPlan(input_tokens, max_output, expected, floor, caps, seen=True)
