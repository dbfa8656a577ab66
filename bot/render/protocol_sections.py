"""The registry of each protocol's `Sections` (bot.render.sections): the comment, the
terminal and `--json` ask it for the protocol parts of an advisory, in registry order. A
new protocol with a report of its own registers its sections object here (`register`)."""

from __future__ import annotations

from typing import Any

from bot.council.advisory import Advisory
from bot.render.debate import SECTIONS as DEBATE
from bot.render.sections import Sections
from bot.render.strategies import SECTIONS as STRATEGIES

__all__ = ["SECTIONS", "json_parts", "register"]

SECTIONS: list[Sections] = [DEBATE, STRATEGIES]


def register(sections: Sections) -> None:
    """Add a protocol's sections (ValueError for a protocol that has them)."""
    if any(s.protocol == sections.protocol for s in SECTIONS):
        raise ValueError(f"protocol {sections.protocol!r} already has its sections")
    SECTIONS.append(sections)


def json_parts(advisory: Advisory) -> dict[str, Any]:
    """`--json`'s protocol parts: each protocol's report under its name (None elsewhere)."""
    return {s.protocol: s.json(advisory) for s in SECTIONS}
