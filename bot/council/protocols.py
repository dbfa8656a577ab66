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

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

__all__ = [
    "ANSWER_TRIES",
    "ASSESS_TRIES",
    "BOARD_SIZE",
    "DEBATE_MODES",
    "DEFAULT_BOARD_SIZE",
    "DEFAULT_DEBATE_MODE",
    "DEFAULT_DISCUSSION_ROUNDS",
    "DISCUSSION_ROUNDS",
    "MAX_CRITIQUE_ROUNDS",
    "MAX_JUDGE_CYCLES",
    "NAMES",
    "PROTOCOLS",
    "Convening",
    "DebateMode",
    "DebateModeRule",
    "Discussion",
    "Party",
    "Phase",
    "PlannedCall",
    "Protocol",
    "ProtocolName",
    "Seats",
    "debate_mode",
    "discussion_rounds",
    "longest_deliberation",
    "most_seats",
    "phases_text",
    "planned_calls",
    "protocol",
    "seat_count",
    "sequential_turns",
]

ProtocolName = Literal["board", "council", "debate", "quick", "strategies"]
# The phases of DELIBERATION.md, in the order a protocol runs them. "gate" is the quorum
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
# seats the strategy lenses of the change's task type (bot.council.strategies).
Convening = Literal["board", "models", "designed", "strategies"]
# Who makes a call: a seat (a member), or one of the officers who never vote.
Party = Literal["seat", "chair", "judge", "designer", "outside"]
# How deep a debate goes (`/council debate --quick|--standard|--full`, repo `debate.mode`).
DebateMode = Literal["quick", "standard", "full"]


@dataclass(frozen=True, slots=True)
class DebateModeRule:
    """What a debate mode runs: a judge or not, how many cycles at most, and whether an
    outside opinion is asked of a configured model that is not on the panel."""

    name: DebateMode
    judged: bool
    max_cycles: int
    outside_opinion: bool
    summary: str


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
# strategies: cross-critique rounds at most (another runs only when one does not converge).
MAX_CRITIQUE_ROUNDS = 2
# How many times one planned call may be made: an assessment is re-asked up to twice (an
# incomplete answer), every other answer once (an answer that fails its schema).
ASSESS_TRIES = 3
ANSWER_TRIES = 2
DEFAULT_DEBATE_MODE: DebateMode = "standard"
DEBATE_MODES: Mapping[str, DebateModeRule] = MappingProxyType(
    {
        "quick": DebateModeRule(
            "quick",
            judged=False,
            max_cycles=1,
            outside_opinion=False,
            summary="one discussion cycle, no judge",
        ),
        "standard": DebateModeRule(
            "standard",
            judged=True,
            max_cycles=2,
            outside_opinion=False,
            summary="a step-back judge, at most 2 cycles",
        ),
        "full": DebateModeRule(
            "full",
            judged=True,
            max_cycles=MAX_JUDGE_CYCLES,
            outside_opinion=True,
            summary=f"a step-back judge, at most {MAX_JUDGE_CYCLES} cycles, and an outside "
            "opinion from a configured model not on the panel (none with a single model)",
        ),
    }
)

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
    summary="2-4 panelists designed for the question debate, then vote; `debate.mode`: quick "
    "(1 cycle, no judge), standard (a judge, <=2 cycles), full (<=3, outside opinion)",
    rules="Panelists designed for the question debate it; a step-back judge decides "
    "when the debate has converged; members vote; a chair synthesizes.",
    default_for="`/council debate ...`",
    phases=(
        "convene",
        "assess",
        "gate",
        "discuss",
        "judge",
        "outside",
        "vote",
        "resolve",
        "synthesize",
    ),
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
_STRATEGIES = Protocol(
    name="strategies",
    summary="2-3 strategy lenses for the change's task type analyse it, then critique and "
    f"score each other (<= {MAX_CRITIQUE_ROUNDS} rounds); a conflict matrix picks the winner",
    rules="Strategy lenses analyse independently, then attack, check and score each other's "
    "analyses on a 100-point rubric; a chair reconciles close ones and synthesizes.",
    default_for="`/council strategies ...`",
    phases=("convene", "assess", "gate", "critique", "reconcile", "resolve", "synthesize"),
    seats=Seats(
        convene="strategies",
        rule="2-3 strategy lenses for the task type (classified from the signals; one cheap "
        "call when they are ambiguous)",
        default=3,
        minimum=2,
        maximum=3,
    ),
)

PROTOCOLS: Mapping[str, Protocol] = MappingProxyType(
    {p.name: p for p in (_BOARD, _COUNCIL, _DEBATE, _QUICK, _STRATEGIES)}
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


def debate_mode(mode: str | None) -> DebateModeRule:
    """The rule of a debate mode; None: `DEFAULT_DEBATE_MODE`. ValueError for another name."""
    found = DEBATE_MODES.get(mode or DEFAULT_DEBATE_MODE)
    if found is None:
        raise ValueError(f"unknown debate mode {mode!r}; choose one of {', '.join(DEBATE_MODES)}")
    return found


def discussion_rounds(name: str, *, configured: int, mode: str | None = None) -> int:
    """How many discussion rounds `name` holds at most: `configured` (the repo's
    `board.discussion_rounds`) where the config decides, every cycle the debate `mode`
    allows where a judge does (None: the default mode's), 0 for a protocol that does not
    discuss."""
    discussion = protocol(name).discussion
    if discussion is None:
        return 0
    if discussion.rounds_from == "judge":
        return min(debate_mode(mode).max_cycles, discussion.max_rounds)
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


def planned_calls(
    name: str,
    *,
    seats: int,
    rounds: int,
    mode: str | None = None,
    models: int = 1,
    chair_votes: bool = False,
) -> list[PlannedCall]:
    """The calls of a deliberation in which every answer is complete the first time (no
    re-asks), in the order they are made. The chair's merge of the findings ("merge",
    before the resolution) is counted as the one call it makes at most: it makes none when
    no two findings share a file and overlapping lines.

    `seats`: how many members sit (usually `seat_count(...)`, or the seats a preview chose).
    `rounds`: the repo's `board.discussion_rounds`; see `discussion_rounds` for how each
    protocol reads it (debate plans every cycle of its mode, whatever it says).
    `mode`: the debate mode (None: `DEFAULT_DEBATE_MODE`); other protocols ignore it.
    `models`: how many distinct models are configured: `full` asks an outside opinion
    only where there is a second one.
    Map each call to a model with the seats' models (party "seat"), the outside model
    (party "outside") and the chair model (the other officers).
    `chair_votes`: the chair model also sits as a voting member (the repo's `chair_votes`):
    one member more than `seats`, whose member calls (assess, discuss, rank, vote) follow
    the seats' in each phase as party "chair" with no seat index.
    """
    proto = protocol(name)
    rule = debate_mode(mode) if proto.judged else None
    members = range(seats)
    calls: list[PlannedCall] = []

    for phase in proto.phases:
        calls += _strategy_calls(proto, phase, members, chair_votes)  # none for the others
        if phase == "convene" and proto.seats.convene == "designed":
            calls.append(PlannedCall("design", "designer"))
        elif phase == "assess":
            calls += _member_calls("assess", members, chair_votes)
        elif phase == "discuss":
            for n in range(1, discussion_rounds(name, configured=rounds, mode=mode) + 1):
                calls += _member_calls(f"discuss {n}", members, chair_votes)
                if rule is not None and rule.judged:
                    calls.append(PlannedCall(f"judge {n}", "judge"))
        elif phase == "outside" and rule is not None and rule.outside_opinion and models > 1:
            calls.append(PlannedCall("outside opinion", "outside"))
        elif phase == "rank" and proto.ranks(seats + chair_votes):
            calls += _member_calls("rank", members, chair_votes)
        elif phase == "vote":
            calls += _member_calls("vote", members, chair_votes)
        elif phase == "resolve":
            calls.append(PlannedCall("merge", "chair"))
        elif phase == "synthesize":
            calls.append(PlannedCall("synthesize", "chair"))
    return calls


# The strategies protocol's own planned calls: the classification (made only when the
# signals are ambiguous: planned as the one call it makes at most), every cross-critique
# round (another runs only when one does not converge: all are planned) and the
# reconciliation (only when the top scores are close: planned).
def _strategy_calls(
    proto: Protocol, phase: str, members: range, chair_votes: bool
) -> list[PlannedCall]:
    if proto.seats.convene != "strategies":
        return []
    if phase == "convene":
        return [PlannedCall("classify", "chair")]
    if phase == "critique":
        return [
            call
            for n in range(1, MAX_CRITIQUE_ROUNDS + 1)
            for call in _member_calls(f"critique {n}", members, chair_votes)
        ]
    if phase == "reconcile":
        return [PlannedCall("reconcile", "chair")]
    return []


# How phases_text writes the strategies protocol's own phases.
_PHASE_WORDS = {
    "critique": f"critique(<={MAX_CRITIQUE_ROUNDS} rounds)",
    "reconcile": "reconcile(if close)",
}


def _member_calls(phase: str, members: range, chair_votes: bool) -> list[PlannedCall]:
    """One phase's member calls: each seat's, then the voting chair's (`chair_votes`)."""
    chair = [PlannedCall(phase, "chair")] if chair_votes else []
    return [*(PlannedCall(phase, "seat", i) for i in members), *chair]


def most_seats(name: str, *, models: int) -> int:
    """The most members `name` can seat with `models` distinct models (the chair as a
    voting member not counted)."""
    seats = protocol(name).seats
    if seats.convene == "models":
        return (seats.single_model_samples or 1) if models <= 1 else models
    assert seats.maximum is not None
    return seats.maximum


def sequential_turns(calls: Sequence[PlannedCall], concurrency: int) -> int:
    """How many calls of `calls` are made one after the other, at most, with each call's
    tries (`ASSESS_TRIES`, `ANSWER_TRIES`): the members' calls of one phase go out at
    once, `concurrency` at a time (a local server takes one at a time); an officer's call
    is a phase of its own."""
    turns = 0
    for phase, group in itertools.groupby(calls, key=lambda c: c.phase):
        tries = ASSESS_TRIES if phase == "assess" else ANSWER_TRIES
        turns += math.ceil(len(list(group)) / max(1, concurrency)) * tries
    return turns


def longest_deliberation(*, models: int, concurrency: int) -> tuple[str, int]:
    """The protocol (and debate mode) whose planned calls take the most sequential turns
    (`sequential_turns`) at its largest, with every discussion round and the chair
    voting; and those turns. What the job timeout is derived from."""
    worst = ("", 0)
    for name, spec in PROTOCOLS.items():
        for mode in DEBATE_MODES if spec.judged else (None,):
            calls = planned_calls(
                name,
                seats=most_seats(name, models=models),
                rounds=DISCUSSION_ROUNDS[1],
                mode=mode,
                models=max(models, 2),
                chair_votes=True,
            )
            turns = sequential_turns(calls, concurrency)
            if turns > worst[1]:
                worst = (f"{name} --{mode}" if mode else name, turns)
    return worst


def phases_text(name: str, mode: str | None = None) -> str:
    """The phases of `name` on one line, as DELIBERATION.md and the README write them:
    "convene(board) assess gate discuss(1) vote resolve synthesize". A debate's are its
    `mode`'s (None: the default mode's)."""
    proto = protocol(name)
    rule = debate_mode(mode) if proto.judged else None
    words: list[str] = []
    for phase in proto.phases:
        if phase == "convene":
            fixed = proto.seats.fixed
            words.append(f"convene({proto.seats.convene}{f', {fixed} seats' if fixed else ''})")
        elif phase == "discuss":
            assert proto.discussion is not None
            if rule is not None and rule.judged:
                words.append(f"discuss+judge(<={rule.max_cycles} cycles)")
            elif rule is not None:
                words.append(f"discuss({rule.max_cycles})")
            else:
                words.append(f"discuss({proto.discussion.default_rounds})")
        elif phase == "judge":
            continue  # written with the discussion it follows
        elif phase == "outside":
            if rule is not None and rule.outside_opinion:
                words.append("outside-opinion")
        elif phase == "rank":
            words.append(f"rank({proto.rank_min_seats}+ seats)")
        elif phase == "resolve":
            words.append("resolve" if proto.votes else "resolve-by-assessments")
        else:
            words.append(_PHASE_WORDS.get(phase, phase))
    return " ".join(words)
