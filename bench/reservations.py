"""Cost reservations against what the calls spend, on the fake model server: before (every
call reserves its worst case, the full `max_tokens`) and after (the 95th percentile of its
model's last 50 answers, `bot.council.reserving`), in the same run.

Boards of 5 seats with one discussion round over a 30,000-token context, seated on two
models (anthropic:claude-sonnet-5-5 and openai:gpt-5.4), run one after another through the
store's budget on a SQLite store, as the App runs them. Reported:

- uncapped, per mode: what the boards' reservations held against what their calls cost
  (read back from `spend_reservations`), in total and for the largest single call; in the
  p95 mode the first board (models never seen) apart from the boards after it;
- capped per pull request at 3x what a board costs (the mean of the boards after the first,
  whose prompt cache is warm): how many boards complete and how many end COST_LIMIT, per
  mode;
- the store's price per call: reading a model's last 50 answer sizes (what a cache miss
  costs) and recording one (insert and prune), medians, on SQLite and, if one answers, on
  PostgreSQL.

Run: `python -m bench.reservations`. Writes bench/results/reservations.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.deliberation import BOARD, ROUNDS, SEATS, make_context, settings
from bot.council.advisory import Resolution
from bot.council.board import BoardConfig, PinnedSeat
from bot.council.engine import DeliberationRequest, Engine
from bot.council.personas import load_catalog
from bot.council.scoring import ReviewSignals
from bot.providers import ProviderRegistry
from bot.store import Database, SqlLedger
from bot.store.answer_sizes import StoreAnswerSizes, recent_answer_sizes, record_answer_size
from bot.store.deliberations import create_deliberation
from bot.store.spend import SpendCaps, StoreBudget, reservations
from tests.support.council_answers import CouncilScript
from tests.support.model_server import run_fake_model_server
from tests.support.postgres import find_postgres

MODELS = ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4"]
REPO = "bench/reservations"
MODES = ("worst_case", "p95")


def board_request(context: str, did: str) -> DeliberationRequest:
    return DeliberationRequest(
        deliberation_id=did,
        topic="Review this refactor",
        protocol="board",
        context=context,
        models=MODELS,
        signals=ReviewSignals(topic="review", languages=("python",), areas=("performance",)),
        board=BoardConfig(default_size=SEATS, min_size=3, discussion_rounds=ROUNDS),
        pinned=[PinnedSeat(persona=p) for p in BOARD[:SEATS]],
    )


async def one_board(
    registry: ProviderRegistry,
    db: Database,
    context: str,
    sizes: StoreAnswerSizes | None,
    pr_number: int,
    cap: float | None,
) -> dict[str, Any]:
    record = await create_deliberation(
        db,
        key=f"bench-{uuid.uuid4()}",
        repo=REPO,
        pr_number=pr_number,
        head_sha="f" * 40,
        trigger="bench",
        protocol="board",
        topic="Review this refactor",
    )
    engine = Engine(registry, load_catalog(), SqlLedger(db), answer_sizes=sizes)
    budget = StoreBudget(db, record.id, SpendCaps(pr_usd=cap))
    advisory = await engine.deliberate(board_request(context, record.id), budget=budget)
    held = await reservations(db, record.id)
    return {
        "resolution": advisory.resolution.value,
        "calls": len(held),
        "reserved_usd": sum(r.reserved_usd for r in held),
        "spent_usd": sum(r.actual_usd or 0.0 for r in held),
        "largest_call_reserved_usd": max((r.reserved_usd for r in held), default=0.0),
    }


def totals(boards: list[dict[str, Any]]) -> dict[str, Any]:
    reserved = sum(b["reserved_usd"] for b in boards)
    spent = sum(b["spent_usd"] for b in boards)
    return {
        "boards": len(boards),
        "calls": sum(b["calls"] for b in boards),
        "reserved_usd": reserved,
        "spent_usd": spent,
        "reserved_vs_spent": reserved / spent if spent else None,
        "largest_call_reserved_usd": max(b["largest_call_reserved_usd"] for b in boards),
    }


async def measure_boards(boards: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    with run_fake_model_server() as server, tempfile.TemporaryDirectory() as tmp:
        context = make_context(server)
        registry = ProviderRegistry(settings(server, 8))
        try:
            for mode in MODES:
                server.reset()  # each mode starts with nothing cached
                server.default(CouncilScript(latency_s=0.0).reply)
                async with Database(f"sqlite+aiosqlite:///{tmp}/{mode}.db") as db:
                    sizes = StoreAnswerSizes(db) if mode == "p95" else None
                    runs = [
                        await one_board(registry, db, context, sizes, n, None)
                        for n in range(1, boards + 1)
                    ]
                    # What a board costs once the prompt cache is warm (the first pays more).
                    steady = runs[1:] or runs
                    cap = 3 * statistics.mean(b["spent_usd"] for b in steady)
                    capped = [
                        await one_board(registry, db, context, sizes, 1000 + n, cap)
                        for n in range(1, boards + 1)
                    ]
                result[mode] = {
                    "uncapped": totals(runs),
                    "first_board": totals(runs[:1]),
                    "later_boards": totals(runs[1:]) if len(runs) > 1 else None,
                    "pr_cap_usd": cap,
                    "capped_completed": sum(
                        b["resolution"] != Resolution.COST_LIMIT.value for b in capped
                    ),
                    "capped_cost_limit": sum(
                        b["resolution"] == Resolution.COST_LIMIT.value for b in capped
                    ),
                    "capped_max_spent_usd": max(b["spent_usd"] for b in capped),
                }
        finally:
            await registry.aclose()
    return result


async def store_costs(url: str, repeats: int) -> dict[str, float]:
    """Median milliseconds of one p95 read (a cache miss) and of one record."""
    model = f"bench:{uuid.uuid4().hex[:8]}"
    async with Database(url) as db:
        writes, reads = [], []
        for n in range(repeats):
            started = time.perf_counter()
            await record_answer_size(db, model, 100 + n % 700)
            writes.append(time.perf_counter() - started)
            started = time.perf_counter()
            await recent_answer_sizes(db, model)
            reads.append(time.perf_counter() - started)
    return {
        "read_last_50_ms": statistics.median(reads) * 1000,
        "record_ms": statistics.median(writes) * 1000,
    }


async def measure_store(repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        found: dict[str, Any] = {
            "sqlite": await store_costs(f"sqlite+aiosqlite:///{tmp}/store.db", repeats)
        }
    server, reason = await find_postgres()
    if server is None:
        found["postgresql"] = f"skipped: {reason}"
    else:
        async with server.database("bench_sizes") as url:
            found["postgresql"] = await store_costs(
                url.render_as_string(hide_password=False), repeats
            )
    return found


def print_table(result: dict[str, Any]) -> None:
    print(
        f"Reservations against spend: {result['boards']} boards of {SEATS} seats per mode, "
        f"{ROUNDS} round, models {', '.join(MODELS)}"
    )
    for mode in MODES:
        row = result[mode]
        parts = [("all boards", row["uncapped"]), ("first board", row["first_board"])]
        if row["later_boards"] is not None:
            parts.append(("later boards", row["later_boards"]))
        print(f"  {mode.replace('_', ' ')}:")
        for name, t in parts:
            print(
                f"    {name:<13} {t['calls']:>4} calls reserved ${t['reserved_usd']:.4f} for "
                f"${t['spent_usd']:.4f} spent ({t['reserved_vs_spent']:.1f}x); largest call "
                f"held ${t['largest_call_reserved_usd']:.4f}"
            )
        print(
            f"    capped at ${row['pr_cap_usd']:.4f} per PR (3x a board): "
            f"{row['capped_completed']} completed, {row['capped_cost_limit']} COST_LIMIT, "
            f"most spent ${row['capped_max_spent_usd']:.4f}"
        )
    print("Store cost per call (medians):")
    for backend, costs in result["store"].items():
        if isinstance(costs, str):
            print(f"  {backend:<10} {costs}")
        else:
            print(
                f"  {backend:<10} read the last 50: {costs['read_last_50_ms']:.2f} ms; "
                f"record one: {costs['record_ms']:.2f} ms"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=4, help="boards per mode (and capped)")
    parser.add_argument("--repeats", type=int, default=200, help="store reads and writes timed")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "reservations.json"
    )
    args = parser.parse_args()
    result: dict[str, Any] = {"boards": args.boards}
    result.update(asyncio.run(measure_boards(args.boards)))
    result["store"] = asyncio.run(measure_store(args.repeats))
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
