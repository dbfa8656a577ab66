"""Persona outcomes say how they were scored, on SQLite files and on PostgreSQL.

A database the previous version left (at 0006, its persona outcomes scored by the old
rule: a seat without a vote held up only through an addressed finding) is upgraded on
connect: the records whose advisory and outcome are still stored are re-scored by
`bot.review.outcomes`' rule and say how, the rest keep their value and say "legacy". What
`council stats` (`usage_stats`) and board scoring (`persona_track_records`) read changes
accordingly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import create_async_engine

from bot.council.advisory import Advisory, MergedFinding, Resolution, SeatReport, SeatState
from bot.council.schemas import Assessment, AssessmentVerdict, Vote, VoteChoice
from bot.review.outcomes import score_seat
from bot.store import Database
from bot.store.db import alembic_config
from bot.store.deliberations import create_deliberation
from bot.store.history import usage_stats
from bot.store.outcomes import PersonaOutcome, persona_track_records, record_persona_outcomes
from bot.store.urls import async_url
from tests.support.postgres import PostgresServer, find_postgres

BACKENDS = ["sqlite", "postgresql"]
PREVIOUS = "0006_answer_sizes"
AT = datetime(2026, 12, 20, 12, 0, tzinfo=UTC)
TASK = "bug-fix"


@pytest.fixture(scope="session")
async def basis_pg() -> AsyncIterator[PostgresServer | str]:
    """This worker's PostgreSQL server, or why there is none (the PG cases then skip)."""
    server, reason = await find_postgres()
    yield server if server is not None else reason


@pytest.fixture(params=BACKENDS)
async def fresh_url(
    request: pytest.FixtureRequest, tmp_path: Path, basis_pg: PostgresServer | str
) -> AsyncIterator[str]:
    """An empty database that has never been migrated."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    if isinstance(basis_pg, str):
        pytest.skip(basis_pg)
    async with basis_pg.database("basis") as url:
        yield url.render_as_string(hide_password=False)


def seat(
    n: int,
    verdict: AssessmentVerdict,
    vote: VoteChoice | None = None,
    state: SeatState = SeatState.OK,
) -> SeatReport:
    return SeatReport(
        seat_id=f"seat-{n}",
        label=f"Member {'ABCDEFGH'[n]}",
        persona_id=f"persona-{n}",
        persona_name=f"Persona {n}",
        model="anthropic:claude-sonnet-5-5",
        state=state,
        assessment=Assessment(
            verdict=verdict,
            score=7,
            summary="Read it.",
            lens_scores=[],
            confidence=80,
        ),
        vote=Vote(vote=vote, confidence=0.8, rationale="Because.") if vote else None,
    )


def finding(title: str, *raised_by: str) -> MergedFinding:
    return MergedFinding(
        severity="major",
        path="app/retry.py",
        start_line=12,
        title=title,
        detail="It spins.",
        raised_by=list(raised_by),
        consensus=len(raised_by),
    )


def advisory(protocol: str, seats: list[SeatReport], findings: list[MergedFinding]) -> Advisory:
    return Advisory(
        deliberation_id="d",
        protocol=protocol,
        topic="Review this pull request",
        resolution=Resolution.APPROVED,
        seats=seats,
        findings=findings,
    )


ADDRESSED = "app/retry.py:12-12:Unbounded retry"
# quick, merged: an approving seat (the old rule: did not hold up), a seat with concerns
# whose finding was addressed, a rejecting seat, and a seat that timed out (no record).
QUICK = advisory(
    "quick",
    [
        seat(0, "APPROVE"),
        seat(1, "CONCERNS"),
        seat(2, "REJECT"),
        seat(3, "APPROVE", state=SeatState.TIMED_OUT).model_copy(update={"assessment": None}),
    ],
    [finding("Unbounded retry", "seat-1"), finding("Missing test", "seat-2")],
)
# board, not merged: votes decide; a seat whose vote was invalid (abstained) is scored by
# its assessment's verdict.
BOARD = advisory(
    "board",
    [
        seat(4, "APPROVE", "APPROVE"),
        seat(5, "CONCERNS", "REJECT"),
        seat(6, "CONCERNS", state=SeatState.ABSTAINED),
    ],
    [],
)


async def _at_previous_revision(url: str) -> dict[str, str]:
    """The database at 0006 with what the previous version stored; returns the ids."""
    engine = create_async_engine(async_url(url))

    def to_previous(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, PREVIOUS)

    stored = {
        # name: (advisory JSON, merged, addressed, [(persona, success by the old rule)])
        "quick": (
            QUICK.model_dump_json(),
            True,
            [ADDRESSED],
            [("persona-0", False), ("persona-1", True), ("persona-2", False)],
        ),
        "board": (
            BOARD.model_dump_json(),
            False,
            [],
            [("persona-4", False), ("persona-5", True), ("persona-6", False)],
        ),
        # Not re-scorable: an advisory that no longer parses; no advisory at all; an
        # advisory whose seats are not the personas recorded.
        "garbled": ('{"seats": [', True, [], [("persona-7", False)]),
        "missing": (None, True, [], [("persona-8", False)]),
        "other": (QUICK.model_dump_json(), True, [], [("persona-9", False)]),
    }
    ids: dict[str, str] = {}
    async with engine.begin() as connection:
        await connection.run_sync(to_previous)
        for n, (name, (advisory_json, merged, addressed, rows)) in enumerate(stored.items()):
            ids[name] = deliberation_id = f"d-{name}"
            await connection.execute(
                text(
                    "INSERT INTO deliberations (id, key, repo, pr_number, head_sha, trigger, "
                    "protocol, topic, status, cost_usd, created_at, updated_at, advisory_json) "
                    "VALUES (:id, :key, 'o/r', :pr, 'abc', 'command', 'quick', 't', "
                    "'completed', 0, :at, :at, :advisory)"
                ),
                {
                    "id": deliberation_id,
                    "key": f"job-{name}",
                    "pr": n + 1,
                    "at": AT,
                    "advisory": advisory_json,
                },
            )
            await connection.execute(
                text(
                    "INSERT INTO outcomes (deliberation_id, merged, closed_at, "
                    "addressed_findings, unaddressed_findings) "
                    "VALUES (:id, :merged, :at, :addressed, '[]')"
                ),
                {
                    "id": deliberation_id,
                    "merged": merged,
                    "at": AT,
                    "addressed": _json_list(addressed),
                },
            )
            for persona, success in rows:
                await connection.execute(
                    text(
                        "INSERT INTO persona_outcomes (deliberation_id, persona_id, task_type, "
                        "success, created_at) VALUES (:id, :persona, :task, :success, :at)"
                    ),
                    {
                        "id": deliberation_id,
                        "persona": persona,
                        "task": TASK,
                        "success": success,
                        "at": AT,
                    },
                )
    await engine.dispose()
    return ids


def _json_list(items: list[str]) -> str:
    return "[" + ", ".join(f'"{item}"' for item in items) + "]"


async def test_an_upgrade_re_scores_what_it_can_and_says_legacy_for_the_rest(
    fresh_url: str,
) -> None:
    await _at_previous_revision(fresh_url)

    async with Database(fresh_url) as db:
        assert await db.schema_revision() == "0007_outcome_basis"
        stats = await usage_stats(db)
        tracks = await persona_track_records(db, [TASK])

    scored = {p.persona_id: (p.held_up, p.outcomes, p.bases) for p in stats.personas}

    def one(basis: str, held_up: bool) -> tuple[int, int, dict[str, int]]:
        bases = {"vote": 0, "assessment": 0, "finding-addressed": 0, "legacy": 0}
        return (int(held_up), 1, bases | {basis: 1})

    assert {p: scored[p] for p in sorted(scored) if scored[p][1]} == {
        # quick, merged: the approving seat holds up now, by its assessment.
        "persona-0": one("assessment", True),
        "persona-1": one("finding-addressed", True),
        "persona-2": one("assessment", False),  # rejected a PR that merged
        # board, not merged: by the votes; the abstained seat by its CONCERNS.
        "persona-4": one("vote", False),
        "persona-5": one("vote", True),
        "persona-6": one("assessment", True),
        # Not re-scorable: the old value, "legacy".
        "persona-7": one("legacy", False),
        "persona-8": one("legacy", False),
        "persona-9": one("legacy", False),
    }
    # Board scoring's memory reads the re-scored records.
    rates = {t.persona_id: t.success_rate for t in tracks}
    assert rates["persona-0"] == 1.0 and rates["persona-6"] == 1.0 and rates["persona-4"] == 0


@pytest.mark.parametrize(
    ("stored", "merged", "addressed"),
    [
        (QUICK, True, {ADDRESSED}),
        (QUICK, False, set()),
        (BOARD, True, set()),
        (BOARD, False, {ADDRESSED}),
    ],
)
def test_the_migration_scores_as_the_live_rule_does(
    stored: Advisory, merged: bool, addressed: set[str]
) -> None:
    """The revision's frozen copy of the rule and `bot.review.outcomes` agree."""
    from importlib import import_module

    revision = import_module("bot.store.migrations.versions.0007_outcome_basis")
    live = [
        (s.persona_id, score.held_up, score.basis)
        for s in stored.valid_seats()
        if (score := score_seat(s, stored, merged, addressed)) is not None
    ]
    frozen = revision.score(stored.model_dump_json(), merged, _json_list(sorted(addressed)))
    assert frozen == live
    assert len(live) == len(stored.valid_seats()) >= 3


async def test_new_records_keep_their_basis_and_a_downgrade_drops_it(fresh_url: str) -> None:
    async with Database(fresh_url) as db:
        record = await create_deliberation(
            db,
            key="job-new",
            repo="o/r",
            pr_number=9,
            head_sha="abc",
            trigger="push",
            protocol="quick",
            topic="t",
        )
        outcome = PersonaOutcome(
            persona_id="persona-new", task_type=TASK, success=True, basis="assessment"
        )
        await record_persona_outcomes(db, record.id, [outcome])
        (stats,) = (await usage_stats(db)).personas
        assert stats.bases["assessment"] == 1 and stats.held_up == 1

    engine = create_async_engine(async_url(fresh_url))

    def down(connection: Connection) -> list[str]:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.downgrade(config, PREVIOUS)
        found = connection.execute(text("SELECT * FROM persona_outcomes")).keys()
        return list(found)

    async with engine.begin() as connection:
        columns = await connection.run_sync(down)
    await engine.dispose()
    assert "basis" not in columns and "success" in columns
    async with Database(fresh_url) as db:  # and up again
        assert await db.schema_revision() == "0007_outcome_basis"
        (stats,) = (await usage_stats(db)).personas
        # Its deliberation has no outcome row: nothing to re-score from, so "legacy".
        assert stats.bases["legacy"] == 1 and stats.held_up == 1
