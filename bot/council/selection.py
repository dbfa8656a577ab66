"""Seating a board from the scores (bot/council/scoring.py): pins first, then the
best-scored with at most so many seats per division, one seat that owns the correctness of
the changed code, and a fill up to the minimum board, each choice said in a note
(docs/deliberation.md, "Convene"). Pure and deterministic; ties break by persona id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from bot.council.personas import Persona
from bot.council.scoring import ScoredPersona, compact, normalize, rank_key

# Divisions whose lenses say something about any change: first picks when filling a board.
GENERALIST_DIVISIONS = frozenset({"adversarial", "architecture", "maintainability", "testing"})
# Every board seats one persona that owns the correctness of the changed code: one of this
# division, or one with this task type (a language specialist a repo adds, say).
CORRECTNESS_DIVISION = "correctness"
CORRECTNESS_TASK_TYPE = "correctness"
# How the correctness rule's note starts (bot.council.boardplan finds it by this).
CORRECTNESS_NOTE = "Correctness owner:"


class BoardSelection(BaseModel):
    """The seated personas in seat order, and what the report should say about the choice."""

    model_config = ConfigDict(frozen=True)

    seats: tuple[ScoredPersona, ...]
    notes: tuple[str, ...] = ()

    @property
    def ids(self) -> list[str]:
        return [seat.id for seat in self.seats]


class BoardError(ValueError):
    """The board cannot be seated as asked (unknown pinned id, catalog too small)."""


def _fill_key(scored: ScoredPersona) -> tuple[float, int, bool, str]:
    # Among personas with equal totals (in practice: zero), prefer those whose languages,
    # frameworks or artifacts fit the change, then lenses that apply to any change, rather
    # than alphabetical order (which would seat accessibility on a backend change).
    generalist = scored.division in GENERALIST_DIVISIONS
    return (-scored.total, -scored.affinity, not generalist, scored.id)


def select_board(
    scored: Sequence[ScoredPersona],
    *,
    size: int = 5,
    min_size: int = 3,
    max_per_division: int = 2,
    pinned: Sequence[str] = (),
    languages: Sequence[str] = (),
    added: Sequence[str] = (),
) -> BoardSelection:
    """Seat up to `size` personas: pinned ones first (unscored, in the given order), then
    the best-scored, at most `max_per_division` per division. One seat always owns the
    correctness of the changed code (`owns_correctness`; the specialist for one of the
    change's `languages` first, else the best-scored owner): when neither the pins nor the
    scores seat one, it takes the last unpinned seat (or, when pins fill the board, one
    seat more), and the notes say why. With fewer than `min_size` seats above zero, fill
    from other divisions and say so. Never fewer than 2 seats: raises `BoardError` when the
    catalog cannot give 2, or a pinned id is unknown."""
    if size < 2:
        raise BoardError(f"board size must be at least 2, got {size}")
    by_id = {s.id: s for s in scored}
    # A persona without the evidence it requires is seated only when pinned or added.
    ranked = sorted((s for s in scored if s.missing_evidence is None), key=rank_key)
    board = _Board(max_per_division)
    notes = _seat_pinned(board, pinned, by_id, size, added)
    pinned_count = len(board.seats)
    notes += _seat_ranked(board, ranked, size)
    notes += _seat_correctness_owner(board, ranked, size, pinned_count, languages)
    floor = min(max(min_size, 2), size)
    if len(board.seats) < floor:
        notes += _fill(board, sorted(ranked, key=_fill_key), floor)
    if len(board.seats) < 2:
        raise BoardError(
            f"cannot seat a board: the catalog has {len(by_id)} persona(s), at least 2 needed"
        )
    return BoardSelection(seats=tuple(board.seats), notes=tuple(notes))


class _Board:
    def __init__(self, max_per_division: int) -> None:
        self.seats: list[ScoredPersona] = []
        self.per_division: Counter[str] = Counter()
        self.max_per_division = max(max_per_division, 1)

    def has(self, candidate: ScoredPersona) -> bool:
        return any(s.id == candidate.id for s in self.seats)

    def division_full(self, candidate: ScoredPersona) -> bool:
        return self.per_division[candidate.division] >= self.max_per_division

    def seat(self, candidate: ScoredPersona) -> None:
        self.seats.append(candidate)
        self.per_division[candidate.division] += 1

    def unseat(self, index: int) -> ScoredPersona:
        removed = self.seats.pop(index)
        self.per_division[removed.division] -= 1
        return removed


def _seat_pinned(
    board: _Board,
    pinned: Sequence[str],
    by_id: dict[str, ScoredPersona],
    size: int,
    added: Sequence[str] = (),
) -> list[str]:
    wanted = list(dict.fromkeys(pinned))
    unknown = [p for p in wanted if p not in by_id]
    if unknown:
        raise BoardError(
            f"pinned persona(s) not in the catalog: {', '.join(unknown)}"
            f" (known: {', '.join(sorted(by_id)) or 'none'})"
        )
    if len(wanted) > size:
        raise BoardError(f"{len(wanted)} pinned personas do not fit a board of {size}")
    for persona_id in wanted:
        board.seat(by_id[persona_id])
    # `added`: pins of one run (`/council board +persona`), which the run's "Adjusted for
    # this run" note names (bot.council.boardplan); the config's are said here.
    by_config = [p for p in wanted if p not in added]
    return [f"Pinned by configuration (not scored): {', '.join(by_config)}."] if by_config else []


def _seat_ranked(board: _Board, ranked: Sequence[ScoredPersona], size: int) -> list[str]:
    passed_over: list[str] = []
    for candidate in ranked:
        if len(board.seats) >= size or candidate.total <= 0:
            break
        if board.has(candidate):
            continue
        if board.division_full(candidate):
            passed_over.append(candidate.id)
            continue
        board.seat(candidate)
    if not passed_over:
        return []
    return [
        f"At most {board.max_per_division} seats per division; passed over: "
        f"{', '.join(passed_over)}."
    ]


def owns_correctness(persona: Persona) -> bool:
    """Whether the persona owns the correctness of the changed code: the correctness
    division, or a task type that is the correctness concept."""
    return persona.division == CORRECTNESS_DIVISION or any(
        normalize(t) == CORRECTNESS_TASK_TYPE for t in persona.task_types
    )


# A correctness owner listing at most this many languages is a language specialist.
_SPECIALIST_LANGUAGES = 2


def _owner_key(scored: ScoredPersona, languages: frozenset[str]) -> tuple[bool, int, float, str]:
    # A specialist for one of the change's languages first (the fewer languages it lists,
    # the more special), then the best-scored generalist.
    listed = {compact(lang) for lang in scored.persona.languages}
    fits = bool(listed & languages)
    return (not fits, len(listed) if fits else 0, -scored.total, scored.id)


def _seat_correctness_owner(
    board: _Board,
    ranked: Sequence[ScoredPersona],
    size: int,
    pinned_count: int,
    languages: Sequence[str],
) -> list[str]:
    why = "every board has a seat that owns the correctness of the changed code"
    for index, seat in enumerate(board.seats):
        if owns_correctness(seat.persona):
            how = "pinned by configuration" if index < pinned_count else "seated by its score"
            return [f"Correctness owner: {seat.id} ({how}); {why}."]
    wanted = frozenset(compact(lang) for lang in languages) - {""}
    owners = sorted(
        (s for s in ranked if owns_correctness(s.persona) and not board.has(s)),
        key=lambda s: _owner_key(s, wanted),
    )
    if owners:
        owner = owners[0]
        place = _owner_place(board, owner, size, pinned_count)
        listed = {compact(lang) for lang in owner.persona.languages}
        fits = sorted(listed & wanted) if len(listed) <= _SPECIALIST_LANGUAGES else []
        what = f"{owner.id} (the {'/'.join(fits)} specialist)" if fits else owner.id
        note = (
            f"{CORRECTNESS_NOTE} {what} added, because no seat the signals or pins chose "
            "owns the correctness of the changed code (logic, edge cases, error handling, "
            f"the change doing what it claims) and {why}"
        )
        if place == len(board.seats) and len(board.seats) >= size:
            note += f"; the pinned seats fill the board of {size}, so it is one seat more"
        elif place < len(board.seats):
            note += f"; it takes the place of {board.unseat(place).id}"
        board.seat(owner)
        return [note + "."]
    return [
        "No persona in the catalog owns the correctness of the changed code (division "
        f"'{CORRECTNESS_DIVISION}' or task type '{CORRECTNESS_TASK_TYPE}'); the board has "
        "no correctness owner."
    ]


def _owner_place(board: _Board, owner: ScoredPersona, size: int, pinned_count: int) -> int:
    """Where the correctness owner goes: the index of the unpinned seat it replaces, or
    `len(board.seats)` to add it. In a full division it replaces a scored seat of that
    division; a division full of pins does not keep it out (pins are not capped either)."""
    unpinned = range(len(board.seats) - 1, pinned_count - 1, -1)
    if board.division_full(owner):
        same = [i for i in unpinned if board.seats[i].division == owner.division]
        if same:
            return same[0]
    if len(board.seats) < size or len(board.seats) == pinned_count:
        return len(board.seats)
    return len(board.seats) - 1


_Allowed = Callable[[ScoredPersona], bool]


def _fill(board: _Board, ranked: Sequence[ScoredPersona], floor: int) -> list[str]:
    """Top the board up to `floor`: new divisions first, then divisions with room; the
    division cap is relaxed only to reach the absolute minimum of 2 seats."""
    above_zero = sum(1 for s in ranked if s.total > 0)
    seated = len(board.seats)
    added = _fill_pass(board, ranked, floor, lambda c: board.per_division[c.division] == 0)
    added += _fill_pass(board, ranked, floor, lambda c: not board.division_full(c))
    relaxed = _fill_pass(board, ranked, 2, lambda c: True)
    if not added and not relaxed:
        return []
    if above_zero < floor:
        why = f"Only {above_zero} persona(s) scored above zero (minimum board: {floor})"
    else:
        why = f"The division cap left {seated} seat(s) (minimum board: {floor})"
    notes = [f"{why}; filled from other divisions: {', '.join(added + relaxed)}."]
    if relaxed:
        notes.append(f"Division cap relaxed to reach 2 seats: {', '.join(relaxed)}.")
    return notes


def _fill_pass(
    board: _Board, ranked: Sequence[ScoredPersona], floor: int, allowed: _Allowed
) -> list[str]:
    added: list[str] = []
    for candidate in ranked:
        if len(board.seats) >= floor:
            break
        if not board.has(candidate) and allowed(candidate):
            board.seat(candidate)
            added.append(candidate.id)
    return added
