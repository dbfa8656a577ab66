"""Live progress on stderr while the council works, naming the seats by persona.

On a terminal: a live table (one row per seat: what it is doing, for how long) under a title
with the phase and the elapsed time, gone when the run ends. Elsewhere (a pipe, a CI log):
one plain line per event, `council:   4.2 s  Test Engineer: assessing`.

The engine reports `ProgressEvent(phase, seat_id, status, label)`: for a seat's call,
"called" then "ok" or the error kind, and "re-asked" when an answer failed the completeness
gate; for a phase, "started" (and "done" for convening, "round N" for a discussion round).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from bot.council.engine import ProgressEvent

_DOING = {
    "assess": "assessing",
    "discuss": "discussing",
    "judge": "judging",
    "outside": "giving an outside opinion",
    "vote": "voting",
    "rank": "ranking",
    "merge": "merging the findings",
    "synthesize": "writing the synthesis",
    "design": "designing the panel",
    "classify": "classifying the change",
    "critique": "critiquing",
    "reconcile": "reconciling the strategies",
}
_PHASE = {
    ("convene", "started"): "convening the seats",
    ("convene", "done"): "seats convened",
    ("assess", "started"): "assessing",
    ("vote", "started"): "voting",
    ("rank", "started"): "ranking",
    ("merge", "started"): "the chair is merging the findings",
    ("outside", "started"): "asking a model off the panel for an outside opinion",
    ("reconcile", "started"): "the chair is reconciling the strategies",
    ("synthesize", "started"): "the chair is writing the synthesis",
}


def convening_line(protocol: str, compared: str, models: Sequence[str]) -> str:
    """The first line of a run, printed before any model is called."""
    count = len(models)
    return (
        f"council: convening {protocol} on {compared} with {count} "
        f"model{'' if count == 1 else 's'} ({', '.join(models)}) ..."
    )


def seat_status(phase: str, status: str, seconds: float | None = None) -> str:
    """A seat's event for a person: "assessing", "done (4.2 s)", "re-asked (incomplete
    answer)", "timed out", "failed (rate limited)"."""
    if status == "called":
        return _DOING.get(phase, phase)
    if status == "ok":
        return "done" if seconds is None else f"done ({seconds:.1f} s)"
    if status == "re-asked":
        return "re-asked (incomplete answer)"
    if status == "invalid_output":
        return "invalid answer"
    if status == "timeout":
        return "timed out"
    return f"failed ({status.replace('_', ' ')})"


def phase_status(phase: str, status: str) -> str:
    """A phase's event: "convening the seats", "discussion round 2", ..."""
    if phase == "discuss" and status.startswith("round"):
        return f"discussion {status}"
    if phase == "critique" and status.startswith("round"):
        return f"cross-critique {status}"
    return _PHASE.get((phase, status), f"{phase} {status}")


@dataclass
class _Seat:
    name: str
    status: str
    since: float
    busy: bool


class ProgressView:
    """Feed it the engine's events (`update`); use it as a context manager around the run."""

    def __init__(self, console: Console, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._console = console
        self._clock = clock
        self._started = clock()
        self._phase = "convene"
        self._seats: dict[str, _Seat] = {}
        self._names: dict[str, str] = {}
        self._live: Live | None = None
        if console.is_terminal:
            self._live = Live(
                console=console,
                get_renderable=self._render,
                transient=True,
                refresh_per_second=4,
                redirect_stdout=False,
            )

    def __enter__(self) -> ProgressView:
        if self._live is not None:
            self._live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(kind, value, tb)

    def update(self, event: ProgressEvent) -> None:
        now = self._clock()
        if event.seat_id is None:
            self._phase = phase_status(event.phase, event.status)
            self._line(now, self._phase)
        else:
            self._seat_event(event, now)
        if self._live is not None:
            self._live.refresh()

    def _seat_event(self, event: ProgressEvent, now: float) -> None:
        assert event.seat_id is not None
        name = self._name(event.seat_id, event.label)
        seat = self._seats.get(event.seat_id)
        busy = event.status == "called"
        seconds = now - seat.since if seat is not None and seat.busy and not busy else None
        status = seat_status(event.phase, event.status, seconds)
        self._seats[event.seat_id] = _Seat(name, status, now, busy)
        self._line(now, f"{name}: {status}")

    def _name(self, seat_id: str, label: str | None) -> str:
        """The persona's name, numbered when two seats share it (the neutral members of
        the `council` protocol); a seat keeps the name it was first shown with."""
        if seat_id not in self._names:
            base = label or seat_id
            taken = set(self._names.values())
            name, n = base, 1
            while name in taken:
                n += 1
                name = f"{base} {n}"
            self._names[seat_id] = name
        return self._names[seat_id]

    def _line(self, now: float, text: str) -> None:
        if self._live is None:
            self._console.print(
                f"council: {now - self._started:5.1f} s  {text}",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )

    def _render(self) -> Table:
        now = self._clock()
        table = Table(
            title=f"Council · {self._phase} · {now - self._started:.0f} s",
            title_justify="left",
            show_header=False,
            box=None,
            pad_edge=False,
        )
        table.add_column("seat", style="bold")
        table.add_column("status")
        table.add_column("time", justify="right", style="dim")
        for seat in list(self._seats.values()):
            elapsed = f"{now - seat.since:.0f} s" if seat.busy else ""
            table.add_row(Text(seat.name), Text(seat.status), elapsed)
        return table
