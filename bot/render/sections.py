"""What a protocol adds to each rendering of its advisory: one `Sections` object per
protocol, registered in `bot.render.protocol_sections`.

Each slot is where the comment, the terminal and `--json` put the protocol's report:
`head` (visible, under the verdict lines), `line` (visible, after the votes), `top`
(collapsed, first), `report` (collapsed, after the chair's synthesis), `terminal` (after
the assessments) and `json` (`--json`'s key of the same name as the protocol). A slot a
protocol does not fill renders nothing; each renders nothing for an advisory without the
protocol's report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.council.advisory import Advisory

__all__ = ["Sections"]


def _no_text(advisory: Advisory) -> str:
    return ""


def _no_line(advisory: Advisory, limit: int) -> str:
    return ""


def _no_lines(advisory: Advisory) -> list[str]:
    return []


def _no_json(advisory: Advisory) -> Any:
    return None


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
