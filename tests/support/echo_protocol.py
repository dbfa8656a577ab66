"""A test protocol, to show that a new protocol is its module and two registry lines.

`echo` seats one neutral member per model, gates their assessments, runs one phase of its
own (`echo`: it makes no model call, it says in the advisory's notes how many members
answered), then resolves by the assessments and has the chair synthesize. `installed()`
registers it (its table entry and its phase's code) for the length of a test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bot.council.phases import register_phase, unregister_phase
from bot.council.protocols import Protocol, Seats, register, unregister
from bot.council.run import Run

NAME = "echo"

ECHO = Protocol(
    name=NAME,
    summary="one neutral seat per model assesses; the echo phase counts the answers",
    rules="Several models answer independently as equals; a chair synthesizes.",
    default_for="the tests",
    phases=("convene", "assess", "gate", "echo", "resolve", "synthesize"),
    seats=Seats(convene="models", rule="one neutral seat per model", single_model_samples=2),
)


def echo_note(members: int) -> str:
    return f"Echo: {members} members answered."


async def echo(run: Run) -> None:
    run.notes.append(echo_note(len(run.valid())))


@contextmanager
def installed() -> Iterator[None]:
    register(ECHO)  # the two registry lines
    register_phase(NAME, echo)
    try:
        yield
    finally:
        unregister_phase(NAME)
        unregister(NAME)
