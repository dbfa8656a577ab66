"""The protocols, in one table: what each one convenes, which phases it runs, how it resolves.

Everything that needs to know about a protocol reads `PROTOCOLS` (or `protocol(name)`): the
engine dispatches its phases from `Protocol.phases`, convening takes its seat counts from
`seat_count`, the panel schema its bounds, the command grammar and the repo config their
names, `/council help` and the README their descriptions, and the dry run its estimate from
`planned_calls`. A new protocol is one entry here plus the code of any phase it adds.

Pure and cheap to import: stdlib and typing only (the webhook receiver imports it through
`bot.commands` on its hot path; `bot.config` through its validation).

Planning a deliberation without running it::

    seats = seat_count("debate", models=2, board_size=board.default_size)     # 3
    calls = planned_calls("debate", seats=seats, rounds=board.discussion_rounds)
    [(c.phase, c.party, c.seat) for c in calls][:2]
    # [("design", "designer", None), ("assess", "seat", 0)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

__all__ = [
    "BOARD_SIZE",
    "DEFAULT_BOARD_SIZE",
    "DEFAULT_DISCUSSION_ROUNDS",
    "DISCUSSION_ROUNDS",
    "MAX_JUDGE_CYCLES",
    "NAMES",
    "PROTOCOLS",
    "Convening",
    "Discussion",
    "Party",
    "Phase",
    "PlannedCall",
    "Protocol",
    "ProtocolName",
    "Seats",
    "discussion_rounds",
    "phases_text",
    "planned_calls",
    "protocol",
    "seat_count",
]

ProtocolName = Literal["board", "council", "debate", "quick"]
# The phases of DELIBERATION.md, in the order a protocol runs them. "gate" is the quorum
# check after the assessments (each answer's completeness is gated as it comes in); "judge"
# runs inside the discussion, after each round.
Phase = Literal[
    "convene", "assess", "gate", "discuss", "judge", "rank", "vote", "resolve", "synthesize"
]
# How seats are chosen: "board" scores the persona catalog, "models" seats one neutral
# member per model, "designed" has a model design a panel for the question.
Convening = Literal["board", "models", "designed"]
# Who makes a call: a seat (a member), or one of the officers who never vote.
Party = Literal["seat", "chair", "judge", "designer"]


@dataclass(frozen=True, slots=True)
class Seats:
    """How many seats a protocol convenes, and how they are chosen."""

    convene: Convening
    rule: str  # one line for people, e.g. "the top 3 personas"
    default: int | None = None  # None: one per model ("models")
    minimum: int = 2  # below 2 there is no quorum
    maximum: int | None = None  # None: no bound but the number of models
    fixed: int | None = None  # "board": always this many, whatever board.default_size says
    single_model_samples: int | None = None  # "models": one model is sampled this many times


@dataclass(frozen=True, slots=True)
class Discussion:
    """How many discussion rounds a protocol holds."""

    # "config": the repo's board.discussion_rounds; "judge": cycles until a step-back judge
    # calls convergence, at most `max_rounds` (a plan counts them all).
    rounds_from: Literal["config", "judge"]
    default_rounds: int
    max_rounds: int


@dataclass(frozen=True, slots=True)
class Protocol:
    name: ProtocolName
    summary: str  # one line for people: `/council help`, `--help`
    rules: str  # what every seat is told about the protocol (the system prompt)
    default_for: str
    phases: tuple[Phase, ...]
    seats: Seats
    discussion: Discussion | None = None  # set exactly when "discuss" is a phase
    rank_min_seats: int | None = None  # set exactly when "rank" is a phase

    def __post_init__(self) -> None:
        problems = []
        if self.phases[:3] != ("convene", "assess", "gate"):
            problems.append("must start convene, assess, gate")
        if self.phases[-2:] != ("resolve", "synthesize"):
            problems.append("must end resolve, synthesize")
        if len(set(self.phases)) != len(self.phases):
            problems.append("names a phase twice")
        if (self.discussion is None) == self.discusses:
            problems.append("has a discussion setting exactly when it discusses")
        if self.judged and self.phases[self.phases.index("judge") - 1] != "discuss":
            problems.append("judges right after the discussion")
        if (self.rank_min_seats is None) == ("rank" in self.phases):
            problems.append("has rank_min_seats exactly when it ranks")
        if problems:
            raise ValueError(f"protocol {self.name!r}: " + "; ".join(problems))

    @property
    def discusses(self) -> bool:
        return "discuss" in self.phases

    @property
    def judged(self) -> bool:
        """A step-back judge decides after each round whether the discussion goes on."""
        return "judge" in self.phases

    @property
    def votes(self) -> bool:
        return "vote" in self.phases

    @property
    def resolution(self) -> Literal["votes", "assessments"]:
        """What the verdict is resolved from: the votes, or the assessment verdicts."""
        return "votes" if self.votes else "assessments"

    def ranks(self, seats: int) -> bool:
        """Whether members rank each other's answers (anonymized) with this many seats."""
        return self.rank_min_seats is not None and seats >= self.rank_min_seats


# The board's settings in the repo config (board.default_size, board.discussion_rounds):
# their defaults and bounds, which both the config and the engine validate against.
DEFAULT_BOARD_SIZE = 5
BOARD_SIZE = (2, 9)  # the bounds of board.default_size and board.min_size
DEFAULT_DISCUSSION_ROUNDS = 1
DISCUSSION_ROUNDS = (0, 3)  # the bounds of board.discussion_rounds
MAX_JUDGE_CYCLES = 3

_BOARD = Protocol(
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
_COUNCIL = Protocol(
    name="council",
    summary="one neutral seat per model; the members rank each other's answers and the "
    "verdict follows from the assessments",
    rules="Several models answer independently as equals; a chair synthesizes.",
    default_for="`/council council ...`",
    phases=("convene", "assess", "gate", "rank", "resolve", "synthesize"),
    seats=Seats(
        convene="models",
        rule="one neutral seat per model; three samples of a single model",
        single_model_samples=3,
    ),
    rank_min_seats=3,
)
_DEBATE = Protocol(
    name="debate",
    summary="2-4 panelists designed for the question debate until a step-back judge "
    "calls it converged (at most 3 cycles), then vote",
    rules="Panelists designed for the question debate it; a step-back judge decides "
    "when the debate has converged; members vote; a chair synthesizes.",
    default_for="`/council debate ...`",
    phases=("convene", "assess", "gate", "discuss", "judge", "vote", "resolve", "synthesize"),
    seats=Seats(
        convene="designed",
        rule="2-4 panelists designed for the question (3; 4 with 4 or more models), "
        "plus a step-back judge",
        default=3,
        minimum=2,
        maximum=4,
    ),
    discussion=Discussion(
        rounds_from="judge", default_rounds=MAX_JUDGE_CYCLES, max_rounds=MAX_JUDGE_CYCLES
    ),
)
_QUICK = Protocol(
    name="quick",
    summary="a 3-seat board assesses; the verdict follows from the assessments",
    rules="A small board assesses independently; the verdict follows from the "
    "assessments; a chair synthesizes.",
    default_for="cheap auto-review on every push",
    phases=("convene", "assess", "gate", "resolve", "synthesize"),
    seats=Seats(convene="board", rule="the top 3 personas", default=3, maximum=3, fixed=3),
)

PROTOCOLS: Mapping[str, Protocol] = MappingProxyType(
    {p.name: p for p in (_BOARD, _COUNCIL, _DEBATE, _QUICK)}
)
NAMES: tuple[ProtocolName, ...] = tuple(p.name for p in PROTOCOLS.values())
if get_args(ProtocolName) != NAMES:  # pragma: no cover - caught on import
    raise AssertionError("ProtocolName must list exactly the table's protocols, in order")


def protocol(name: str) -> Protocol:
    """The protocol called `name`; ValueError naming the valid ones for any other name."""
    found = PROTOCOLS.get(name)
    if found is None:
        raise ValueError(f"unknown protocol {name!r}; choose one of {', '.join(NAMES)}")
    return found


def seat_count(name: str, *, models: int, board_size: int) -> int:
    """How many seats `name` convenes (members only: the chair, judge and designer are not
    seats).

    `models`: how many distinct models the deliberation may use; 0 (none known yet, as in
    a dry run without a provider) is planned as one.
    `board_size`: the repo's `board.default_size`; read only by protocols that seat the
    board at its configured size (`board`); `quick` always seats 3.
    For "board" convening this is the number asked for: a small catalog or pinned seats
    can change how many are actually seated (see `bot.council.scoring.select_board`).
    """
    if models < 0:
        raise ValueError(f"a number of models cannot be negative ({models})")
    models = max(models, 1)
    seats = protocol(name).seats
    if seats.convene == "board":
        count = seats.fixed or board_size
        low, high = seats.minimum, seats.maximum
        if not low <= count <= (high or count):
            raise ValueError(f"{name}: board size {count} is outside {low}-{high}")
        return count
    if seats.convene == "models":
        return (seats.single_model_samples or 1) if models == 1 else models
    assert seats.default is not None and seats.maximum is not None
    return min(max(models, seats.default), seats.maximum)


def discussion_rounds(name: str, *, configured: int) -> int:
    """How many discussion rounds `name` holds at most: `configured` (the repo's
    `board.discussion_rounds`) where the config decides, every judged cycle where a judge
    does, 0 for a protocol that does not discuss."""
    discussion = protocol(name).discussion
    if discussion is None:
        return 0
    if discussion.rounds_from == "judge":
        return discussion.max_rounds
    if not 0 <= configured <= discussion.max_rounds:
        raise ValueError(
            f"{name}: {configured} discussion rounds is outside 0-{discussion.max_rounds}"
        )
    return configured


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One model call of a planned deliberation."""

    # "design", "assess", "discuss 1", "judge 1", "rank", "vote", "merge", "synthesize"
    phase: str
    party: Party
    seat: int | None = None  # party "seat": the seat's index, 0-based; officers: None


def planned_calls(name: str, *, seats: int, rounds: int) -> list[PlannedCall]:
    """The calls of a deliberation in which every answer is complete the first time (no
    re-asks), in the order they are made. The chair's merge of the findings ("merge",
    before the resolution) is counted as the one call it makes at most: it makes none when
    no two findings share a file and overlapping lines.

    `seats`: how many members sit (usually `seat_count(...)`, or the seats a preview chose).
    `rounds`: the repo's `board.discussion_rounds`; see `discussion_rounds` for how each
    protocol reads it (debate plans all of its judged cycles, whatever it says).
    Map each call to a model with the seats' models (party "seat") and the chair model
    (the officers).
    """
    proto = protocol(name)
    members = range(seats)
    calls: list[PlannedCall] = []
    for phase in proto.phases:
        if phase == "convene" and proto.seats.convene == "designed":
            calls.append(PlannedCall("design", "designer"))
        elif phase == "assess":
            calls += [PlannedCall("assess", "seat", i) for i in members]
        elif phase == "discuss":
            for n in range(1, discussion_rounds(name, configured=rounds) + 1):
                calls += [PlannedCall(f"discuss {n}", "seat", i) for i in members]
                if proto.judged:
                    calls.append(PlannedCall(f"judge {n}", "judge"))
        elif phase == "rank" and proto.ranks(seats):
            calls += [PlannedCall("rank", "seat", i) for i in members]
        elif phase == "vote":
            calls += [PlannedCall("vote", "seat", i) for i in members]
        elif phase == "resolve":
            calls.append(PlannedCall("merge", "chair"))
        elif phase == "synthesize":
            calls.append(PlannedCall("synthesize", "chair"))
    return calls


def phases_text(name: str) -> str:
    """The phases of `name` on one line, as DELIBERATION.md and the README write them:
    "convene(board) assess gate discuss(1) vote resolve synthesize"."""
    proto = protocol(name)
    words: list[str] = []
    for phase in proto.phases:
        if phase == "convene":
            fixed = proto.seats.fixed
            words.append(f"convene({proto.seats.convene}{f', {fixed} seats' if fixed else ''})")
        elif phase == "discuss":
            assert proto.discussion is not None
            if proto.judged:
                words.append(f"discuss+judge(<={proto.discussion.max_rounds} cycles)")
            else:
                words.append(f"discuss({proto.discussion.default_rounds})")
        elif phase == "judge":
            continue  # written with the discussion it follows
        elif phase == "rank":
            words.append(f"rank({proto.rank_min_seats}+ seats)")
        elif phase == "resolve":
            words.append("resolve" if proto.votes else "resolve-by-assessments")
        else:
            words.append(phase)
    return " ".join(words)
