"""Deliberation wall time and cache savings, against the fake model server.

A 5-seat board with one discussion round over a 30,000-token context, every call taking a
fixed latency L with its first token at 0.25 L. Reported, as medians over repeats:

- wall time against the critical path (per sequential phase: one time-to-first-token for the
  warming call plus L) and against the same calls made one at a time;
- input-token cost with caching (writes at 1.25x, reads at 0.1x) against the same
  deliberation with caching off;
- on the OpenAI format (gpt-5.4, automatic prefix caching), the input tokens per call and
  their cost when each call sends only its phase's schema, against every call sending all
  phases' tool definitions, eight (the shared list Anthropic keeps for its cache).

Also, each reported beside its goal:

- wall time against the critical path at 9 seats (`--seats` sets the main table's size);
- engine CPU per 5-seat board, with every call answered at once: the process's CPU time less
  the fake server's thread, on the in-memory ledger and on the SQL ledger (SQLite), with the
  ledger's transactions per deliberation counted on the database engine;
- engine throughput: deliberations per minute of one process running `--jobs` boards at a
  time on the SQL ledger with answers at once (the worker's engine share; no GitHub calls,
  no context build), and the fake server's CPU per deliberation in its own process;
- a fresh process: `council review` (quick, board) as a new process, start-up and store
  creation included, against its critical path, its endpoint's mode unknown and set
  (bench/fresh_review.py; goal: wall <= 1.10 x critical path + 1 s).

Run: `python -m bench.deliberation` (or `make bench`). Writes bench/results/deliberation.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import fresh_review
from bot.council.board import BoardConfig, PinnedSeat
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger, Ledger
from bot.council.personas import load_catalog
from bot.council.prompts import ContextSection, render_context, tools_for
from bot.council.scoring import ReviewSignals
from bot.providers import CapabilityTable, ProviderRegistry
from bot.settings import Settings
from bot.store import Database, SqlLedger
from bot.store.deliberations import create_deliberation
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, run_fake_model_server

MODEL = "anthropic:claude-sonnet-5-5"
SEATS = 5
ROUNDS = 1
CONTEXT_TOKENS = 30_000
NO_CACHE = 10**9
# Pinned so every run seats the same five (scoring is measured elsewhere).
BOARD = (
    "performance-engineer",
    "concurrency-analyst",
    "software-architect",
    "test-engineer",
    "correctness-reviewer",  # every board seats a correctness owner: pinned, it is one of five
    # Beyond five (`--seats`, the 9-seat case): the next four, in this order.
    "sre-reliability",
    "maintainability-reviewer",
    "appsec-reviewer",
    "api-contract-reviewer",
)
NINE = 9
CPU_REPEATS = 8


def make_context(server: FakeModelServer) -> str:
    line = "+    total = compute_total(order.items, discounts=order.discounts)  # line\n"
    body = line * (CONTEXT_TOKENS // server.count_tokens(line))
    text = render_context(
        "Refactor order totals", [ContextSection(kind="diff", path="shop/orders.py", text=body)]
    )
    assert abs(server.count_tokens(text) - CONTEXT_TOKENS) / CONTEXT_TOKENS < 0.05
    return text


OPENAI_MODEL = "openai:gpt-5.4"


def settings(server: FakeModelServer, concurrency: int) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        anthropic_api_key="bench",
        anthropic_base_url=server.anthropic_url,
        openai_api_key="bench",
        openai_base_url=server.openai_url,
        max_retries=0,
        provider_concurrency=concurrency,
        call_deadline_s=120.0,
    )


def board_request(
    context: str, model: str, tag: str, *, seats: int = SEATS, did: str | None = None
) -> DeliberationRequest:
    return DeliberationRequest(
        deliberation_id=did or f"bench-{tag}-{time.monotonic_ns()}",
        topic="Review this refactor",
        protocol="board",
        context=context,
        models=[model],
        signals=ReviewSignals(topic="review", languages=("python",), areas=("performance",)),
        board=BoardConfig(default_size=seats, min_size=3, discussion_rounds=ROUNDS),
        pinned=[PinnedSeat(persona=p) for p in BOARD[:seats]],
    )


async def tool_list_run(server: FakeModelServer, context: str, *, shared: bool) -> dict[str, Any]:
    """One OpenAI-format board; input tokens per call and their cost at gpt-5.4's prices."""
    server.reset()
    server.default(CouncilScript(latency_s=0.02).reply)
    registry = ProviderRegistry(settings(server, 8), shared_tools=shared)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        board_request(context, OPENAI_MODEL, "tools")
    )
    await registry.aclose()
    usage = advisory.usage
    caps = CapabilityTable().lookup("openai", OPENAI_MODEL.split(":", 1)[1])
    total = usage.input_tokens + usage.cached_input_tokens
    return {
        "calls": usage.calls,
        "input_tokens_per_call": total / usage.calls,
        "uncached_input_tokens_per_call": usage.input_tokens / usage.calls,
        "input_cost_usd": (
            usage.input_tokens * caps.input_price
            + usage.cached_input_tokens * caps.cache_read_price
        )
        / 1e6,
        "resolution": advisory.resolution.value,
    }


async def measure_tool_lists() -> dict[str, Any]:
    with run_fake_model_server() as server:
        context = make_context(server)
        phase = await tool_list_run(server, context, shared=False)
        shared = await tool_list_run(server, context, shared=True)
    return {
        "phase_only": phase,
        "shared_list": shared,
        "tokens_saved_per_call": shared["input_tokens_per_call"] - phase["input_tokens_per_call"],
        "cost_ratio": phase["input_cost_usd"] / shared["input_cost_usd"],
    }


async def one_run(
    server: FakeModelServer,
    context: str,
    latency: float,
    *,
    concurrency: int,
    cache: bool,
    tag: str,
    seats: int = SEATS,
) -> dict[str, Any]:
    server.reset()
    if not cache:
        server.min_cache_tokens = {"*": NO_CACHE}
    server.default(CouncilScript(latency_s=latency, first_token_s=0.25 * latency).reply)
    registry = ProviderRegistry(settings(server, concurrency))
    engine = Engine(registry, load_catalog(), InMemoryLedger())
    request = board_request(context, MODEL, tag, seats=seats)
    started = time.perf_counter()
    advisory = await engine.deliberate(request)
    wall = time.perf_counter() - started
    await registry.aclose()
    usage = advisory.usage
    caps = CapabilityTable().lookup("anthropic", MODEL.split(":", 1)[1])
    cost = (
        usage.input_tokens * caps.input_price
        + usage.cache_write_tokens * caps.cache_write_price
        + usage.cached_input_tokens * caps.cache_read_price
    ) / 1e6
    return {
        "wall_s": wall,
        "calls": usage.calls,
        "input_cost_usd": cost,
        "resolution": advisory.resolution.value,
        "input_tokens": usage.input_tokens + usage.cache_write_tokens + usage.cached_input_tokens,
    }


def critical_path(latency: float) -> float:
    # assess, discuss, vote: a warming call's first token, then L; synthesis: one call.
    return 3 * (0.25 * latency + latency) + latency


async def measure(latency: float, repeats: int, seats: int = SEATS) -> dict[str, Any]:
    wide = 2 * NINE  # more slots than seats: no seat waits for one
    with run_fake_model_server() as server:
        context = make_context(server)
        runs: dict[str, list[dict[str, Any]]] = {
            "parallel": [],
            "sequential": [],
            "uncached": [],
            "nine": [],
        }
        for i in range(repeats):
            runs["parallel"].append(
                await one_run(
                    server, context, latency, concurrency=wide, cache=True, tag=f"p{i}", seats=seats
                )
            )
            runs["uncached"].append(
                await one_run(
                    server,
                    context,
                    latency,
                    concurrency=wide,
                    cache=False,
                    tag=f"u{i}",
                    seats=seats,
                )
            )
            runs["sequential"].append(
                await one_run(
                    server, context, latency, concurrency=1, cache=True, tag=f"s{i}", seats=seats
                )
            )
            runs["nine"].append(
                await one_run(
                    server, context, latency, concurrency=wide, cache=True, tag=f"n{i}", seats=NINE
                )
            )

    def median(kind: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[kind])

    path = critical_path(latency)
    return {
        "latency_s": latency,
        "repeats": repeats,
        "seats": seats,
        "rounds": ROUNDS,
        "context_tokens": CONTEXT_TOKENS,
        "calls": runs["parallel"][0]["calls"],
        "critical_path_s": path,
        "wall_s": median("parallel", "wall_s"),
        "sequential_wall_s": median("sequential", "wall_s"),
        "wall_vs_critical_path": median("parallel", "wall_s") / path,
        "wall_vs_sequential": median("parallel", "wall_s") / median("sequential", "wall_s"),
        "cached_input_cost_usd": median("parallel", "input_cost_usd"),
        "uncached_input_cost_usd": median("uncached", "input_cost_usd"),
        "cost_ratio": median("parallel", "input_cost_usd") / median("uncached", "input_cost_usd"),
        "nine_seats": {
            "calls": runs["nine"][0]["calls"],
            "wall_s": median("nine", "wall_s"),
            "wall_vs_critical_path": median("nine", "wall_s") / path,
        },
        "goals": {
            "wall_vs_critical_path_max": 1.15,
            "nine_seats_wall_vs_critical_path_max": 1.10,
            "cost_ratio_max": 0.45,
            "engine_cpu_s_max": 0.25,
        },
    }


def _serve(conn: Any, latency: float = 0.0) -> None:
    """A child process's fake model server, every call taking `latency` (0: answers at
    once), until the parent closes `conn` (throughput is measured with the fake's CPU out of
    the engine's process). Between, the parent may send "cpu" (answered with this process's
    CPU seconds) or "reset" (calls and prompt cache forgotten, the same script again)."""
    with run_fake_model_server() as server:
        server.default(CouncilScript(latency_s=latency).reply)
        conn.send(server.url)
        with contextlib.suppress(EOFError):
            while True:
                command = conn.recv()
                if command == "cpu":
                    conn.send(time.process_time())
                elif command == "reset":
                    server.reset()
                    server.default(CouncilScript(latency_s=latency).reply)
                    conn.send(len(server.calls))


class _ServerProcess:
    """The fake model server in a process of its own (see `_serve`)."""

    def __init__(self, latency: float = 0.0) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, latency), daemon=True)

    def __enter__(self) -> _ServerProcess:
        self._process.start()
        self.server = FakeModelServer()  # not served here: only its URLs
        self.server.url = self._conn.recv()
        return self

    def cpu(self) -> float:
        """The server process's CPU seconds so far."""
        self._conn.send("cpu")
        return float(self._conn.recv())

    def reset(self) -> None:
        self._conn.send("reset")
        self._conn.recv()

    def __exit__(self, *_: object) -> None:
        self._conn.close()
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()


def _thread_cpu(name: str) -> float:
    """CPU seconds of the live thread called `name` (the fake server's), 0 if none."""
    for thread in threading.enumerate():
        if thread.name == name and thread.ident is not None:
            return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    return 0.0


def _engine_cpu() -> float:
    """The process's CPU seconds less the fake model server's (it runs in a thread here)."""
    return time.process_time() - _thread_cpu("fake model server")


class _Transactions:
    """Counts the database's committed transactions (SQLAlchemy engine events)."""

    def __init__(self, db: Database) -> None:
        from sqlalchemy import event

        self.commits = 0
        event.listen(db.engine.sync_engine, "commit", self._commit)

    def _commit(self, _connection: Any) -> None:
        self.commits += 1


async def _sql_deliberation(db: Database) -> str:
    record = await create_deliberation(
        db,
        key=f"bench-{uuid.uuid4()}",
        repo="o/r",
        pr_number=1,
        head_sha="a" * 40,
        trigger="command",
        protocol="board",
        topic="Review this refactor",
    )
    return record.id


async def measure_engine_cpu(repeats: int = CPU_REPEATS, jobs: int = 4) -> dict[str, Any]:
    """Engine CPU per 5-seat board (answers at once), per ledger; engine throughput."""
    result: dict[str, Any] = {"repeats": repeats, "seats": SEATS}
    with run_fake_model_server() as server, tempfile.TemporaryDirectory() as tmp:
        context = make_context(server)
        server.default(CouncilScript(latency_s=0.0).reply)
        registry = ProviderRegistry(settings(server, 4 * NINE))
        catalog = load_catalog()
        db = Database(f"sqlite+aiosqlite:///{tmp}/bench.db")
        await db.connect()
        counter = _Transactions(db)

        async def one(kind: str) -> tuple[float, int, int]:
            ledger: Ledger = InMemoryLedger() if kind == "memory" else SqlLedger(db)
            did = await _sql_deliberation(db) if kind == "sql" else None
            request = board_request(context, MODEL, "cpu", did=did)
            commits, began = counter.commits, _engine_cpu()
            await Engine(registry, catalog, ledger).deliberate(request)
            events = len(await ledger.events(request.deliberation_id))
            return _engine_cpu() - began, counter.commits - commits, events

        await one("memory")  # warm: imports, clients, the process's caches
        for kind in ("memory", "sql"):
            samples = []
            for _ in range(repeats):
                server.reset()
                server.default(CouncilScript(latency_s=0.0).reply)
                samples.append(await one(kind))
            result[kind] = {
                "engine_cpu_s": statistics.median(s[0] for s in samples),
                "transactions": statistics.median(s[1] for s in samples),
                "events": samples[0][2],
            }
        await registry.aclose()
        # Throughput: `jobs` boards at a time (a worker's max_jobs, 4 by default), 4 x jobs
        # boards in all, against a fake served by another process.
        with _ServerProcess() as served:
            registry = ProviderRegistry(settings(served.server, 4 * NINE))
            await one_board(registry, catalog, db, context)  # warm the new clients
            gate = asyncio.Semaphore(jobs)
            total = 4 * jobs

            async def job() -> None:
                async with gate:
                    await one_board(registry, catalog, db, context)

            started, cpu, server_cpu = time.perf_counter(), time.process_time(), served.cpu()
            await asyncio.gather(*(job() for _ in range(total)))
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            server_cpu = served.cpu() - server_cpu
            await registry.aclose()
        result["throughput"] = {
            "jobs_at_once": jobs,
            "deliberations": total,
            "per_minute": 60 * total / elapsed,
            "process_cpu_s_per_deliberation": cpu / total,
            "server_cpu_s_per_deliberation": server_cpu / total,
        }
        await db.dispose()
    return result


async def one_board(registry: ProviderRegistry, catalog: Any, db: Database, context: str) -> None:
    did = await _sql_deliberation(db)
    await Engine(registry, catalog, SqlLedger(db)).deliberate(
        board_request(context, MODEL, "put", did=did)
    )


def print_table(result: dict[str, Any]) -> None:
    rows = [
        ("calls per deliberation", f"{result['calls']}"),
        ("critical path", f"{result['critical_path_s']:.2f} s"),
        ("wall time (parallel, cached)", f"{result['wall_s']:.2f} s"),
        ("wall time (one call at a time)", f"{result['sequential_wall_s']:.2f} s"),
        ("wall / critical path (goal <= 1.15)", f"{result['wall_vs_critical_path']:.3f}"),
        ("wall / one-at-a-time", f"{result['wall_vs_sequential']:.3f}"),
        ("input cost, cached", f"${result['cached_input_cost_usd']:.4f}"),
        ("input cost, caching off", f"${result['uncached_input_cost_usd']:.4f}"),
        ("cached / uncached cost (goal <= 0.45)", f"{result['cost_ratio']:.3f}"),
        (
            f"9 seats: wall / critical path (goal <= 1.10), {result['nine_seats']['calls']} calls",
            f"{result['nine_seats']['wall_vs_critical_path']:.3f}",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    print(
        f"Deliberation benchmark: L = {result['latency_s']} s, {result['seats']} seats, "
        f"{result['rounds']} round, {result['context_tokens']:,}-token context, median of "
        f"{result['repeats']}"
    )
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    tools = result["tool_lists"]
    phase, shared = tools["phase_only"], tools["shared_list"]
    print(f"OpenAI format ({OPENAI_MODEL}), {phase['calls']} calls, input per call:")
    every = f"the board's {len(tools_for('board'))} tool definitions"
    for name, run in (("only the phase's schema", phase), (every, shared)):
        print(
            f"  {name:<28} {run['input_tokens_per_call']:>9,.0f} tokens "
            f"({run['uncached_input_tokens_per_call']:,.0f} uncached), "
            f"input cost ${run['input_cost_usd']:.4f}"
        )
    print(
        f"  saved per call: {tools['tokens_saved_per_call']:,.0f} tokens; "
        f"cost ratio {tools['cost_ratio']:.3f}"
    )
    cpu = result["engine_cpu"]
    print(f"Engine CPU per {cpu['seats']}-seat board, answers at once (goal < 0.25 s):")
    for kind in ("memory", "sql"):
        row = cpu[kind]
        print(
            f"  {kind + ' ledger':<12} {row['engine_cpu_s']:.3f} s CPU, "
            f"{row['transactions']:.0f} transactions, {row['events']} events"
        )
    put = cpu["throughput"]
    print(
        f"  throughput, {put['jobs_at_once']} at a time on the SQL ledger: "
        f"{put['per_minute']:.0f} deliberations/min "
        f"({put['process_cpu_s_per_deliberation']:.3f} s CPU each; the fake server, in "
        f"another process, {put['server_cpu_s_per_deliberation']:.3f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per call (L)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seats", type=int, default=SEATS, help="seats of the main table")
    parser.add_argument("--jobs", type=int, default=4, help="boards at a time (throughput)")
    parser.add_argument(
        "--fresh-latency", type=float, default=3.0, help="seconds per answer (fresh process)"
    )
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "deliberation.json"
    )
    args = parser.parse_args()
    result = asyncio.run(measure(args.latency, args.repeats, args.seats))
    result["tool_lists"] = asyncio.run(measure_tool_lists())
    result["engine_cpu"] = asyncio.run(measure_engine_cpu(jobs=args.jobs))
    result["fresh_process"] = fresh_review.measure(
        args.fresh_latency, args.repeats, ["quick", "board"]
    )
    print_table(result)
    fresh_review.print_table(result["fresh_process"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
