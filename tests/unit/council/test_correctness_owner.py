"""Every board seats a correctness owner; briefs name who is seated; quick asks no questions.

Issue 11 (parts 6 and 8): a real PR (a workflow, its README and a 92-line script) was
reviewed by Platform, Supply Chain, Docs, AppSec and Devil's Advocate, and nobody owned the
script's correctness; seats deferred to reviewers who were not seated; quick asked
questions that no discussion would answer.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.council.engine import Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import Catalog, Persona, load_catalog
from bot.council.prompts import assess_task, seat_brief
from bot.council.scoring import ReviewSignals, score_catalog
from bot.council.seats import seat_from_persona
from bot.council.selection import BoardSelection, owns_correctness, select_board
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import FakeProviders, engine_request
from tests.unit.council.test_scoring import persona, personas, signals_strategy

SHIPPED = load_catalog()

MIXES = {
    # The PR of the issue: a workflow, its README and a script.
    "workflow+docs+script": ReviewSignals(
        topic="Add a nightly release workflow",
        languages=("python",),
        areas=("ci-cd", "documentation"),
        artifact_types=("workflow", "readme", "script"),
        keywords=("github-actions", "release", "supply-chain"),
        dominant_area="ci-cd",
    ),
    "pure docs": ReviewSignals(
        areas=("docs-only",), artifact_types=("markdown", "readme"), dominant_area="docs-only"
    ),
    "frontend": ReviewSignals(
        languages=("typescript",),
        frameworks=("react",),
        areas=("frontend", "accessibility"),
        artifact_types=("component", "css"),
        dominant_area="frontend",
    ),
    "database migration": ReviewSignals(
        languages=("python",),
        frameworks=("alembic", "sqlalchemy"),
        areas=("database",),
        artifact_types=("migration",),
        dominant_area="database",
    ),
    "security": ReviewSignals(
        languages=("python",),
        frameworks=("fastapi",),
        areas=("security", "public-api"),
        keywords=("jwt", "authentication", "session"),
        dominant_area="security",
    ),
    "choice": ReviewSignals(topic="Should this cache live in Redis? Latency matters."),
    "nothing": ReviewSignals(),
}
PINS: list[list[str]] = [
    [],
    ["docs-reviewer"],
    ["product-reviewer", "docs-reviewer"],
    ["platform-engineer", "supply-chain-guardian", "docs-reviewer"],
    ["correctness-reviewer"],
]


def owners(board: BoardSelection) -> list[str]:
    return [s.id for s in board.seats if owns_correctness(s.persona)]


def owner_note(board: BoardSelection) -> str:
    found = [n for n in board.notes if n.startswith("Correctness owner: ")]
    assert len(found) == 1, board.notes
    return found[0]


def test_the_shipped_catalog_has_a_correctness_generalist() -> None:
    generalist = SHIPPED.get("correctness-reviewer")
    assert generalist is not None and owns_correctness(generalist)
    assert generalist.division == "correctness"
    assert "error handling" in generalist.lenses


@pytest.mark.parametrize("mix", sorted(MIXES))
@pytest.mark.parametrize("size", [2, 3, 5, 9])
@pytest.mark.parametrize("pinned", PINS, ids=lambda p: "+".join(p) or "no-pins")
def test_every_board_has_a_correctness_owner_and_says_why(
    mix: str, size: int, pinned: list[str]
) -> None:
    if len(pinned) > size:
        pytest.skip("more pins than seats is an error of its own")
    signals = MIXES[mix]
    board = select_board(
        score_catalog(SHIPPED, signals),
        size=size,
        min_size=min(3, size),
        pinned=pinned,
        languages=signals.languages,
    )
    assert owners(board) == ["correctness-reviewer"]
    # Pins keep their places, in order; nothing else breaks the board's rules.
    assert board.ids[: len(pinned)] == pinned
    assert len(board.ids) == len(set(board.ids))
    assert max(Counter(s.division for s in board.seats).values()) <= 2
    # Only when the pins fill every seat does the owner take one seat more.
    assert len(board.seats) <= (size + 1 if len(pinned) == size else size)
    note = owner_note(board)
    assert "correctness-reviewer" in note
    assert "owns the correctness of the changed code" in note
    if "correctness-reviewer" in pinned:
        assert "(pinned by configuration)" in note
    elif "added, because" in note:
        assert "no seat the signals or pins chose owns the correctness" in note


def test_the_issue_board_gets_a_correctness_owner() -> None:
    signals = MIXES["workflow+docs+script"]
    before = ["platform-engineer", "supply-chain-guardian", "docs-reviewer", "appsec-reviewer"]
    board = select_board(score_catalog(SHIPPED, signals), size=5, languages=signals.languages)
    assert "correctness-reviewer" in board.ids
    assert set(before) & set(board.ids)


def test_quick_sized_board_replaces_the_last_scored_seat_and_names_it() -> None:
    signals = MIXES["workflow+docs+script"]
    scored = score_catalog(SHIPPED, signals)
    without = [s for s in scored if not owns_correctness(s.persona)]
    plain = select_board(without, size=3)
    board = select_board(scored, size=3, languages=signals.languages)
    assert board.ids[:2] == plain.ids[:2]
    assert board.ids[2] == "correctness-reviewer"
    assert f"it takes the place of {plain.ids[2]}" in owner_note(board)


def test_pins_that_fill_the_board_keep_their_places_and_the_owner_is_one_more() -> None:
    pins = ["platform-engineer", "supply-chain-guardian", "docs-reviewer"]
    board = select_board(score_catalog(SHIPPED, MIXES["workflow+docs+script"]), size=3, pinned=pins)
    assert board.ids == [*pins, "correctness-reviewer"]
    assert "the pinned seats fill the board of 3, so it is one seat more" in owner_note(board)


def test_a_pinned_correctness_owner_is_the_owner() -> None:
    board = select_board(
        score_catalog(SHIPPED, MIXES["pure docs"]), size=2, pinned=["correctness-reviewer"]
    )
    assert board.ids[0] == "correctness-reviewer"
    assert owners(board) == ["correctness-reviewer"]


SPECIALIST = persona(
    "python-specialist",
    "python",
    ("correctness", "python"),
    description="Knows Python's pitfalls.",
    languages=("python",),
)


def test_the_languages_specialist_is_preferred_to_the_generalist() -> None:
    catalog = SHIPPED.overridden_by(Catalog(personas={SPECIALIST.id: SPECIALIST}))
    signals = MIXES["pure docs"].model_copy(update={"languages": ("python",)})
    board = select_board(score_catalog(catalog, signals), size=3, languages=("python",))
    assert owners(board) == ["python-specialist"]
    assert "python-specialist (the python specialist) added" in owner_note(board)
    # Without the change's languages, the best-scored owner takes the seat.
    go = select_board(score_catalog(catalog, MIXES["pure docs"]), size=3, languages=("go",))
    assert len(owners(go)) == 1


def test_a_catalog_without_an_owner_says_so() -> None:
    personas_ = [persona("a", "security", ("security",)), persona("b", "docs", ("docs",))]
    board = select_board(score_catalog(personas_, ReviewSignals(areas=("security",))))
    assert owners(board) == []
    assert any("No persona in the catalog owns the correctness" in n for n in board.notes)


@settings(max_examples=150, deadline=None)
@given(
    catalog=personas(),
    signals=signals_strategy,
    size=st.integers(2, 9),
    min_size=st.integers(0, 9),
    owner_division=st.sampled_from(["correctness", "security", "testing"]),
    data=st.data(),
)
def test_any_catalog_with_an_owner_seats_one(
    catalog: list[Persona],
    signals: ReviewSignals,
    size: int,
    min_size: int,
    owner_division: str,
    data: st.DataObject,
) -> None:
    owner = persona("owner", owner_division, ("correctness",))
    catalog = [p for p in catalog if p.id != "owner"] + [owner]
    ids = [p.id for p in catalog if p.id != "owner"]
    pinned = (
        data.draw(st.lists(st.sampled_from(ids), max_size=min(size, 3), unique=True)) if ids else []
    )
    if len(catalog) < 2:
        return
    board = select_board(
        score_catalog(catalog, signals), size=size, min_size=min_size, pinned=pinned
    )
    assert board.ids[: len(pinned)] == pinned
    assert len(owners(board)) >= 1
    assert owner_note(board)
    # The division cap holds for the scored seats (pins were never capped).
    scored_seats = [s for s in board.seats[len(pinned) :] if not owns_correctness(s.persona)]
    assert max(Counter(s.division for s in scored_seats).values(), default=0) <= 2
    assert len(board.seats) <= (size + 1 if len(pinned) == size else size)


# --- briefs name the seated perspectives ---------------------------------------------------


def test_a_brief_names_the_other_seated_perspectives_and_no_others() -> None:
    board = select_board(score_catalog(SHIPPED, MIXES["workflow+docs+script"]), size=3)
    seats = [seat_from_persona(i, s.persona, "m") for i, s in enumerate(board.seats)]
    for seat in seats:
        brief = seat_brief(seat, seats)
        line = re.search(
            r"The other perspectives seated on this council, and no others: (.+?)\.", brief
        )
        assert line is not None
        listed = set(line.group(1).split("; "))
        expected = {f"{s.persona_name} ({s.division})" for s in seats if s is not seat}
        assert listed == expected
        unseated = {p.name for p in SHIPPED.personas.values()} - {s.persona_name for s in seats}
        assert not any(name in line.group(1) for name in unseated)
        assert "if it is not seated, cover it yourself" in brief
        assert "Never defer to a reviewer who is not seated." in brief
        # The lenses still end the brief (the fake models and the gate read them there).
        assert brief.rstrip().endswith(seat.lenses[-1])


async def test_the_engine_sends_each_seat_the_perspectives_actually_seated() -> None:
    fake = FakeProviders(CouncilScript())
    advisory = await Engine(fake, SHIPPED, InMemoryLedger()).deliberate(engine_request("board"))
    names = {s.persona_name for s in advisory.seats}
    assessed = fake.calls_for(tool="submit_assessment")
    assert len(assessed) == len(advisory.seats)
    for call in assessed:
        line = re.search(r"seated on this council, and no others: (.+?)\.\s", call.text)
        assert line is not None
        listed = {item.rsplit(" (", 1)[0] for item in line.group(1).split("; ")}
        assert listed == names - {call.persona}
    assert "Correctness Reviewer" in names


# --- quick asks no questions -------------------------------------------------------------


def test_the_assess_task_asks_for_questions_only_where_there_is_a_discussion() -> None:
    assert "questions for other members" in assess_task("t")
    quick = assess_task("t", questions=False)
    assert "questions for other members" not in quick
    assert "leave the questions list empty" in quick


async def test_quick_asks_no_questions_and_keeps_none() -> None:
    fake = FakeProviders(CouncilScript())  # its answers do carry a question
    advisory = await Engine(fake, SHIPPED, InMemoryLedger()).deliberate(engine_request("quick"))
    assessed = fake.calls_for(tool="submit_assessment")
    assert len(assessed) == 3
    for call in assessed:
        assert "questions for other members" not in call.text
        assert "leave the questions list empty" in call.text
    assert all(s.assessment is not None for s in advisory.seats)
    assert all(s.assessment.questions == [] for s in advisory.seats if s.assessment)
    assert "Correctness Reviewer" in {s.persona_name for s in advisory.seats}


async def test_board_still_asks_questions_for_its_discussion() -> None:
    fake = FakeProviders(CouncilScript())
    advisory = await Engine(fake, SHIPPED, InMemoryLedger()).deliberate(engine_request("board"))
    for call in fake.calls_for(tool="submit_assessment"):
        assert "questions for other members" in call.text
    assert any(s.assessment and s.assessment.questions for s in advisory.seats)
