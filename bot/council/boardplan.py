"""Seating a board for one run: the person's adjustments, and what the report says about it.

`seat_board` wraps `bot.council.selection.select_board` with what a `/council board +x -y`
command (or `council review --seat +x --seat -y`) asks for one run:

- `+persona` is seated like a pinned seat (unscored, after the configuration's pins). The
  board keeps its size: an add beyond it takes the place of the lowest-scored unpinned seat,
  and the notes say which seat it replaced. Pins and adds together must fit the board.
- `-persona` is kept out of the scoring and the fill. A persona the configuration pins is
  removed too (the person asked, for this run only; the note says it was pinned). The one
  exception is the correctness rule (every board seats a persona that owns the correctness
  of the changed code): removing every correctness owner the catalog has keeps the best one
  and says why.
- An id that is not in the catalog is an error naming the closest valid ids (difflib).

And three sentences for the board's part of the advisory and of the dry run:

- "Why this board: ..." - why each seated persona sits, from the scoring's reasons (the
  signals it matched) and the evidence behind them (bot/council/evidence.py: the changed
  file a file-kind persona needs, the PR's words, what the added lines do), the pins, the
  adds (saying when the evidence a persona needs is absent) and the correctness rule;
- "Adjusted for this run: +x (replacing y), -z." when the person adjusted it;
- "N of M seats filled: <why>." when fewer seats than asked were seated.

Pure and deterministic, like the scoring it reads.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.council.evidence import cite, file_cited
from bot.council.scoring import ReviewSignals, ScoredPersona, normalize
from bot.council.selection import (
    CORRECTNESS_NOTE,
    BoardError,
    BoardSelection,
    owns_correctness,
    select_board,
)

__all__ = ["SeatedBoard", "closest_ids", "seat_board", "unknown_persona_message", "why_this_board"]

MAX_PER_DIVISION = 2
# A scored reason that names a signal: "semantic +4: 'security' is a task type",
# "heuristic +2: division fits dominant 'security'".
_SIGNAL_REASON = re.compile(r"^(?:semantic|heuristic) \+(\d+): .*?'([^']+)'")


@dataclass(frozen=True)
class SeatedBoard:
    """The board seated for this run, and the notes the report shows (board notes first)."""

    selection: BoardSelection
    notes: tuple[str, ...]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()


def closest_ids(wanted: str, known: Sequence[str], n: int = 3) -> list[str]:
    """The valid ids closest to `wanted` (difflib), best first; by a shared word when
    nothing is close in spelling ("appsec" -> "appsec-reviewer")."""
    close = difflib.get_close_matches(wanted, known, n=n, cutoff=0.5)
    if close:
        return close
    words = {w for w in wanted.split("-") if len(w) >= 3}
    return [k for k in sorted(known) if words & set(k.split("-"))][:n]


def unknown_persona_message(unknown: Sequence[str], known: Sequence[str], how: str) -> str:
    """ "unknown persona 'appsec': did you mean appsec-reviewer? (`council agents` lists all)"."""
    parts = []
    for persona_id in unknown:
        close = closest_ids(persona_id, known)
        hint = f"did you mean {' or '.join(close)}?" if close else "no persona is close to it"
        parts.append(f"'{persona_id}' ({hint})")
    noun = "persona" if len(unknown) == 1 else "personas"
    return (
        f"{how}: unknown {noun} {', '.join(parts)}; the catalog has {len(known)} personas "
        "(`council agents` lists them)"
    )


def seat_board(
    scored: Sequence[ScoredPersona],
    *,
    size: int,
    min_size: int,
    pinned: Sequence[str] = (),
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    languages: Sequence[str] = (),
    signals: ReviewSignals | None = None,
) -> SeatedBoard:
    """Seat the board with this run's `add` and `remove` applied (see the module's doc).
    `signals`, the ones scored, give the evidence "why this board" cites. Raises
    `BoardError` for an unknown id or pins and adds that do not fit."""
    known = sorted(s.id for s in scored)
    asked = list(dict.fromkeys([*add, *remove]))
    unknown = [p for p in asked if p not in known]
    if unknown:
        raise BoardError(unknown_persona_message(unknown, known, "cannot adjust the board"))
    removed, notes = _removals(scored, remove)
    pins = [p for p in dict.fromkeys(pinned) if p not in removed]
    added = [p for p in dict.fromkeys(add) if p not in removed and p not in pins]
    if len(pins) + len(added) > size:
        raise BoardError(
            f"cannot adjust the board: {len(pins)} pinned and {len(added)} added personas do "
            f"not fit a board of {size} seats; remove some (-persona) or pin fewer"
        )
    pool = [s for s in scored if s.id not in removed]
    baseline = select_board(pool, size=size, min_size=min_size, pinned=pins, languages=languages)
    selection = baseline
    if added:
        selection = select_board(
            pool,
            size=size,
            min_size=min_size,
            pinned=[*pins, *added],
            languages=languages,
            added=added,
        )
    replaced = [i for i in baseline.ids if i not in selection.ids]
    board_notes = [why_this_board(selection, pinned=pins, added=added, signals=signals)]
    adjusted = _adjusted_note(add, removed, added, replaced, baseline, pinned)
    if adjusted:
        board_notes.append(adjusted)
    under = _under_size_note(selection, pool, size, min_size, removed, len(scored))
    if under:
        board_notes.append(under)
    return SeatedBoard(
        selection=selection,
        notes=(*board_notes, *notes, *_scoring_notes(selection, baseline)),
        added=tuple(added),
        removed=tuple(removed),
        replaced=tuple(replaced),
    )


def _scoring_notes(selection: BoardSelection, baseline: BoardSelection) -> list[str]:
    """The scoring's notes for the board seated. With adds, the correctness rule's note
    is the one of the board without them: the "Adjusted" note says which seat each add
    took against that board, and the two notes must name different seats, not each the
    same one from its own vantage point."""
    if selection is baseline:
        return list(selection.notes)
    before = [n for n in baseline.notes if n.startswith(CORRECTNESS_NOTE)]
    notes = [n for n in selection.notes if not n.startswith(CORRECTNESS_NOTE)]
    owner_seated = any(n.startswith(CORRECTNESS_NOTE) for n in selection.notes)
    return [*notes, *before] if owner_seated else notes


def _removals(
    scored: Sequence[ScoredPersona], remove: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The ids this run removes, and a note when the correctness rule keeps one of them."""
    removed = list(dict.fromkeys(remove))
    kept_owner = _kept_owner(scored, removed)
    if kept_owner is None:
        return removed, []
    removed.remove(kept_owner)
    return removed, [
        f"-{kept_owner} not applied: it is the only persona in the catalog that owns the "
        "correctness of the changed code, and every board seats one."
    ]


def _kept_owner(scored: Sequence[ScoredPersona], removed: Sequence[str]) -> str | None:
    """The correctness owner kept when every owner in the catalog is removed (the best
    scored of them), else None."""
    owners = [s for s in scored if owns_correctness(s.persona)]
    if not owners or not all(o.id in removed for o in owners):
        return None
    return min(owners, key=lambda s: (-s.total, s.id)).id


def _adjusted_note(
    asked_add: Sequence[str],
    removed: Sequence[str],
    added: Sequence[str],
    replaced: Sequence[str],
    baseline: BoardSelection,
    pinned: Sequence[str],
) -> str:
    if not asked_add and not removed:
        return ""
    parts: list[str] = []
    fresh = [p for p in added if p not in baseline.ids]
    already = [p for p in dict.fromkeys(asked_add) if p not in fresh]
    if fresh:
        plus = ", ".join(f"+{p}" for p in fresh)
        parts.append(f"{plus} (replacing {', '.join(replaced)})" if replaced else plus)
    if already:
        parts.append(", ".join(f"+{p} (already seated)" for p in already))
    for persona_id in removed:
        parts.append(
            f"-{persona_id} (pinned by the configuration)"
            if persona_id in pinned
            else f"-{persona_id}"
        )
    return f"Adjusted for this run: {', '.join(parts)}."


def _under_size_note(
    selection: BoardSelection,
    pool: Sequence[ScoredPersona],
    size: int,
    min_size: int,
    removed: Sequence[str],
    catalog: int,
) -> str:
    seated = len(selection.seats)
    if seated >= size:
        return ""
    why: list[str] = []
    if catalog < size:
        why.append(f"the catalog has only {catalog} personas")
    above = [s for s in pool if s.total > 0]
    if len(above) < size:
        why.append(f"only {len(above)} persona(s) scored above zero for this change")
    capped = [s.id for s in above if s.id not in selection.ids]
    if capped:
        why.append(
            f"the division cap ({MAX_PER_DIVISION} per division) passed over {', '.join(capped)}"
        )
    if removed:
        why.append(f"{', '.join(removed)} removed for this run")
    if seated >= min(min_size, size):
        why.append(
            f"board.min_size ({min_size}) is met, so the other seats stay empty rather than "
            "seat personas the change gives nothing to judge"
        )
    return f"{seated} of {size} seats filled: {'; '.join(why)}."


def _signals(seat: ScoredPersona) -> list[str]:
    """The concepts that seated a scored persona, most points first (at most two)."""
    points: dict[str, int] = {}
    for reason in seat.reasons:
        match = _SIGNAL_REASON.match(reason)
        if match:
            concept = normalize(match.group(2))
            points[concept] = points.get(concept, 0) + int(match.group(1))
    ranked = sorted(points, key=lambda c: (-points[c], c))
    return ranked[:2]


def _and(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def why_this_board(
    selection: BoardSelection,
    *,
    pinned: Sequence[str] = (),
    added: Sequence[str] = (),
    signals: ReviewSignals | None = None,
) -> str:
    """One sentence on why these personas sit, citing the evidence where `signals` has it,
    e.g. "Why this board: the change's concurrency signals seated concurrency-analyst: it
    uses trio (nursery.start_soon) in graphrag/utils.py:442; its database signals seated
    migration-safety (db/migrations/0003.py changed); correctness-reviewer owns correctness:
    the title says 'fix'." """
    evidence = signals or ReviewSignals()
    groups: dict[str, list[ScoredPersona]] = {}  # the signal that weighed most -> who
    owners: list[str] = []
    pins: list[ScoredPersona] = []
    adds: list[ScoredPersona] = []
    fills: list[str] = []
    for seat in selection.seats:
        if seat.id in added:
            adds.append(seat)
        elif seat.id in pinned:
            pins.append(seat)
        elif owns_correctness(seat.persona):
            owners.append(seat.id)
        elif seat.total > 0 and _signals(seat):
            groups.setdefault(_signals(seat)[0], []).append(seat)
        else:
            fills.append(seat.id)
    whose = ["the change's", *(["its"] * len(groups))]
    parts = [
        f"{whose[n]} {concept} signals seated {_seated(seats, concept, evidence)}"
        for n, (concept, seats) in enumerate(groups.items())
    ]
    if owners:
        owns = f"{_and(owners)} {'owns' if len(owners) == 1 else 'own'} correctness"
        cited = cite("correctness", evidence.intent, evidence.evidence, normalize)
        parts.append(f"{owns}: {cited}" if cited else owns)
    if pins:
        are = "is" if len(pins) == 1 else "are"
        parts.append(
            f"{_and([s.id for s in pins])} {are} pinned by the configuration{_absent(pins)}"
        )
    if adds:
        were = "was" if len(adds) == 1 else "were"
        parts.append(f"{_and([s.id for s in adds])} {were} added for this run{_absent(adds)}")
    if fills:
        parts.append(
            f"{_and(fills)} filled {'a seat' if len(fills) == 1 else 'seats'} "
            "(no signal called for them)"
        )
    return f"Why this board: {'; '.join(parts)}."


def _seated(seats: Sequence[ScoredPersona], concept: str, signals: ReviewSignals) -> str:
    """The seats a concept seated, a file-kind persona with the file that lets it sit, and
    then the evidence for the concept: "migration-safety (db/m/0003.py changed) and
    appsec-reviewer: the title says 'CVE-2024-3094'"."""
    named = []
    for seat in seats:
        changed = file_cited(seat.persona.requires_files, signals.artifact_paths)
        named.append(f"{seat.id} ({changed})" if changed else seat.id)
    if all(s.persona.requires_files for s in seats):
        return _and(named)
    cited = cite(concept, signals.intent, signals.evidence, normalize)
    return f"{_and(named)}: {cited}" if cited else _and(named)


def _absent(seats: Sequence[ScoredPersona]) -> str:
    """ " (its evidence is absent: no migration ... file changed)" for seats that sit without
    the kind of file their persona requires."""
    missing = [s for s in seats if s.missing_evidence]
    if not missing:
        return ""
    if len(seats) == 1:
        return f" (its evidence is absent: {missing[0].missing_evidence})"
    said = ", ".join(f"{s.id}: {s.missing_evidence}" for s in missing)
    return f" (evidence absent for {said})"
