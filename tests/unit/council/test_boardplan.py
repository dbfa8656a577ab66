"""Board adjustments for one run (`/council board +x -y`), the "why this board" sentence and
the under-size statement (issue 12, part 4; docs/deliberation.md, "Convene"), on the
shipped catalog."""

from __future__ import annotations

import re

import pytest

from bot.council.boardplan import closest_ids, seat_board, why_this_board
from bot.council.convene import ConveneError, convene
from bot.council.personas import load_catalog
from bot.council.request import ConveneRequest
from bot.council.scoring import ReviewSignals, score_catalog
from bot.council.selection import BoardError, select_board

CATALOG = load_catalog()
SECURITY = ReviewSignals(
    topic="Review this pull request",
    languages=("python",),
    areas=("security", "dependencies", "database"),
    artifact_types=("package-manifest", "migration"),
    dominant_area="security",
)
SCORED = score_catalog(CATALOG, SECURITY)


def test_no_adjustment_seats_what_select_board_seats() -> None:
    seated = seat_board(SCORED, size=5, min_size=3)
    assert seated.selection.ids == select_board(SCORED, size=5, min_size=3).ids
    assert not any(n.startswith("Adjusted for this run") for n in seated.notes)


def test_an_add_beyond_the_size_replaces_the_lowest_scored_unpinned_seat_and_says_so() -> None:
    before = seat_board(SCORED, size=5, min_size=3).selection.ids
    assert "docs-reviewer" not in before and len(before) == 5
    seated = seat_board(SCORED, size=5, min_size=3, add=["docs-reviewer"])
    ids = seated.selection.ids
    assert len(ids) == 5 and ids[0] == "docs-reviewer"  # seated first, like a pin
    (gone,) = [i for i in before if i not in ids]
    # The one that left is the lowest-scored seat the signals chose.
    scores = {s.id: s.total for s in SCORED}
    scored_seats = [i for i in before if i != "correctness-reviewer"]
    assert scores[gone] == min(scores[i] for i in scored_seats)
    assert f"Adjusted for this run: +docs-reviewer (replacing {gone})." in seated.notes
    # Said once, in the Adjusted note (the scoring's own "seated for this run" is not repeated).
    assert not any(n.startswith("Seated for this run") for n in seated.notes)
    assert seated.replaced == (gone,)


def test_the_notes_never_name_one_seat_as_replaced_twice() -> None:
    """An add and the correctness rule each take a seat: the Adjusted note and the
    correctness note name two different seats, both against the board without the add,
    and neither of them sits on the board."""
    for add in (["docs-reviewer"], ["appsec-reviewer"], ["docs-reviewer", "frontend-engineer"]):
        seated = seat_board(SCORED, size=5, min_size=3, add=add)
        named = [
            m.group(1)
            for n in seated.notes
            for m in re.finditer(r"(?:replacing|takes the place of) ([a-z-]+)", n)
        ]
        assert len(named) == len(set(named)), (add, seated.notes)
        assert not set(named) & set(seated.selection.ids), (add, seated.notes)


def test_a_remove_keeps_the_persona_out_of_scoring_and_fill() -> None:
    seated = seat_board(SCORED, size=5, min_size=5, remove=["appsec-reviewer"])
    assert "appsec-reviewer" not in seated.selection.ids
    assert len(seated.selection.ids) == 5  # the fill did not bring it back
    assert "Adjusted for this run: -appsec-reviewer." in seated.notes


def test_add_and_remove_together() -> None:
    seated = seat_board(
        SCORED, size=5, min_size=3, add=["performance-engineer"], remove=["supply-chain-guardian"]
    )
    ids = seated.selection.ids
    assert "performance-engineer" in ids and "supply-chain-guardian" not in ids
    adjusted = next(n for n in seated.notes if n.startswith("Adjusted for this run"))
    assert "+performance-engineer" in adjusted and "-supply-chain-guardian" in adjusted


def test_an_unknown_persona_names_the_closest_valid_ones() -> None:
    with pytest.raises(BoardError) as raised:
        seat_board(SCORED, size=5, min_size=3, add=["appsec-reviwer"], remove=["docs"])
    text = str(raised.value)
    assert "unknown personas 'appsec-reviwer' (did you mean appsec-reviewer" in text
    assert "'docs' (did you mean docs-reviewer" in text
    assert closest_ids("appsec", sorted(CATALOG.personas)) == ["appsec-reviewer"]


async def test_an_unknown_persona_is_a_convene_error_before_any_call() -> None:
    request = ConveneRequest(
        deliberation_id="d",
        protocol="board",
        topic="t",
        signals=SECURITY,
        models=["anthropic:claude-sonnet-5-5"],
        board_add=["sre"],
    )
    with pytest.raises(ConveneError, match=r"did you mean .*sre-reliability"):
        await convene(request, CATALOG, [], None)


def test_removing_a_pinned_persona_removes_it_for_this_run_and_says_it_was_pinned() -> None:
    seated = seat_board(
        SCORED, size=5, min_size=3, pinned=["docs-reviewer"], remove=["docs-reviewer"]
    )
    assert "docs-reviewer" not in seated.selection.ids
    assert "Adjusted for this run: -docs-reviewer (pinned by the configuration)." in seated.notes


def test_removing_the_only_correctness_owner_is_not_applied_and_says_why() -> None:
    seated = seat_board(SCORED, size=5, min_size=3, remove=["correctness-reviewer"])
    assert "correctness-reviewer" in seated.selection.ids
    assert any(
        n.startswith("-correctness-reviewer not applied: it is the only persona")
        for n in seated.notes
    )


def test_pins_and_adds_must_fit_the_board() -> None:
    with pytest.raises(BoardError, match="2 pinned and 2 added personas do not fit a board of 3"):
        seat_board(
            SCORED,
            size=3,
            min_size=3,
            pinned=["docs-reviewer", "test-engineer"],
            add=["sre-reliability", "software-architect"],
        )


def test_why_this_board_names_the_seated_personas_and_the_signals_that_seated_them() -> None:
    seated = seat_board(SCORED, size=5, min_size=3)
    why = seated.notes[0]
    assert why.startswith("Why this board: the change's security signals seated ")
    for persona_id in seated.selection.ids:
        assert persona_id in why
    assert "appsec-reviewer" in why.split(";")[0]  # seated by the security signals
    assert "its database signals seated" in why
    assert "correctness-reviewer owns correctness" in why


def test_why_this_board_says_pinned_added_and_filled() -> None:
    docs = ReviewSignals(areas=("docs-only",), artifact_types=("readme",), dominant_area="docs")
    scored = score_catalog(CATALOG, docs)
    seated = seat_board(
        scored, size=5, min_size=5, pinned=["sre-reliability"], add=["appsec-reviewer"]
    )
    why = why_this_board(seated.selection, pinned=["sre-reliability"], added=["appsec-reviewer"])
    assert why == seated.notes[0]
    assert "sre-reliability is pinned by the configuration" in why
    assert "appsec-reviewer was added for this run" in why
    # min_size 5 on a docs change: the fill seats personas no signal called for.
    filled = [s.id for s in seated.selection.seats if s.total <= 0]
    filled = [i for i in filled if i not in ("sre-reliability", "appsec-reviewer")]
    filled = [i for i in filled if i != "correctness-reviewer"]
    if filled:
        assert "(no signal called for them)" in why and filled[0] in why


def test_the_under_size_statement_says_how_many_seats_and_why() -> None:
    # A stylesheet changed: the frontend seats may sit (issue 22: they need a frontend file).
    narrow = ReviewSignals(
        areas=("accessibility",), artifact_types=("stylesheet",), dominant_area="accessibility"
    )
    scored = score_catalog(CATALOG, narrow)
    above = [s for s in scored if s.total > 0]
    assert 0 < len(above) < 5
    seated = seat_board(scored, size=5, min_size=2)
    count = len(seated.selection.ids)
    assert count < 5
    under = next(n for n in seated.notes if " of 5 seats filled: " in n)
    assert under.startswith(f"{count} of 5 seats filled: only {len(above)} persona(s) scored")
    assert "board.min_size (2) is met" in under


def test_no_under_size_statement_on_a_full_board() -> None:
    seated = seat_board(SCORED, size=5, min_size=3)
    assert not any(" seats filled: " in n for n in seated.notes)
