"""Live progress on stderr while the council works: one line per phase and seat."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table

from bot.council.engine import ProgressEvent

_ORDER = ("convene", "assess", "discuss", "judge", "vote", "rank", "synthesize", "design")


class ProgressView:
    def __init__(self, console: Console) -> None:
        self._console = console
        self._phase = "convene"
        self._seats: dict[str, str] = {}
        self._live = Live(
            self._render(),
            console=console,
            transient=True,
            refresh_per_second=8,
            redirect_stdout=False,
        )

    def __enter__(self) -> ProgressView:
        if self._console.is_terminal:
            self._live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._console.is_terminal:
            self._live.__exit__(kind, value, tb)

    def update(self, event: ProgressEvent) -> None:
        if event.phase in _ORDER and event.phase != self._phase:
            self._phase = event.phase
            if not self._console.is_terminal:
                self._console.print(f"council: {event.phase}", highlight=False)
        if event.seat_id:
            self._seats[event.seat_id] = f"{event.phase}: {event.status}"
        elif not self._console.is_terminal and event.status not in ("started", "done"):
            self._console.print(f"council: {event.phase} {event.status}", highlight=False)
        if self._console.is_terminal:
            self._live.update(self._render())

    def _render(self) -> Table:
        table = Table(title=f"Council - {self._phase}", show_header=True)
        table.add_column("seat")
        table.add_column("status")
        for seat, status in sorted(self._seats.items()):
            table.add_row(seat, status)
        return table
