"""The protocols: one module per protocol holds its table entry (`board`, `council`,
`debate`, `quick`, `strategies`), the registry collects them, and planning reads them.

Everything that needs to know about a protocol reads `PROTOCOLS` (or `protocol(name)`): the
engine dispatches its phases from `Protocol.phases`, convening takes its seat counts from
`seat_count`, the panel schema its bounds, the command grammar and the repo config their
names, `/council help` and the README their descriptions, and the dry run its estimate from
`planned_calls`. A new protocol is its module plus two lines of `registry`.

Pure and cheap to import: stdlib and typing only (the webhook receiver imports it through
`bot.commands` on its hot path; `bot.config` through its validation).
"""

from __future__ import annotations

from bot.council.protocols.debate import (
    DEBATE_MODES,
    DEFAULT_DEBATE_MODE,
    MAX_JUDGE_CYCLES,
    DebateMode,
    DebateModeRule,
    debate_mode,
)
from bot.council.protocols.planning import (
    discussion_rounds,
    longest_deliberation,
    most_seats,
    phases_text,
    planned_calls,
    seat_count,
    sequential_turns,
)
from bot.council.protocols.registry import (
    DEFAULT_PROTOCOL,
    NAMES,
    PROTOCOLS,
    ProtocolName,
    names,
    protocol,
    register,
    unregister,
)
from bot.council.protocols.spec import (
    ANSWER_TRIES,
    ASSESS_TRIES,
    BOARD_SIZE,
    DEFAULT_BOARD_SIZE,
    DEFAULT_DISCUSSION_ROUNDS,
    DISCUSSION_ROUNDS,
    NEUTRAL_DIVISION,
    Button,
    Convening,
    Discussion,
    Party,
    Phase,
    PhaseCall,
    Protocol,
    Seats,
)
from bot.council.protocols.strategies import MAX_CRITIQUE_ROUNDS

__all__ = [
    "ANSWER_TRIES",
    "ASSESS_TRIES",
    "BOARD_SIZE",
    "DEBATE_MODES",
    "DEFAULT_BOARD_SIZE",
    "DEFAULT_DEBATE_MODE",
    "DEFAULT_DISCUSSION_ROUNDS",
    "DEFAULT_PROTOCOL",
    "DISCUSSION_ROUNDS",
    "MAX_CRITIQUE_ROUNDS",
    "MAX_JUDGE_CYCLES",
    "NAMES",
    "NEUTRAL_DIVISION",
    "PROTOCOLS",
    "Button",
    "Convening",
    "DebateMode",
    "DebateModeRule",
    "Discussion",
    "Party",
    "Phase",
    "PhaseCall",
    "Protocol",
    "ProtocolName",
    "Seats",
    "debate_mode",
    "discussion_rounds",
    "longest_deliberation",
    "most_seats",
    "names",
    "phases_text",
    "planned_calls",
    "protocol",
    "register",
    "seat_count",
    "sequential_turns",
    "unregister",
]
