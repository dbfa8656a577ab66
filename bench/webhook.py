"""Webhook receiver throughput and latency beside a bare FastAPI endpoint, same run.

Signed `issue_comment` deliveries of `/council` on a pull request (GitHub's example payload,
each with its own delivery id and comment id) go through the real app (`create_app` on
uvicorn, real Redis) at rising concurrency; the same request bytes go to a bare FastAPI
endpoint that answers 202 on the same uvicorn settings. Both servers run in their own
processes; the load generator is a small keep-alive HTTP/1.1 client on asyncio streams in
this process, and its own ceiling is measured against a raw asyncio sink server, so it is
known not to be the bottleneck. Reported per concurrency, as medians over repeats:
throughput (requests/s), p50 and p99 latency, the app/bare throughput ratio; and the check
that the queue holds exactly one job per distinct delivery (and none more after every
delivery is sent again). Goal at 50 senders (issue 15): ratio >= 0.55 and app p99 < 50 ms.

Run: `python bench/webhook.py` (Redis at 127.0.0.1:6379, or `--redis-url`). Writes
bench/results/webhook.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SECRET = "bench-webhook-secret"
PATH = "/webhooks/github"
FIXTURE = (
    Path(__file__).resolve().parents[1]
    / "tests/fixtures/github-webhooks/issue_comment/created.with-installation.payload.json"
)
GOAL_RATIO = 0.55
GOAL_P99_MS = 50.0
GOAL_SENDERS = 50


# ---------------------------------------------------------------- servers (child processes)


def serve(kind: str, redis_url: str, queue_name: str) -> None:
    """Child process: run one server on a free port and print the port."""
    import uvicorn
    from fastapi import FastAPI
    from starlette.responses import Response

    from bot.logs import configure_logging
    from bot.settings import Settings
    from bot.web.app import create_app

    if kind == "sink":
        asyncio.run(_sink())
        return
    if kind == "app":
        # As deployed: one JSON log line per delivery (the parent discards stderr).
        configure_logging("INFO", json_lines=True)
        settings = Settings(
            github_webhook_secret=SECRET, redis_url=redis_url, queue_name=queue_name
        )
        app = create_app(settings)
    else:
        app = FastAPI()

        @app.post(PATH)
        async def bare() -> Response:
            return Response(status_code=202)

    # The same uvicorn settings `council serve` uses; uvicorn binds the port itself (a
    # socket made here with protocol 0 would miss asyncio's TCP_NODELAY).
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", access_log=False, lifespan="on"
    )
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no started event
            await asyncio.sleep(0.01)
        print(server.servers[0].sockets[0].getsockname()[1], flush=True)
        await task

    asyncio.run(run())


async def _sink() -> None:
    """A raw asyncio HTTP/1.1 server that answers 202: the load generator's ceiling."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(_content_length(head))
                writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


@contextlib.contextmanager
def child_server(kind: str, redis_url: str, queue_name: str) -> Iterator[int]:
    command = [sys.executable, __file__, "--serve", kind, "--redis-url", redis_url]
    command += ["--queue-name", queue_name]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"{kind} server did not start (exit {process.wait()})")
        yield int(line)
    finally:
        process.terminate()
        process.wait(timeout=10)


# ---------------------------------------------------------------- load generator


def _content_length(head: bytes) -> int:
    lower = head.lower()
    start = lower.find(b"content-length:")
    if start < 0:
        return 0
    end = lower.find(b"\r\n", start)
    return int(lower[start + 15 : end])


@dataclass
class Run:
    requests: int
    seconds: float
    latencies_ms: list[float]
    statuses: Counter[int]

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def drive(port: int, batches: list[list[bytes]]) -> Run:
    """One keep-alive connection per sender; every sender starts at the same moment."""
    start = asyncio.Event()
    latencies: list[float] = []
    statuses: Counter[int] = Counter()

    async def sender(batch: list[bytes], ready: asyncio.Event) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        ready.set()
        await start.wait()
        for raw in batch:
            began = time.perf_counter()
            writer.write(raw)
            head = await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(_content_length(head))
            latencies.append((time.perf_counter() - began) * 1000)
            statuses[int(head[9:12])] += 1
        writer.close()

    readies = [asyncio.Event() for _ in batches]
    tasks = [asyncio.create_task(sender(b, r)) for b, r in zip(batches, readies, strict=True)]
    await asyncio.gather(*(ready.wait() for ready in readies))
    began = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    seconds = time.perf_counter() - began
    return Run(sum(map(len, batches)), seconds, latencies, statuses)


class Deliveries:
    """Signed, distinct `/council` deliveries, built before any clock starts."""

    def __init__(self) -> None:
        self.payload = json.loads(FIXTURE.read_text())
        self.payload["issue"]["pull_request"] = {"url": "https://api.github.com/pulls/1"}
        self.payload["comment"]["body"] = "/council"
        self.next_comment_id = 9 * 10**11 + int(uuid.uuid4().int % 10**9) * 100

    def make(self, count: int) -> list[bytes]:
        return [self._one() for _ in range(count)]

    def _one(self) -> bytes:
        self.next_comment_id += 1
        self.payload["comment"]["id"] = self.next_comment_id
        body = json.dumps(self.payload).encode()
        signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        head = (
            f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
            "Content-Type: application/json\r\nX-GitHub-Event: issue_comment\r\n"
            f"X-GitHub-Delivery: {uuid.uuid4()}\r\nX-Hub-Signature-256: sha256={signature}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body


def split(requests: list[bytes], senders: int) -> list[list[bytes]]:
    return [requests[index::senders] for index in range(senders)]


# ---------------------------------------------------------------- measurement


@dataclass
class Servers:
    sink: int
    bare: int
    app: int


async def measure(
    servers: Servers, redis_url: str, queue_name: str, levels: list[int], total: int, repeats: int
) -> dict[str, Any]:
    from arq.connections import RedisSettings, create_pool

    redis = await create_pool(RedisSettings.from_dsn(redis_url))
    deliveries = Deliveries()
    to_app: list[bytes] = []  # every delivery the app has seen, each one distinct
    rows: list[dict[str, Any]] = []
    try:
        # First-request costs: imports, the script load, a pooled connection per sender.
        warm_up = deliveries.make(10 * max(levels))
        for port in (servers.sink, servers.bare, servers.app):
            await drive(port, split(warm_up, max(levels)))
        to_app += warm_up
        for senders in levels:
            rows.append(await _level(servers, deliveries, senders, total, repeats, to_app))
        queued = await redis.zcard(queue_name)
        again = await drive(servers.app, split(to_app, 10))
        queued_after_resend = await redis.zcard(queue_name)
        await _cleanup(redis, queue_name)
    finally:
        await redis.aclose()
    return {
        "levels": rows,
        "jobs": {
            "distinct_deliveries_to_app": len(to_app),
            "jobs_in_queue": queued,
            "resent_deliveries": again.requests,
            "resent_statuses": dict(again.statuses),
            "jobs_after_resend": queued_after_resend,
        },
    }


async def _level(
    servers: Servers,
    deliveries: Deliveries,
    senders: int,
    total: int,
    repeats: int,
    to_app: list[bytes],
) -> dict[str, Any]:
    """Each repeat sends the same fresh deliveries to the sink, the bare endpoint, the app."""
    runs: dict[str, list[Run]] = {"sink": [], "bare": [], "app": []}
    for _ in range(repeats):
        batch = deliveries.make(total)
        for name in ("sink", "bare", "app"):
            runs[name].append(await drive(getattr(servers, name), split(batch, senders)))
        to_app += batch
    row: dict[str, Any] = {"senders": senders, "requests_per_run": total}
    for name, measured in runs.items():
        row[name] = {
            "throughput_rps": statistics.median(run.throughput for run in measured),
            "p50_ms": statistics.median(run.percentile(0.50) for run in measured),
            "p99_ms": statistics.median(run.percentile(0.99) for run in measured),
            "p99_ms_runs": [round(run.percentile(0.99), 2) for run in measured],
            "statuses": dict(sum((run.statuses for run in measured), Counter())),
        }
    row["app_vs_bare"] = row["app"]["throughput_rps"] / row["bare"]["throughput_rps"]
    return row


async def _cleanup(redis: Any, queue_name: str) -> None:
    from arq.constants import job_key_prefix

    ids = [raw.decode() for raw in await redis.zrange(queue_name, 0, -1)]
    for start in range(0, len(ids), 500):
        await redis.delete(*(job_key_prefix + job for job in ids[start : start + 500]))
    await redis.delete(queue_name)
    batch = []
    async for key in redis.scan_iter(match=f"{queue_name}:*", count=1000):
        batch.append(key)
        if len(batch) >= 500:
            await redis.delete(*batch)
            batch = []
    if batch:
        await redis.delete(*batch)


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    at_goal = next(row for row in result["levels"] if row["senders"] == max(
        r["senders"] for r in result["levels"] if r["senders"] <= GOAL_SENDERS
    ))  # fmt: skip
    jobs = result["jobs"]
    result["goal"] = {
        "senders": at_goal["senders"],
        "ratio_min": GOAL_RATIO,
        "p99_ms_max": GOAL_P99_MS,
        "ratio": at_goal["app_vs_bare"],
        "app_p99_ms": at_goal["app"]["p99_ms"],
        "met": at_goal["app_vs_bare"] >= GOAL_RATIO and at_goal["app"]["p99_ms"] < GOAL_P99_MS,
        "one_job_per_delivery": jobs["jobs_in_queue"] == jobs["distinct_deliveries_to_app"]
        and jobs["jobs_after_resend"] == jobs["jobs_in_queue"],
    }
    return result


def print_table(result: dict[str, Any]) -> None:
    print(
        f"Webhook receiver vs bare FastAPI endpoint ({result['machine']}), "
        f"{result['requests_per_run']} requests per run, median of {result['repeats']}"
    )
    header = (
        f"{'senders':>7}  {'target':<6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}  {'app/bare':>8}"
    )
    print(header)
    for row in result["levels"]:
        for name in ("sink", "bare", "app"):
            cell = row[name]
            ratio = f"{row['app_vs_bare']:.3f}" if name == "app" else ""
            print(
                f"{row['senders']:>7}  {name:<6} {cell['throughput_rps']:>8.0f} "
                f"{cell['p50_ms']:>8.2f} {cell['p99_ms']:>8.2f}  {ratio:>8}"
            )
    jobs, goal = result["jobs"], result["goal"]
    print(
        f"jobs: {jobs['jobs_in_queue']} in the queue for {jobs['distinct_deliveries_to_app']} "
        f"distinct deliveries; after sending all {jobs['resent_deliveries']} again: "
        f"{jobs['jobs_after_resend']} (answers {jobs['resent_statuses']})"
    )
    print(
        f"goal at {goal['senders']} senders: app/bare {goal['ratio']:.3f} (>= {GOAL_RATIO}), "
        f"app p99 {goal['app_p99_ms']:.1f} ms (< {GOAL_P99_MS:.0f}) -> "
        f"{'met' if goal['met'] else 'NOT met'}; one job per delivery: "
        f"{goal['one_job_per_delivery']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,10,50", help="comma-separated sender counts")
    parser.add_argument("--requests", type=int, default=2000, help="requests per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--redis-url", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    )
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "webhook.json"
    )
    parser.add_argument("--serve", choices=["app", "bare", "sink"], help=argparse.SUPPRESS)
    parser.add_argument(
        "--queue-name", default=f"arq:bench:{uuid.uuid4().hex}", help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.redis_url, args.queue_name)
        return
    levels = [int(level) for level in args.levels.split(",")]
    with (
        child_server("sink", args.redis_url, args.queue_name) as sink,
        child_server("bare", args.redis_url, args.queue_name) as bare,
        child_server("app", args.redis_url, args.queue_name) as app,
    ):
        servers = Servers(sink=sink, bare=bare, app=app)
        result = asyncio.run(
            measure(servers, args.redis_url, args.queue_name, levels, args.requests, args.repeats)
        )
    result |= {
        "requests_per_run": args.requests,
        "repeats": args.repeats,
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        "payload_bytes": len(json.dumps(json.loads(FIXTURE.read_text())).encode()),
    }
    summarize(result)
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
