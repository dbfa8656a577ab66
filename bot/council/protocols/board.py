"""The `board` protocol's table entry: specialist personas assess, discuss and vote."""

from __future__ import annotations

from bot.council.protocols.spec import (
    BOARD_SIZE,
    DEFAULT_BOARD_SIZE,
    DEFAULT_DISCUSSION_ROUNDS,
    DISCUSSION_ROUNDS,
    Discussion,
    Protocol,
    Seats,
)

__all__ = ["BOARD"]

BOARD = Protocol(
    name="board",
    summary="specialist personas chosen for the change assess, discuss and vote; "
    "a chair synthesizes",
    rules="A board of specialists assesses independently, discusses, votes APPROVE or "
    "REJECT, and a chair synthesizes.",
    default_for="label-triggered review, `/council`",
    phases=("convene", "assess", "gate", "discuss", "vote", "resolve", "synthesize"),
    seats=Seats(
        convene="board",
        rule="the top board.default_size personas (default 5, 2-9), at most 2 per division",
        default=DEFAULT_BOARD_SIZE,
        minimum=BOARD_SIZE[0],
        maximum=BOARD_SIZE[1],
    ),
    discussion=Discussion(
        rounds_from="config",
        default_rounds=DEFAULT_DISCUSSION_ROUNDS,
        max_rounds=DISCUSSION_ROUNDS[1],
    ),
)
