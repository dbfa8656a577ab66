"""Planning a deliberation from the protocol table without running it: how many seats and
rounds, which calls in which order, how long at most, and the phases on one line.

Pure and cheap to import: stdlib and typing only.

Planning a deliberation without running it::

    seats = seat_count("debate", models=2, board_size=board.default_size)     # 3
    calls = planned_calls("debate", seats=seats, rounds=board.discussion_rounds)
    [(c.phase, c.party, c.seat) for c in calls][:2]
    # [("design", "designer", None), ("assess", "seat", 0)]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from bot.council.protocols.debate import DEBATE_MODES, DebateModeRule, debate_mode
from bot.council.protocols.registry import PROTOCOLS, protocol
from bot.council.protocols.spec import (
    ANSWER_TRIES,
    ASSESS_TRIES,
    DISCUSSION_ROUNDS,
    PhaseCall,
    Protocol,
    member_calls,
)

__all__ = [
    "discussion_rounds",
    "longest_deliberation",
    "most_seats",
    "phases_text",
    "planned_calls",
    "seat_count",
    "sequential_turns",
]


def seat_count(name: str, *, models: int, board_size: int) -> int:
    """How many seats `name` convenes (members only: the chair, judge and designer are not
    seats).

    `models`: how many distinct models the deliberation may use; 0 (none known yet, as in
    a dry run without a provider) is planned as one.
    `board_size`: the repo's `board.default_size`; read only by protocols that seat the
    board at its configured size (`board`); `quick` always seats 3.
    For "board" convening this is the number asked for: a small catalog or pinned seats
    can change how many are actually seated (see `bot.council.selection.select_board`).
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


def judge_rule(proto: Protocol, mode: str | None) -> DebateModeRule | None:
    """The mode rule of a judged protocol (None: the default mode's); None for the others."""
    return debate_mode(mode) if proto.judged else None


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


def planned_calls(
    name: str,
    *,
    seats: int,
    rounds: int,
    mode: str | None = None,
    models: int = 1,
    chair_votes: bool = False,
) -> list[PhaseCall]:
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
    rule = judge_rule(proto, mode)
    members = range(seats)
    calls: list[PhaseCall] = []

    for phase in proto.phases:
        calls += proto.own_calls(phase, members, chair_votes)  # the protocol's own
        if phase == "convene" and proto.seats.convene == "designed":
            calls.append(PhaseCall("design", "designer"))
        elif phase == "assess":
            calls += member_calls("assess", members, chair_votes)
        elif phase == "discuss":
            for n in range(1, discussion_rounds(name, configured=rounds, mode=mode) + 1):
                calls += member_calls(f"discuss {n}", members, chair_votes)
                if rule is not None and rule.judged:
                    calls.append(PhaseCall(f"judge {n}", "judge"))
        elif phase == "outside" and rule is not None and rule.outside_opinion and models > 1:
            calls.append(PhaseCall("outside opinion", "outside"))
        elif phase == "rank" and proto.ranks(seats + chair_votes):
            calls += member_calls("rank", members, chair_votes)
        elif phase == "vote":
            calls += member_calls("vote", members, chair_votes)
        elif phase == "resolve":
            calls.append(PhaseCall("merge", "chair"))
        elif phase == "synthesize":
            calls.append(PhaseCall("synthesize", "chair"))
    return calls


def most_seats(name: str, *, models: int) -> int:
    """The most members `name` can seat with `models` distinct models (the chair as a
    voting member not counted)."""
    seats = protocol(name).seats
    if seats.convene == "models":
        return (seats.single_model_samples or 1) if models <= 1 else models
    assert seats.maximum is not None
    return seats.maximum


def sequential_turns(calls: Sequence[PhaseCall], concurrency: int) -> int:
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
    """The phases of `name` on one line, as docs/deliberation.md and the README write them:
    "convene(board) assess gate discuss(1) vote resolve synthesize". A debate's are its
    `mode`'s (None: the default mode's)."""
    proto = protocol(name)
    rule = judge_rule(proto, mode)
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
            words.append(proto.phase_words.get(phase, phase))
    return " ".join(words)
