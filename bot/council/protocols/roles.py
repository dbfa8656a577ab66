"""The protocols the surfaces ask for by the part they play, not by name: the one a
repository runs by default and on a push, the one whose command takes seat adjustments
(`/council board +persona`), the one a mode flag and the "Full debate" button ask for, and
the one whose rules a single seat is told when `council eval` samples one model.

Pure and cheap to import: the protocols' table entries only.
"""

from __future__ import annotations

from bot.council.protocols.board import BOARD
from bot.council.protocols.council import COUNCIL
from bot.council.protocols.debate import DEBATE
from bot.council.protocols.quick import QUICK

__all__ = ["DEBATING", "DEFAULT", "ON_PUSH", "SEATING", "SINGLE_SEAT"]

# A trigger label, a bare `/council`, `council review` and `council agents`; repo `protocol`.
DEFAULT: str = BOARD.name
ON_PUSH: str = QUICK.name  # a push to a pull request that carries a trigger label
SEATING: str = BOARD.name  # its command takes `+persona` / `-persona` first
DEBATING: str = DEBATE.name  # its command takes a mode flag; the "Full debate" button
SINGLE_SEAT: str = COUNCIL.name  # one seat of one model is told this protocol's rules
