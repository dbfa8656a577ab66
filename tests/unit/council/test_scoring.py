"""Board scoring: hand-computed layers, board rules, properties over generated catalogs."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.council.personas import Catalog, Persona, load_catalog
from bot.council.scoring import (
    PersonaRecord,
    ReviewSignals,
    ScoredPersona,
    explain,
    memory_score,
    normalize,
    review_task_type,
    score_catalog,
    signal_concepts,
    signal_terms,
)
from bot.council.selection import BoardError, select_board


def persona(
    persona_id: str,
    division: str,
    task_types: tuple[str, ...] = ("general",),
    *,
    description: str = "Reviews things.",
    review_strengths: tuple[str, ...] = ("clarity",),
    languages: tuple[str, ...] = (),
    frameworks: tuple[str, ...] = (),
    artifact_types: tuple[str, ...] = (),
) -> Persona:
    return Persona(
        id=persona_id,
        name=persona_id.title(),
        division=division,
        description=description,
        task_types=task_types,
        review_strengths=review_strengths,
        languages=languages,
        frameworks=frameworks,
        artifact_types=artifact_types,
        text=f"You are {persona_id}.",
        source=f"{persona_id}.md",
    )


SEC = persona(
    "sec",
    "security",
    ("security", "injection"),
    description="Finds injection flaws in web handlers.",
    review_strengths=("input validation", "secrets handling", "auth checks"),
    languages=("python",),
    frameworks=("flask",),
    artifact_types=("openapi",),
)
PERF = persona(
    "perf",
    "performance",
    ("latency", "caching"),
    description="Measures cost at scale.",
    review_strengths=("complexity", "memory use", "cache invalidation"),
    languages=("go",),
)
DOCS = persona(
    "docs",
    "documentation",
    ("documentation",),
    description="Reviews READMEs.",
    review_strengths=("accuracy", "clarity", "examples"),
    languages=("python",),
)
SMALL = Catalog(personas={p.id: p for p in (DOCS, PERF, SEC)})

SIGNALS = ReviewSignals(
    topic="Check the JWT latency",
    languages=("Python", "go"),
    frameworks=("flask",),
    areas=("security",),
    artifact_types=("openapi-spec",),
    dominant_area="security",
)
RECORDS = (
    PersonaRecord(
        persona_id="sec", task_type="security", outcomes=4, success_rate=0.5, top_for_task_type=True
    ),
    PersonaRecord(persona_id="docs", task_type="security", outcomes=9, success_rate=1.0),
    PersonaRecord(persona_id="perf", task_type="performance", outcomes=9, success_rate=1.0),
)


NO_OWNER_NOTE = (
    "No persona in the catalog owns the correctness of the changed code (division "
    "'correctness' or task type 'correctness'); the board has no correctness owner."
)


def by_id(scored: list[ScoredPersona]) -> dict[str, ScoredPersona]:
    return {s.id: s for s in scored}


# --- normalization -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "concept"),
    [
        ("latency", "performance"),
        ("Throughput", "performance"),
        ("authn", "security"),
        ("authz", "security"),
        ("auth", "security"),
        ("JWT", "security"),
        ("oauth", "security"),
        ("sql", "database"),
        ("schema", "database"),
        ("migration", "database"),
        ("docs-only", "documentation"),
        ("docs only", "documentation"),
        ("tests_only", "testing"),
        ("race condition", "concurrency"),
        ("redis", "redis"),
    ],
)
def test_concept_normalization(term: str, concept: str) -> None:
    assert normalize(term) == concept


def test_signal_terms_and_concepts_are_sorted_and_deduplicated() -> None:
    assert signal_terms(SIGNALS) == ["jwt", "latency", "openapi-spec", "security"]
    assert signal_concepts(SIGNALS) == ["openapi-spec", "performance", "security"]
    assert review_task_type(SIGNALS) == "security"
    assert review_task_type(ReviewSignals()) == "general"
    sql = ReviewSignals(languages=("SQL",), frameworks=("react",))
    assert signal_concepts(sql) == ["database", "frontend"]


# --- the four layers, by hand ----------------------------------------------------------


def test_layers_hand_computed_for_the_security_persona() -> None:
    sec = by_id(score_catalog(SMALL, SIGNALS, RECORDS))["sec"]
    # semantic: 'security' is a task type (+4); 'performance', 'openapi-spec' match nothing.
    assert sec.semantic == 4
    # heuristic: term 'security' exact task type (+3); division fits dominant 'security' (+2).
    assert sec.heuristic == 5
    # metadata: python +3 ('go' no match), flask +3, 'openapi-spec' partly 'openapi' +1,
    # lens 'secrets handling'/'auth checks' covers 'security' +2.
    assert sec.metadata == 9
    # memory: 0.5 * 3 * min(4/5, 1) + 1 (top for the task type) = 2.2
    assert sec.memory == pytest.approx(2.2)
    assert sec.total == pytest.approx(20.2)


def test_layers_hand_computed_for_the_performance_persona() -> None:
    perf = by_id(score_catalog(SMALL, SIGNALS, RECORDS))["perf"]
    # semantic: 'latency' (topic) -> performance, and task type latency -> performance: +4.
    assert perf.semantic == 4
    # heuristic: raw term 'latency' is a task type as written: +3; division not security.
    assert perf.heuristic == 3
    # metadata: go +3; lens 'memory use' names memory -> performance: +2.
    assert perf.metadata == 5
    # memory: its record is for 'performance', and this change's task type is 'security'.
    assert perf.memory == 0
    assert perf.total == 12


def test_metadata_and_memory_count_only_with_a_semantic_or_heuristic_match() -> None:
    docs = by_id(score_catalog(SMALL, SIGNALS, RECORDS))["docs"]
    # It lists python (+3) and has a perfect record on 'security', but nothing it reviews
    # is in the change: both are gated to zero.
    assert (docs.semantic, docs.heuristic, docs.metadata, docs.memory) == (0, 0, 0, 0)
    assert docs.total == 0
    assert docs.affinity == 3
    assert "not counted" in docs.reasons[-1]


def test_partial_and_specialty_matches() -> None:
    api = persona("api", "api-design", ("public-api",), description="Guards REST contracts.")
    signals = ReviewSignals(keywords=("api", "contracts"))
    scored = by_id(score_catalog([api], signals))["api"]
    # semantic: 'api' -> public-api exact (+4); 'contracts' is in its specialty text (+1).
    assert scored.semantic == 5
    # heuristic: 'api' partly task type 'public-api' (+1); 'contracts' partly in specialty (+1).
    assert scored.heuristic == 2


def test_memory_formula() -> None:
    def record(outcomes: int, rate: float, top: bool = False) -> PersonaRecord:
        return PersonaRecord(
            persona_id="p",
            task_type="Latency",
            outcomes=outcomes,
            success_rate=rate,
            top_for_task_type=top,
        )

    assert memory_score("p", "performance", []) == 0
    assert memory_score("p", "performance", [record(10, 1.0, top=True)]) == 4.0
    assert memory_score("p", "performance", [record(2, 0.5)]) == pytest.approx(0.6)
    assert memory_score("p", "performance", [record(0, 1.0)]) == 0
    assert memory_score("other", "performance", [record(10, 1.0)]) == 0
    assert memory_score("p", "security", [record(10, 1.0)]) == 0
    # The record with the most evidence wins when several are sent.
    assert memory_score("p", "performance", [record(1, 1.0), record(5, 0.2)]) == pytest.approx(0.6)


def test_ranking_is_by_total_then_id() -> None:
    twins = [persona(pid, "testing", ("testing",)) for pid in ("b", "c", "a")]
    scored = score_catalog(twins, ReviewSignals(areas=("tests-only",)))
    assert [s.id for s in scored] == ["a", "b", "c"]
    assert len({s.total for s in scored}) == 1 and scored[0].total > 0


def test_explain_lists_each_persona_with_its_layers() -> None:
    lines = explain(score_catalog(SMALL, SIGNALS, RECORDS), details=True)
    assert lines[0].split()[:2] == ["1.", "sec"]
    assert "total 20.20 = semantic 4 + heuristic 5 + metadata 9 + memory 2.20" in lines[0]
    assert any("'security' is a task type" in line for line in lines)
    assert [line.split()[1] for line in lines if line.split()[0].endswith(".")] == [
        "sec",
        "perf",
        "docs",
    ]


# --- seating -----------------------------------------------------------------------------


def scored_board(personas: list[Persona], signals: ReviewSignals) -> list[ScoredPersona]:
    return score_catalog(personas, signals)


def test_at_most_two_per_division_and_the_note_says_who_was_passed_over() -> None:
    personas = [persona(f"sec{i}", "security", ("security",)) for i in range(4)]
    personas.append(persona("perf", "performance", ("performance",)))
    signals = ReviewSignals(areas=("security", "performance"), dominant_area="security")
    board = select_board(score_catalog(personas, signals))
    assert board.ids == ["sec0", "sec1", "perf"]
    # The last note: these generated personas have no correctness owner (see the
    # correctness-owner tests below), and the board says so.
    assert board.notes == (
        "At most 2 seats per division; passed over: sec2, sec3.",
        NO_OWNER_NOTE,
    )


def test_too_few_above_zero_fills_from_other_divisions_and_says_so() -> None:
    personas = [
        persona("hit", "security", ("security",)),
        persona("same-div", "security", ("x",)),
        persona("arch", "architecture", ("x",)),
        persona("ux", "frontend", ("x",), languages=("python",)),
        persona("zz", "product", ("x",)),
    ]
    signals = ReviewSignals(areas=("security",), languages=("python",))
    board = select_board(score_catalog(personas, signals))
    # New divisions first; among zero scores, language fit then generalist lenses first.
    assert board.ids == ["hit", "ux", "arch"]
    assert board.notes == (
        NO_OWNER_NOTE,
        "Only 1 persona(s) scored above zero (minimum board: 3); "
        "filled from other divisions: ux, arch.",
    )


def test_fill_uses_same_division_only_when_no_other_is_left() -> None:
    personas = [persona("a", "security", ("security",)), persona("b", "security", ("x",))]
    board = select_board(score_catalog(personas, ReviewSignals(areas=("security",))))
    assert board.ids == ["a", "b"]


def test_division_cap_is_relaxed_only_to_reach_two_seats() -> None:
    personas = [persona("a", "security", ("security",)), persona("b", "security", ("x",))]
    board = select_board(
        score_catalog(personas, ReviewSignals(areas=("security",))), max_per_division=1
    )
    assert board.ids == ["a", "b"]
    assert board.notes[-1] == "Division cap relaxed to reach 2 seats: b."


def test_pinned_seats_come_first_unscored_and_count_toward_size() -> None:
    catalog = load_catalog()
    signals = ReviewSignals(areas=("security",), dominant_area="security")
    board = select_board(
        score_catalog(catalog, signals), size=3, pinned=["product-reviewer", "docs-reviewer"]
    )
    assert board.ids[:2] == ["product-reviewer", "docs-reviewer"]
    # The one seat left is the correctness owner (it was appsec-reviewer, the top score,
    # before every board had to have one): neither pinned seat owns correctness.
    assert board.ids[2] == "correctness-reviewer"
    assert (
        board.notes[0] == "Pinned by configuration (not scored): product-reviewer, docs-reviewer."
    )
    assert "takes the place of appsec-reviewer" in board.notes[-1]


def test_unknown_pinned_id_is_a_clear_error() -> None:
    with pytest.raises(BoardError, match="pinned persona\\(s\\) not in the catalog: nobody"):
        select_board(score_catalog(SMALL, SIGNALS), pinned=["sec", "nobody"])


def test_more_pinned_than_seats_is_an_error() -> None:
    with pytest.raises(BoardError, match="3 pinned personas do not fit a board of 2"):
        select_board(score_catalog(SMALL, SIGNALS), size=2, pinned=["sec", "perf", "docs"])


def test_a_catalog_of_one_cannot_seat_a_board() -> None:
    with pytest.raises(BoardError, match="the catalog has 1 persona"):
        select_board(score_catalog([SEC], SIGNALS))
    with pytest.raises(BoardError, match="at least 2"):
        select_board(score_catalog(SMALL, SIGNALS), size=1)


# --- the shipped catalog on typical changes ------------------------------------------


@pytest.fixture(scope="module")
def shipped() -> Catalog:
    return load_catalog()


def test_security_heavy_diff_seats_the_security_persona_first(shipped: Catalog) -> None:
    signals = ReviewSignals(
        topic="Review this pull request",
        languages=("python",),
        frameworks=("fastapi",),
        areas=("security", "public-api"),
        keywords=("jwt", "authentication", "session"),
        dominant_area="security",
    )
    board = select_board(score_catalog(shipped, signals))
    assert board.ids[0] == "appsec-reviewer"
    assert Counter(s.division for s in board.seats)["security"] <= 2
    assert 3 <= len(board.seats) <= 5


def test_docs_only_change_seats_documentation_and_maintainability(shipped: Catalog) -> None:
    signals = ReviewSignals(
        topic="Review this pull request",
        areas=("docs-only",),
        artifact_types=("markdown", "readme"),
        dominant_area="docs-only",
    )
    board = select_board(score_catalog(shipped, signals))
    assert board.ids[:2] == ["docs-reviewer", "maintainability-reviewer"]
    assert "appsec-reviewer" not in board.ids


def test_migration_seats_the_data_division(shipped: Catalog) -> None:
    signals = ReviewSignals(
        languages=("python",),
        frameworks=("alembic", "sqlalchemy"),
        areas=("database",),
        artifact_types=("migration",),
        dominant_area="database",
    )
    board = select_board(score_catalog(shipped, signals))
    assert board.ids[:2] == ["migration-safety", "database-engineer"]


def test_choice_topic_brings_the_devils_advocate(shipped: Catalog) -> None:
    signals = ReviewSignals(topic="Should this cache live in Redis? Latency matters.")
    board = select_board(score_catalog(shipped, signals))
    assert {"performance-engineer", "devils-advocate"} <= set(board.ids)


# --- properties over generated catalogs ------------------------------------------------

VOCABULARY = [
    "security", "jwt", "latency", "performance", "database", "migration", "api",
    "public-api", "testing", "docs-only", "frontend", "ci-cd", "dependencies", "redis",
    "concurrency", "python", "react", "openapi", "dockerfile", "workflow",
]  # fmt: skip
DIVISIONS = ["security", "performance", "data", "testing", "frontend", "ops"]
terms = st.lists(st.sampled_from(VOCABULARY), max_size=4, unique=True).map(tuple)


@st.composite
def personas(draw: st.DrawFn) -> list[Persona]:
    ids = draw(st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), max_size=12))
    made = []
    for persona_id in dict.fromkeys(ids):
        made.append(
            persona(
                persona_id,
                draw(st.sampled_from(DIVISIONS)),
                draw(terms.filter(bool)),
                review_strengths=draw(terms.filter(bool)),
                languages=draw(st.lists(st.sampled_from(["python", "go", "sql"])).map(tuple)),
                artifact_types=draw(terms),
            )
        )
    return made


signals_strategy = st.builds(
    ReviewSignals,
    topic=st.sampled_from(["", "Review this", "Is the JWT latency ok?", "should we cache?"]),
    languages=st.lists(st.sampled_from(["python", "go", "sql"]), max_size=2).map(tuple),
    areas=terms,
    artifact_types=terms,
    keywords=terms,
    dominant_area=st.none() | st.sampled_from(VOCABULARY),
)


@settings(max_examples=150, deadline=None)
@given(
    catalog=personas(),
    signals=signals_strategy,
    size=st.integers(2, 6),
    min_size=st.integers(0, 6),
    data=st.data(),
)
def test_board_properties(
    catalog: list[Persona],
    signals: ReviewSignals,
    size: int,
    min_size: int,
    data: st.DataObject,
) -> None:
    scored = score_catalog(catalog, signals)
    if len(catalog) < 2:
        with pytest.raises(BoardError):
            select_board(scored, size=size, min_size=min_size)
        return
    board = select_board(scored, size=size, min_size=min_size)

    # Determinism: the same input in any order gives the same board.
    shuffled = data.draw(st.permutations(catalog))
    again = select_board(score_catalog(shuffled, signals), size=size, min_size=min_size)
    assert again == board
    # Size bounds, no repeats, and never more than 2 from one division.
    assert 2 <= len(board.seats) <= size
    assert len(set(board.ids)) == len(board.ids)
    assert max(Counter(s.division for s in board.seats).values()) <= 2
    # Below the floor (min_size, as far as size and the division cap allow) it was filled,
    # and the notes say so.
    room = sum(min(n, 2) for n in Counter(p.division for p in catalog).values())
    floor = min(max(min_size, 2), size, max(room, 2))
    assert len(board.seats) >= floor
    if any(s.total == 0 for s in board.seats):
        assert any("filled from other divisions" in note for note in board.notes)
    # Seated personas above zero outrank every unseated one that had room in its division.
    seated = set(board.ids)
    for left_out in (s for s in scored if s.id not in seated and s.total > 0):
        division_count = sum(1 for s in board.seats if s.division == left_out.division)
        assert division_count == 2 or len(board.seats) == size


@settings(max_examples=100, deadline=None)
@given(catalog=personas(), signals=signals_strategy, data=st.data())
def test_pinned_seats_always_come_first(
    catalog: list[Persona], signals: ReviewSignals, data: st.DataObject
) -> None:
    if len(catalog) < 2:
        return
    ids = [p.id for p in catalog]
    pinned = data.draw(st.lists(st.sampled_from(ids), max_size=3, unique=True))
    board = select_board(score_catalog(catalog, signals), size=5, pinned=pinned)
    assert board.ids[: len(pinned)] == pinned
    assert 2 <= len(board.seats) <= 5


@settings(max_examples=100, deadline=None)
@given(catalog=personas(), signals=signals_strategy)
def test_scores_are_consistent(catalog: list[Persona], signals: ReviewSignals) -> None:
    for s in score_catalog(catalog, signals):
        assert s.total == pytest.approx(s.semantic + s.heuristic + s.metadata + s.memory)
        assert min(s.semantic, s.heuristic, s.metadata, s.memory) >= 0
        if s.semantic + s.heuristic == 0:
            assert s.total == 0
