"""A deliberation's critical path as its protocol plans it, for tests and benchmarks that
time a review against it (bench/fresh_review.py, tests/unit/cli/test_cli_fresh_review.py).

Each phase's member calls go out at once and an officer's call is a step of its own, so the
critical path is one answer per step of `bot.council.protocols.planned_calls`; a planned call
the run did not make (the chair's merge, made only when two findings overlap) is no step.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection

from bot.council.protocols import (
    DEFAULT_BOARD_SIZE,
    DEFAULT_DISCUSSION_ROUNDS,
    planned_calls,
    seat_count,
)

# A planned phase whose call is made only sometimes, and the tool that call forces.
CONDITIONAL_TOOLS = {"merge": "submit_merge"}


def critical_steps(protocol: str, made_tools: Collection[str | None]) -> list[str]:
    """The sequential steps of `protocol`'s planned calls at the default board and rounds
    with one model; a conditional call whose tool is not in `made_tools` is left out."""
    seats = seat_count(protocol, models=1, board_size=DEFAULT_BOARD_SIZE)
    calls = planned_calls(protocol, seats=seats, rounds=DEFAULT_DISCUSSION_ROUNDS)
    phases = [phase for phase, _ in itertools.groupby(calls, key=lambda c: c.phase)]
    return [p for p in phases if p not in CONDITIONAL_TOOLS or CONDITIONAL_TOOLS[p] in made_tools]
