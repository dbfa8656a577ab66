"""What a protocol adds to each rendering of its advisory: one `Sections` object per
protocol, registered in `bot.render.protocol_sections`.

Each slot is where the comment, the terminal and `--json` put the protocol's report:
`head` (visible, under the verdict lines), `line` (visible, after the votes), `top`
(collapsed, first), `report` (collapsed, after the chair's synthesis), `terminal` (after
the assessments) and `json` (`--json`'s key of the same name as the protocol); `tradeoffs`
says the report shows the chair's tradeoff map itself (the synthesis section leaves it
out). A slot a protocol does not fill renders nothing; each renders nothing for an
advisory without the protocol's report.

`report_sections` builds a protocol's object from its report: each slot it is given
renders the report, is not called for an advisory without it, and `json` is the report
dumped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from bot.council.advisory import Advisory

__all__ = ["Sections", "report_sections"]

R = TypeVar("R", bound=BaseModel)
T = TypeVar("T")


def _no_text(advisory: Advisory) -> str:
    return ""


def _no_line(advisory: Advisory, limit: int) -> str:
    return ""


def _no_lines(advisory: Advisory) -> list[str]:
    return []


def _no_json(advisory: Advisory) -> Any:
    return None


def _no_claim(advisory: Advisory) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Sections:
    protocol: str  # the protocol's name; also its `--json` key
    # How the comment names the collapsed report when it is left out for length.
    dropped: str
    head: Callable[[Advisory], str] = _no_text
    line: Callable[[Advisory, int], str] = _no_line
    top: Callable[[Advisory], list[str]] = _no_lines
    report: Callable[[Advisory], str] = _no_text
    terminal: Callable[[Advisory], list[str]] = _no_lines
    json: Callable[[Advisory], Any] = _no_json
    tradeoffs: Callable[[Advisory], bool] = _no_claim


def _given(
    get: Callable[[Advisory], R | None],
    slot: Callable[[Advisory, R], T],
    empty: Callable[[], T],
) -> Callable[[Advisory], T]:
    def render(advisory: Advisory) -> T:
        found = get(advisory)
        return empty() if found is None else slot(advisory, found)

    return render


def _given_limit(
    get: Callable[[Advisory], R | None], slot: Callable[[Advisory, R, int], str]
) -> Callable[[Advisory, int], str]:
    def render(advisory: Advisory, limit: int) -> str:
        found = get(advisory)
        return "" if found is None else slot(advisory, found, limit)

    return render


def _dumped(advisory: Advisory, report: BaseModel) -> Any:
    return report.model_dump(mode="json")


def report_sections(
    protocol: str,
    dropped: str,
    get: Callable[[Advisory], R | None],
    *,
    head: Callable[[Advisory, R], str] | None = None,
    line: Callable[[Advisory, R, int], str] | None = None,
    top: Callable[[Advisory, R], list[str]] | None = None,
    report: Callable[[Advisory, R], str] | None = None,
    terminal: Callable[[Advisory, R], list[str]] | None = None,
    tradeoffs: Callable[[Advisory, R], bool] | None = None,
) -> Sections:
    """`protocol`'s sections from its report (`get`: the advisory's, None elsewhere)."""
    return Sections(
        protocol=protocol,
        dropped=dropped,
        head=_given(get, head, str) if head else _no_text,
        line=_given_limit(get, line) if line else _no_line,
        top=_given(get, top, list) if top else _no_lines,
        report=_given(get, report, str) if report else _no_text,
        terminal=_given(get, terminal, list) if terminal else _no_lines,
        json=_given(get, _dumped, lambda: None),
        tradeoffs=_given(get, tradeoffs, bool) if tradeoffs else _no_claim,
    )
