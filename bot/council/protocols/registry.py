"""The registry of protocols: each protocol's module holds its table entry, and this table
collects them. A new protocol is its module and two lines here (its import and its entry);
`register` adds one at run time (a test protocol)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, get_args

from bot.council.protocols.board import BOARD
from bot.council.protocols.council import COUNCIL
from bot.council.protocols.debate import DEBATE
from bot.council.protocols.quick import QUICK
from bot.council.protocols.spec import Protocol
from bot.council.protocols.strategies import STRATEGIES

__all__ = [
    "DEFAULT_PROTOCOL",
    "NAMES",
    "PROTOCOLS",
    "ProtocolName",
    "names",
    "protocol",
    "register",
    "unregister",
]

ProtocolName = Literal["board", "council", "debate", "quick", "strategies"]
# The protocol a deliberation runs when its request names none.
DEFAULT_PROTOCOL: ProtocolName = "board"

_TABLE: dict[str, Protocol] = {p.name: p for p in (BOARD, COUNCIL, DEBATE, QUICK, STRATEGIES)}
PROTOCOLS: Mapping[str, Protocol] = MappingProxyType(_TABLE)
# The built-in protocols' names, in table order.
NAMES: tuple[ProtocolName, ...] = get_args(ProtocolName)
if tuple(_TABLE) != NAMES:  # pragma: no cover - caught on import
    raise AssertionError("ProtocolName must list exactly the table's protocols, in order")


def names() -> tuple[str, ...]:
    """Every registered protocol's name, the built-in ones first, in table order."""
    return tuple(_TABLE)


def register(entry: Protocol) -> None:
    """Add a protocol to the table (ValueError for a name it already holds)."""
    if entry.name in _TABLE:
        raise ValueError(f"protocol {entry.name!r} is already registered")
    _TABLE[entry.name] = entry


def unregister(name: str) -> None:
    """Take a protocol `register` added off the table (a built-in one stays)."""
    if name in NAMES:
        raise ValueError(f"protocol {name!r} is built in")
    _TABLE.pop(name, None)


def protocol(name: str) -> Protocol:
    """The protocol called `name`; ValueError naming the valid ones for any other name."""
    found = _TABLE.get(name)
    if found is None:
        raise ValueError(f"unknown protocol {name!r}; choose one of {', '.join(_TABLE)}")
    return found
