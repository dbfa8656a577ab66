"""What a protocol's table entry is: its phases, its seats, its discussion, and how it adds
planned calls and phase words of its own. Each protocol's entry lives in its module of
this package (`bot.council.protocols.board`, ...); the registry (`bot.council.protocols`)
collects them.

Pure and cheap to import: stdlib and typing only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

__all__ = [
    "ANSWER_TRIES",
    "ASSESS_TRIES",
    "BOARD_SIZE",
    "DEFAULT_BOARD_SIZE",
    "DEFAULT_DISCUSSION_ROUNDS",
    "DISCUSSION_ROUNDS",
    "NEUTRAL_DIVISION",
    "Convening",
    "Discussion",
    "OwnCalls",
    "Party",
    "Phase",
    "PhaseCall",
    "Protocol",
    "Seats",
    "member_calls",
]

# The phases of docs/deliberation.md, in the order a protocol runs them. "gate" is the quorum
# check after the assessments (each answer's completeness is gated as it comes in); "judge"
# runs inside the discussion, after each round.
Phase = Literal[
    "convene",
    "assess",
    "gate",
    "discuss",
    "judge",
    "outside",  # debate --full: one independent opinion from a model not on the panel
    "critique",  # strategies: HUNTER / SKEPTIC / REFEREE rounds until they converge
    "reconcile",  # strategies: the chair reconciles close analyses
    "rank",
    "vote",
    "resolve",
    "synthesize",
]
# How seats are chosen: "board" scores the persona catalog, "models" seats one neutral
# member per model, "designed" has a model design a panel for the question, "strategies"
# seats the strategy lenses of the change's task type (bot.council.protocols.strategies.seating).
Convening = Literal["board", "models", "designed", "strategies"]
# Who makes a call: a seat (a member), or one of the officers who never vote.
Party = Literal["seat", "chair", "judge", "designer", "outside"]
# The division of a seat that is no persona of the catalog (a neutral member, an officer,
# the outside reviewer): the app's name, spelled like the `council` protocol.
NEUTRAL_DIVISION = "council"

# The board's settings in the repo config (board.default_size, board.discussion_rounds):
# their defaults and bounds, which both the config and the engine validate against.
DEFAULT_BOARD_SIZE = 5
BOARD_SIZE = (2, 9)  # the bounds of board.default_size and board.min_size
DEFAULT_DISCUSSION_ROUNDS = 1
DISCUSSION_ROUNDS = (0, 3)  # the bounds of board.discussion_rounds
# How many times one planned call may be made: an assessment is re-asked up to twice (an
# incomplete answer), every other answer once (an answer that fails its schema).
ASSESS_TRIES = 3
ANSWER_TRIES = 2


@dataclass(frozen=True, slots=True)
class PhaseCall:
    """One model call of a planned deliberation."""

    # "design", "assess", "discuss 1", "judge 1", "rank", "vote", "merge", "synthesize"
    phase: str
    party: Party
    seat: int | None = None  # party "seat": the seat's index, 0-based; officers: None


def member_calls(phase: str, members: range, chair_votes: bool) -> list[PhaseCall]:
    """One phase's member calls: each seat's, then the voting chair's (`chair_votes`)."""
    chair = [PhaseCall(phase, "chair")] if chair_votes else []
    return [*(PhaseCall(phase, "seat", i) for i in members), *chair]


# A protocol's own planned calls for one of its phases: (phase, members, chair_votes).
OwnCalls = Callable[[str, range, bool], list[PhaseCall]]


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


def _no_calls(phase: str, members: range, chair_votes: bool) -> list[PhaseCall]:
    return []


@dataclass(frozen=True, slots=True)
class Button:
    """A button on the status that convenes the protocol on the same pull request (GitHub's
    check-run actions: a label of at most 20 characters, a description of at most 40);
    its identifier is the protocol's name."""

    label: str
    description: str


@dataclass(frozen=True, slots=True)
class Protocol:
    name: str
    summary: str  # one line for people: `/council help`, `--help`
    rules: str  # what every seat is told about the protocol (the system prompt)
    default_for: str
    # The built-in phases (`Phase`) in their order; a new protocol may add phases of its own.
    phases: tuple[str, ...]
    seats: Seats
    discussion: Discussion | None = None  # set exactly when "discuss" is a phase
    rank_min_seats: int | None = None  # set exactly when "rank" is a phase
    # The planned calls of the protocol's own phases (added before the shared ones').
    own_calls: OwnCalls = _no_calls
    # How `phases_text` writes the protocol's own phases.
    phase_words: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    button: Button | None = None  # a status button that convenes it (`check_run_actions`)

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
    def convenes_board(self) -> bool:
        """Its members are the persona board scored for the change (board adjustments,
        `/council board +x -y`, apply)."""
        return self.seats.convene == "board"

    @property
    def convenes_lenses(self) -> bool:
        """Its members are the strategy lenses of the change's task type."""
        return self.seats.convene == "strategies"

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
