"""`council history`, `council show` and `council stats` on a store of real deliberations.

The store is built as the App builds it: the engine run in-process against the fake model
server on a SQLite store through `SqlLedger`, the advisory stored with `set_status`, a PR's
close recorded with `record_outcome` and `record_persona_outcomes`, a re-review's fixed
finding in `pr_findings`. The commands are then run as a person runs them.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from bot.cli import app
from bot.council.advisory import Advisory
from bot.council.engine import Engine
from bot.council.personas import load_catalog
from bot.providers import ProviderRegistry
from bot.review.outcomes import record_pr_outcome
from bot.store.db import Database
from bot.store.deliberations import (
    DeliberationStatus,
    create_deliberation,
    get_deliberation,
    set_status,
)
from bot.store.findings import RaisedFinding, mark, record_raised
from bot.store.history import deliberation_history, load_transcript, usage_stats
from bot.store.ledger import SqlLedger
from bot.store.outcomes import PersonaOutcome, record_outcome, record_persona_outcomes
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer
from tests.unit.council.test_engine import request
from tests.unit.providers.test_providers import make_settings

HOSTILE = "<script>alert(1)</script> retry loop"
FINDING = {
    "severity": "major",
    "path": "app/retry.py",
    "start_line": 12,
    "end_line": 12,
    "title": HOSTILE,
    "detail": "The loop never stops & <b>spins</b>.",
    "suggestion": "Bound it.",
}
TODAY = datetime.now(UTC).date().isoformat()


class EveryPersona(dict[str, list[dict[str, Any]]]):
    """CouncilScript's findings by persona: every seat raises FINDING."""

    def get(self, key: str, default: Any = None) -> list[dict[str, Any]]:
        return [dict(FINDING)]


@dataclass(frozen=True)
class Store:
    url: str
    board_id: str  # o/r#1, board, closed merged, its finding addressed
    quick_id: str  # o/other#2, quick, still open; its finding fixed by a re-review
    running_id: str  # o/r#3, running, nothing stored yet
    board: Advisory
    quick: Advisory


async def _deliberate(
    db: Database, registry: ProviderRegistry, *, key: str, repo: str, pr: int, protocol: str
) -> tuple[str, Advisory]:
    record = await create_deliberation(
        db,
        key=key,
        repo=repo,
        pr_number=pr,
        head_sha="0123456789abcdef0123",
        trigger="command",
        protocol=protocol,
        topic="Review this pull request",
    )
    engine = Engine(registry, load_catalog(), SqlLedger(db))
    advisory = await engine.deliberate(request(protocol, did=record.id))
    await set_status(
        db,
        record.id,
        DeliberationStatus.COMPLETED,
        resolution=advisory.resolution.value,
        conclusion="neutral",
        advisory_json=advisory.model_dump_json(),
        cost_usd=advisory.usage.cost_usd,
    )
    return record.id, advisory


async def _build(models: FakeModelServer, path: Path) -> Store:
    url = f"sqlite+aiosqlite:///{path}"
    registry = ProviderRegistry(make_settings(models, max_retries=0))
    db = Database(url)
    try:
        await db.connect()
        board_id, board = await _deliberate(
            db, registry, key="job-1", repo="o/r", pr=1, protocol="board"
        )
        quick_id, quick = await _deliberate(
            db, registry, key="job-2", repo="o/other", pr=2, protocol="quick"
        )
        running = await create_deliberation(
            db,
            key="job-3",
            repo="o/r",
            pr_number=3,
            head_sha="fedcba",
            trigger="label",
            protocol="board",
            topic="t",
        )
        # o/r#1 closed, merged, its finding addressed (bot.review.outcomes' key).
        key = f"{FINDING['path']}:12-12:{HOSTILE}"
        await record_outcome(db, board_id, True, [key], [])
        await record_persona_outcomes(
            db,
            board_id,
            [PersonaOutcome(persona_id=s.persona_id, task_type="general", success=True,
                            basis="finding-addressed")
             for s in board.valid_seats()],
        )  # fmt: skip
        # o/other#2: a re-review marked its finding fixed.
        raised = RaisedFinding(
            fingerprint="f" * 16, path="app/retry.py", line=12, title=HOSTILE, severity="major"
        )
        await record_raised(db, "o/other", 2, quick_id, "0123", [raised])
        await mark(db, "o/other", 2, ["f" * 16], "fixed", fixed_sha="4567")
    finally:
        await registry.aclose()
        await db.dispose()
    return Store(url, board_id, quick_id, running.id, board, quick)


@pytest.fixture
def store(models: FakeModelServer, tmp_path: Path) -> Store:
    models.default(CouncilScript(findings=EveryPersona()).reply)
    return asyncio.run(_build(models, tmp_path / "council.db"))


def council(store: Store, *args: str) -> Any:
    result = CliRunner().invoke(app, list(args), env={"DATABASE_URL": store.url})
    return result


def test_history_lists_the_deliberations_newest_first(store: Store) -> None:
    done = council(store, "history", "--json")
    assert done.exit_code == 0, done.output
    listed = json.loads(done.stdout)
    assert [r["id"] for r in listed] == [store.running_id, store.quick_id, store.board_id]
    assert "advisory_json" not in listed[0]
    assert listed[2]["repo"] == "o/r" and listed[2]["pr_number"] == 1
    assert listed[2]["resolution"] == store.board.resolution.value

    only = json.loads(council(store, "history", "--repo", "o/r", "--pr", "1", "--json").stdout)
    assert [r["id"] for r in only] == [store.board_id]
    assert len(json.loads(council(store, "history", "--limit", "2", "--json").stdout)) == 2

    table = council(store, "history")
    assert table.exit_code == 0
    assert store.board_id in table.stdout and "o/r#1" in table.stdout
    assert "o/other#2" in table.stdout and "quick" in table.stdout
    assert "0123456789ab" in table.stdout and "running" in table.stdout


def test_show_html_is_the_whole_record_escaped(store: Store) -> None:
    done = council(store, "show", store.board_id, "--format", "html")
    assert done.exit_code == 0, done.output
    page = done.stdout
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for seat in store.board.seats:
        assert seat.persona_id in page and seat.model in page
    assert "app/retry.py:12" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page and "<b>spins" not in page
    assert "&lt;b&gt;spins&lt;/b&gt;" in page
    for section in ('id="seats"', 'id="assessments"', 'id="votes"', 'id="synthesis"'):
        assert section in page
    assert 'id="discussion"' in page  # the board had a discussion round
    assert "seat_returned" in page and "synthesized" in page  # the ledger's timings
    assert "http://" not in page and "https://" not in page  # nothing loaded from elsewhere


def test_show_json_has_the_advisory_the_record_and_the_events(store: Store) -> None:
    done = council(store, "show", store.board_id, "--format", "json")
    assert done.exit_code == 0, done.output
    shown = json.loads(done.stdout)
    assert shown["record"]["id"] == store.board_id
    assert Advisory.model_validate(shown["advisory"]) == store.board
    kinds = [e["kind"] for e in shown["events"]]
    assert kinds[0] == "convened" and "synthesized" in kinds
    assert [e["seq"] for e in shown["events"]] == list(range(len(kinds)))


def test_show_markdown_is_the_comment_and_a_running_one_has_none(store: Store) -> None:
    done = council(store, "show", store.board_id)
    assert done.exit_code == 0, done.output
    assert "<!-- " in done.stdout  # the sticky comment's marker
    assert "app/retry.py" in done.stdout
    running = council(store, "show", store.running_id)
    assert running.exit_code == 2 and "no advisory" in running.stderr
    html = council(store, "show", store.running_id, "--format", "html")
    assert html.exit_code == 0 and "No advisory is stored" in html.stdout


def test_show_an_unknown_id_is_a_usage_error(store: Store) -> None:
    done = council(store, "show", "no-such-id", "--format", "json")
    assert done.exit_code == 2
    assert "no deliberation with id 'no-such-id'" in done.stderr
    assert done.stdout == ""


def _seat_personas(advisory: Advisory) -> set[str]:
    return {s.persona_id for s in advisory.valid_seats()}


def test_stats_json_counts_personas_protocols_and_cost_by_day(store: Store) -> None:
    done = council(store, "stats", "--json")
    assert done.exit_code == 0, done.output
    stats = json.loads(done.stdout)
    assert stats["deliberations"] == 3
    assert stats["protocols"] == {"board": 2, "quick": 1}
    assert stats["resolutions"][store.board.resolution.value] >= 1
    assert stats["resolutions"]["running"] == 1
    personas = {p["persona_id"]: p for p in stats["personas"]}
    board, quick = _seat_personas(store.board), _seat_personas(store.quick)
    assert set(personas) == board | quick
    for persona, p in personas.items():
        assert p["reviews"] == (persona in board) + (persona in quick)
        # Only o/r#1 closed (merged); its finding and the fixed one on o/other#2 count.
        assert p["closed"] == p["merged"] == (persona in board)
        assert p["findings_raised"] == p["reviews"]
        assert p["findings_addressed"] == p["reviews"]
        assert (p["outcomes"], p["held_up"]) == ((1, 1) if persona in board else (0, 0))
    total = store.board.usage.cost_usd + store.quick.usage.cost_usd
    assert total > 0
    assert [d["day"] for d in stats["cost_by_day"]] == [TODAY]
    assert stats["cost_by_day"][0]["cost_usd"] == pytest.approx(total, rel=1e-6)
    # All three started today, the running one too (it paid nothing yet).
    assert stats["cost_by_day"][0]["deliberations"] == 3
    by_repo = {r["repo"]: r["cost_usd"] for r in stats["cost_by_repo"]}
    assert by_repo["o/r"] == pytest.approx(store.board.usage.cost_usd, rel=1e-6)
    assert by_repo["o/other"] == pytest.approx(store.quick.usage.cost_usd, rel=1e-6)
    assert stats["total_cost_usd"] == pytest.approx(total, rel=1e-6)


def yesterday_now() -> datetime:
    """This time yesterday, naive UTC, as SQLite stores it (`bot.store.models.UtcDateTime`)."""
    return datetime.now(UTC).replace(tzinfo=None) - timedelta(days=1)


def _close_quick_started_yesterday(store: Store) -> None:
    """o/other#2 merges as reviewed (no push after the advice), through the outcome path a
    closed PR takes; and its deliberation started before midnight: its answers were paid
    today (the ledger's), the day before it started on has no cost."""

    async def change() -> None:
        db = Database(store.url)
        try:
            await db.connect()
            record = await get_deliberation(db, store.quick_id)
            assert record is not None
            await record_pr_outcome(db, record, {}, merged=True)
            async with db.session() as session:
                await session.execute(
                    text("UPDATE deliberations SET created_at = :at WHERE id = :id"),
                    {"at": yesterday_now(), "id": store.quick_id},
                )
        finally:
            await db.dispose()

    asyncio.run(change())


def test_stats_say_how_each_outcome_was_scored_and_its_tables_agree(store: Store) -> None:
    _close_quick_started_yesterday(store)
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()

    stats = json.loads(council(store, "stats", "--json").stdout)

    board, quick = _seat_personas(store.board), _seat_personas(store.quick)
    assert all(s.assessment and s.assessment.verdict == "APPROVE" for s in store.quick.seats)
    personas = {p["persona_id"]: p for p in stats["personas"]}
    for persona, p in personas.items():
        # o/r#1's seats held up by their addressed finding; o/other#2's (quick, no vote,
        # approving, merged) by their assessment.
        assert p["bases"] == {
            "vote": 0,
            "assessment": int(persona in quick),
            "finding-addressed": int(persona in board),
            "legacy": 0,
        }
        assert p["outcomes"] == p["held_up"] == sum(p["bases"].values())
    # The day and repository tables cover the same deliberations and the same money.
    by_day, by_repo = stats["cost_by_day"], stats["cost_by_repo"]
    assert sum(d["deliberations"] for d in by_day) == stats["deliberations"] == 3
    assert sum(r["deliberations"] for r in by_repo) == stats["deliberations"]
    assert sum(d["cost_usd"] for d in by_day) == pytest.approx(stats["total_cost_usd"])
    assert sum(r["cost_usd"] for r in by_repo) == pytest.approx(stats["total_cost_usd"])
    assert [(d["day"], d["deliberations"]) for d in by_day] == [(yesterday, 1), (TODAY, 2)]
    assert by_day[0]["cost_usd"] == 0 and by_day[1]["cost_usd"] > 0

    table = council(store, "stats")
    assert table.exit_code == 0, table.output
    cells = [(line.split(), line) for line in table.stdout.splitlines()]
    rows = {words[1]: line for words, line in cells if len(words) > 1 and words[1] in personas}
    assert set(rows) == set(personas)
    for persona, line in rows.items():
        finding_addressed = int(persona in board)
        assert f"vote 0, assessment {int(persona in quick)}, " in line
        assert f"finding addressed {finding_addressed}, legacy 0" in line
    assert re.search(rf"{yesterday} +│ +\$0\.0000 +│ +1 +│", table.stdout)
    assert re.search(rf"{TODAY} +│ +\${stats['total_cost_usd']:.4f} +│ +2 +│", table.stdout)


def test_stats_restricted_to_a_repository_and_a_day(store: Store) -> None:
    one = json.loads(council(store, "stats", "--repo", "o/other", "--json").stdout)
    assert one["deliberations"] == 1 and one["protocols"] == {"quick": 1}
    assert one["repos"] == ["o/other"]
    later = json.loads(council(store, "stats", "--since", "2999-01-01", "--json").stdout)
    assert later["deliberations"] == 0 and later["personas"] == []
    bad = council(store, "stats", "--since", "yesterday")
    assert bad.exit_code == 2 and "YYYY-MM-DD" in bad.stderr
    table = council(store, "stats")
    assert table.exit_code == 0 and "Per persona" in table.stdout and TODAY in table.stdout


def test_the_web_gets_only_the_repositories_its_reader_may_read(store: Store) -> None:
    async def read() -> tuple[list[str], int, int]:
        db = Database(store.url)
        try:
            await db.connect()
            listed = await deliberation_history(db, repos=["o/other"])
            none = await deliberation_history(db, repos=[])
            stats = await usage_stats(db, repos=["o/other", "o/elsewhere"])
            assert await load_transcript(db, "missing") is None
            assert await load_transcript(db, store.board_id, repos=["o/other"]) is None
            assert await load_transcript(db, store.quick_id, repos=["o/other"]) is not None
            return [r.id for r in listed], len(none), stats.deliberations
        finally:
            await db.dispose()

    ids, none, counted = asyncio.run(read())
    assert ids == [store.quick_id] and none == 0 and counted == 1


def test_plot_draws_a_png(store: Store, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "cost.png"
    done = council(store, "stats", "--plot", str(png))
    assert done.exit_code == 0, done.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_install_it(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.cli import history

    monkeypatch.setattr(history, "matplotlib_installed", lambda: False)
    done = council(store, "stats", "--plot", str(tmp_path / "x.png"))
    assert done.exit_code == 2 and "pr-council[plot]" in done.stderr
    assert not (tmp_path / "x.png").exists()


PROBE = """
import json, sys
sys.argv = ["council", *json.loads(sys.argv[1])]
try:
    from bot.cli import main
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("matplotlib", "numpy"))))
"""


@pytest.mark.parametrize("command", ["history", "stats", "show"])
def test_importing_the_cli_and_its_commands_load_no_plotting_library(
    store: Store, tmp_path: Path, command: str
) -> None:
    argv = {
        "history": ["history"],
        "stats": ["stats", "--json"],
        "show": ["show", store.board_id, "--format", "html"],
    }[command]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COUNCIL_", "DATABASE_"))}
    env.update({"DATABASE_URL": store.url, "XDG_STATE_HOME": str(tmp_path / "state")})
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert json.loads(last) == []
    assert store.board_id in done.stdout or '"deliberations": 3' in done.stdout  # it ran
