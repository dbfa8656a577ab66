"""Worker throughput of whichever `bot` is first on sys.path: `--jobs` 5-seat boards at a
time on the SQL ledger (SQLite) against a fake model server already running at `--url`.

bench/scale.py runs it once with PYTHONPATH at a worktree of the code before the scale work
and once at this tree, back to back against the same server, so the two figures are of the
same run. It uses only what both trees have (Engine, ProviderRegistry, Settings, Database,
SqlLedger, create_deliberation, DeliberationRequest, BoardConfig, PinnedSeat; the older tree
keeps create_deliberation in bot.store.records), and imports nothing from tests/ (the fake
is served by the caller).

Prints one JSON line: boards, wall seconds, boards per minute, this process's CPU per board,
and where `bot` was imported from.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import bot
from bot.council.board import BoardConfig, PinnedSeat
from bot.council.engine import DeliberationRequest, Engine
from bot.council.personas import load_catalog
from bot.council.scoring import ReviewSignals
from bot.providers import ProviderRegistry
from bot.settings import Settings
from bot.store import Database, SqlLedger

try:
    from bot.store.deliberations import create_deliberation
except ImportError:  # the tree before the scale work (bench/scale.py, PREVIOUS_REV)
    from bot.store.records import create_deliberation

MODEL = "anthropic:claude-sonnet-5-5"
SEATS = 5
BOT = str(Path(bot.__file__).resolve().parent)  # which tree's bot this is
BOARD = (  # bench/deliberation.py's five
    "performance-engineer",
    "concurrency-analyst",
    "software-architect",
    "test-engineer",
    "correctness-reviewer",
)


def _settings(url: str, concurrency: int) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        anthropic_api_key="bench",
        anthropic_base_url=url,
        openai_api_key="bench",
        openai_base_url=url + "/v1",
        max_retries=0,
        provider_concurrency=concurrency,
        call_deadline_s=120.0,
    )


async def _board(registry: ProviderRegistry, catalog: Any, db: Database, context: str) -> None:
    record = await create_deliberation(
        db,
        key=f"probe-{uuid.uuid4()}",
        repo="o/r",
        pr_number=1,
        head_sha="a" * 40,
        trigger="command",
        protocol="board",
        topic="Review this refactor",
    )
    request = DeliberationRequest(
        deliberation_id=record.id,
        topic="Review this refactor",
        protocol="board",
        context=context,
        models=[MODEL],
        signals=ReviewSignals(topic="review", languages=("python",), areas=("performance",)),
        board=BoardConfig(default_size=SEATS, min_size=3, discussion_rounds=1),
        pinned=[PinnedSeat(persona=p) for p in BOARD],
    )
    advisory = await Engine(registry, catalog, SqlLedger(db)).deliberate(request)
    assert advisory.usage.calls > 0, "the board made no calls"


async def measure(url: str, context: str, jobs: int, boards: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite+aiosqlite:///{tmp}/probe.db")
        await db.connect()
        registry = ProviderRegistry(_settings(url, 4 * 9))
        catalog = load_catalog()
        await _board(registry, catalog, db, context)  # warm: imports, clients, caches
        gate = asyncio.Semaphore(jobs)

        async def job() -> None:
            async with gate:
                await _board(registry, catalog, db, context)

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(job() for _ in range(boards)))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        await registry.aclose()
        await db.dispose()
    return {
        "jobs_at_once": jobs,
        "boards": boards,
        "wall_s": wall,
        "per_minute": 60 * boards / wall,
        "process_cpu_s_per_board": cpu / boards,
        "bot": BOT,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the fake model server's base URL")
    parser.add_argument("--context", type=Path, required=True, help="a file: the context")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--boards", type=int, default=16)
    args = parser.parse_args()
    context = args.context.read_text()
    print(json.dumps(asyncio.run(measure(args.url, context, args.jobs, args.boards))))


if __name__ == "__main__":
    main()
