"""Findings by pull request over its reviews, on SQLite and PostgreSQL: a new fingerprint
is open, a known one keeps its status (fixed raised again is open again; dismissed stays
dismissed), marks never override a person's dismissal, and inline posts are recorded."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.review.fingerprints import fingerprint, normalised_title
from bot.store import Database
from bot.store.findings import (
    RaisedFinding,
    dismissed_fingerprints,
    mark,
    posted,
    pr_findings,
    record_raised,
)
from tests.support.postgres import PostgresServer, find_postgres

REPO = "octo/widgets"


@pytest.fixture(scope="session")
async def findings_pg() -> AsyncIterator[PostgresServer | str]:
    server, reason = await find_postgres()
    yield reason if server is None else server


@pytest.fixture(params=["sqlite", "postgresql"])
async def db(
    request: pytest.FixtureRequest, tmp_path: Path, findings_pg: PostgresServer | str
) -> AsyncIterator[Database]:
    if request.param == "sqlite":
        async with Database(f"sqlite:///{tmp_path / 'council.db'}") as database:
            yield database
        return
    if isinstance(findings_pg, str):
        pytest.skip(findings_pg)
    async with findings_pg.database("findings") as url, Database(url) as database:
        yield database


def raised(title: str, line: int | None = 12, code: str = "while True:") -> RaisedFinding:
    return RaisedFinding(
        fingerprint=fingerprint("app/retry.py", title, code),
        path="app/retry.py",
        line=line,
        title=title,
        severity="major",
    )


def test_a_fingerprint_ignores_wording_noise_and_line_moves_but_not_the_code() -> None:
    a = fingerprint("app/retry.py", "Unbounded retry loop!", "    while True:  ")
    assert a == fingerprint("app/retry.py", "unbounded  retry-loop", "while True:")
    assert a != fingerprint("app/retry.py", "Unbounded retry loop", "for _ in range(3):")
    assert a != fingerprint("app/other.py", "Unbounded retry loop", "while True:")
    assert normalised_title("Race: in `cache.get()`") == "race in cache get"


async def test_raised_then_fixed_then_raised_again_then_dismissed(db: Database) -> None:
    loop = raised("Unbounded retry loop")
    await record_raised(db, REPO, 7, "d-1", "a" * 40, [loop, raised("Missing test", None, "")])
    found = {f.title: f for f in await pr_findings(db, REPO, 7)}
    assert {t: f.status for t, f in found.items()} == {
        "Unbounded retry loop": "open",
        "Missing test": "open",
    }
    # Seen again on the next review (its line moved): still one row, still open.
    await record_raised(db, REPO, 7, "d-2", "b" * 40, [loop.model_copy(update={"line": 14})])
    (row,) = [f for f in await pr_findings(db, REPO, 7) if f.fingerprint == loop.fingerprint]
    assert (row.status, row.line, row.first_deliberation_id, row.last_deliberation_id) == (
        "open",
        14,
        "d-1",
        "d-2",
    )
    assert await mark(db, REPO, 7, [loop.fingerprint], "fixed", fixed_sha="c" * 40) == 1
    (fixed,) = await pr_findings(db, REPO, 7, status="fixed")
    assert fixed.fixed_sha == "c" * 40
    # Raised again by a later review: open again.
    await record_raised(db, REPO, 7, "d-3", "d" * 40, [loop])
    assert [f.title for f in await pr_findings(db, REPO, 7, status="open")] == [
        "Unbounded retry loop",
        "Missing test",
    ]
    # A person dismisses it: it stays dismissed whatever a review raises or marks.
    assert await mark(db, REPO, 7, [loop.fingerprint], "dismissed") == 1
    await record_raised(db, REPO, 7, "d-4", "e" * 40, [loop])
    assert await mark(db, REPO, 7, [loop.fingerprint], "open") == 0
    assert await dismissed_fingerprints(db, REPO, 7) == {loop.fingerprint}
    # Another pull request knows nothing of it.
    assert await pr_findings(db, REPO, 8) == []


async def test_an_inline_post_is_recorded(db: Database) -> None:
    loop = raised("Unbounded retry loop")
    await record_raised(db, REPO, 7, "d-1", None, [loop])
    await posted(db, REPO, 7, loop.fingerprint, review_comment_id=2**40, thread_node_id="PRRT_x")
    (row,) = await pr_findings(db, REPO, 7)
    assert (row.review_comment_id, row.thread_node_id) == (2**40, "PRRT_x")
