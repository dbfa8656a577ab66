"""Scale: what one installation and one worker can do, each figure against a baseline
measured in the same run.

- Context work vs diff size (1k-200k changed lines over 20-500 files) and vs repository size
  (1k-50k files): the build's wall time and peak memory, against unidiff's bare parse of
  the same diff (the floor any reader of the diff pays) and against the 1k-file repository.
- GitHub requests per review, end to end (uvicorn, arq on Redis, the fake GitHub), against
  one request per file the review read.
- The engine: CPU per deliberation, and deliberations per minute 4 at a time (a worker's
  default) against one at a time.
- Worker throughput against the code before this scale work (PREVIOUS_REV, checked out in a
  temporary git worktree), same run: boards per minute 4 at a time on the SQL ledger, each
  tree in turn measured by bench/_throughput_probe.py in a subprocess with that tree's `bot`
  first on sys.path, against one fake model server in a process of its own, answering at
  once and then with SMALL_LATENCY_S per call (where concurrency counts, as with real
  models); and the CPU-bound limit, 60 s / the probe's CPU per board. Without the revision
  (a shallow clone) that baseline is skipped, and said so.

Needs Redis on 127.0.0.1:6379 (`make redis`).

Run: `python bench/scale.py [--quick]`. Writes bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from context import Case, synthetic  # bench/context.py's synthetic pull requests
from unidiff.patch import PatchSet

from bot.context import PullRequestMeta, build_context
from bot.tokens import TokenEstimator

DIFF_SIZES = ((1_000, 20), (10_000, 100), (50_000, 250), (200_000, 500))
REPO_SIZES = (1_000, 10_000, 50_000)
GOAL_200K_S = 3.0
GOAL_DISCOVERY_S = 0.5
ROOT = Path(__file__).resolve().parent.parent
# The last commit before the scale work (issue 15): the parent of the commit that added
# bot/github/snapshot.py (`git log --diff-filter=A -- bot/github/snapshot.py`), 31875f1.
PREVIOUS_REV = "7bc54f3428ff7ea744f3dfc05650ab103717e88d"
SMALL_LATENCY_S = 0.05
GOAL_THROUGHPUT_RATIO = 2.0


async def _build(case: Case) -> Any:
    return await build_context(
        PullRequestMeta(title="t"), case.diff, case.files, case.read, estimator=TokenEstimator()
    )


def _best(run: Any, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def _peak_mib(run: Any) -> float:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def context_vs_diff(repeats: int, sizes: tuple[tuple[int, int], ...]) -> list[dict[str, Any]]:
    rows = []
    for lines, files in sizes:
        case = synthetic(lines, files, repo_files=max(1_000, files))
        build = _best(lambda c=case: asyncio.run(_build(c)), repeats)
        parse = _best(lambda c=case: PatchSet(c.diff), repeats)
        rows.append(
            {
                "changed_lines": case.changed_lines,
                "files": files,
                "diff_mib": round(len(case.diff) / 2**20, 2),
                "build_s": round(build, 3),
                "bare_parse_s": round(parse, 3),
                "ratio_to_parse": round(build / parse, 2) if parse else None,
                "peak_mib": round(_peak_mib(lambda c=case: asyncio.run(_build(c))), 1),
            }
        )
    return rows


def context_vs_repo(repeats: int, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    rows = []
    base: float | None = None
    for repo_files in sizes:
        case = synthetic(1_000, 20, repo_files=repo_files)
        build = _best(lambda c=case: asyncio.run(_build(c)), repeats)
        base = base or build
        rows.append(
            {
                "repo_files": len(case.files),
                "changed_lines": case.changed_lines,
                "build_s": round(build, 3),
                "ratio_to_1k_files": round(build / base, 2),
            }
        )
    return rows


# --- GitHub requests per review -------------------------------------------------------

_CONTENT = ("/git/blobs/", "/tarball/", "/codeload/", "/git/trees/", "/contents/")


def _files_read() -> float:
    from prometheus_client import REGISTRY

    return sum(
        s.value
        for metric in REGISTRY.collect()
        if metric.name == "council_github_blob_reads"
        for s in metric.samples
        if s.name.endswith("_total")
    )


async def github_requests(tmp: Path) -> dict[str, Any]:
    """A `/council quick` review of 30 changed files in a 300-file repository whose other
    files import them (tests/service/test_github_budget.py's pull request), end to end:
    uvicorn, arq on Redis, the fake GitHub and model servers. Baseline, same run: what the
    same review costs when every file it read is one request."""
    from tests.service.test_github_budget import KEYS, progress, review, seed
    from tests.support.council_answers import CouncilScript
    from tests.support.github_server import run_fake_github
    from tests.support.model_server import run_fake_model_server
    from tests.support.service import app_settings, running_app

    with run_fake_github() as gh, run_fake_model_server() as models:
        seed(gh)
        models.default(CouncilScript().reply)
        settings = app_settings(tmp, models, gh, KEYS[0], check_update_interval_s=5.0)
        async with running_app(settings) as app:
            read_before = _files_read()
            first = await review(gh, app, "/council quick")
            read_first = _files_read() - read_before
            second = await review(gh, app, "/council quick")
    content = [c for c in first if any(k in c.path for k in _CONTENT)]
    per_file = len(first) - len(content) + read_first
    return {
        "requests": len(first),
        "progress_updates": sum(progress(c) for c in first),
        "content_requests": len(content),
        "files_read": int(read_first),
        "baseline_one_request_per_file": int(per_file),
        "ratio_to_baseline": round(len(first) / per_file, 3) if per_file else None,
        "same_head_again": len(second),
    }


def print_github(row: dict[str, Any]) -> None:
    print("GitHub requests per review (30 changed files, 300-file repository)")
    print(
        f"  {row['requests']} requests ({row['progress_updates']} progress updates, "
        f"{row['content_requests']} for contents) for {row['files_read']} files read; "
        f"one request per file read would be {row['baseline_one_request_per_file']}: "
        f"x{row['ratio_to_baseline']}; the same head again: {row['same_head_again']}"
    )


# --- the engine: CPU and throughput ----------------------------------------------------


async def engine(repeats: int) -> dict[str, Any]:
    """bench/deliberation.py's engine measures: CPU per 5-seat board (answers at once) and
    boards per minute, 4 at a time (a worker's COUNCIL_MAX_JOBS) against one at a time (the
    baseline, same run), on the SQL ledger against a fake model server in another process."""
    from deliberation import measure_engine_cpu

    together = await measure_engine_cpu(repeats, jobs=4)
    alone = await measure_engine_cpu(1, jobs=1)
    per_minute = together["throughput"]["per_minute"]
    return {
        "engine_cpu_s_memory_ledger": round(together["memory"]["engine_cpu_s"], 3),
        "engine_cpu_s_sql_ledger": round(together["sql"]["engine_cpu_s"], 3),
        "transactions_sql": together["sql"]["transactions"],
        "events_sql": together["sql"]["events"],
        "per_minute_4_at_once": round(per_minute, 1),
        "per_minute_one_at_a_time": round(alone["throughput"]["per_minute"], 1),
        "ratio_to_one_at_a_time": round(per_minute / alone["throughput"]["per_minute"], 2),
        "process_cpu_s_per_deliberation": round(
            together["throughput"]["process_cpu_s_per_deliberation"], 3
        ),
    }


def print_engine(row: dict[str, Any]) -> None:
    print("Engine (5-seat board, answers at once)")
    print(
        f"  CPU per deliberation: {row['engine_cpu_s_memory_ledger']:.3f} s (in-memory ledger), "
        f"{row['engine_cpu_s_sql_ledger']:.3f} s (SQLite ledger, {row['transactions_sql']:g} "
        f"transactions for {row['events_sql']} events; goal < 0.25 s)"
    )
    print(
        f"  in one process with the fake in another: 4 at once {row['per_minute_4_at_once']} "
        f"boards per minute; one at a time: "
        f"{row['per_minute_one_at_a_time']} (x{row['ratio_to_one_at_a_time']}); process CPU "
        f"per board {row['process_cpu_s_per_deliberation']:.3f} s"
    )


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )


@contextlib.contextmanager
def _previous_tree(rev: str) -> Iterator[tuple[Path | None, str]]:
    """A temporary detached worktree of `rev` (removed after), or None and why not."""
    if shutil.which("git") is None:
        yield None, "git is not installed"
        return
    if _git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").returncode != 0:
        yield None, f"revision {rev[:7]} is not in this clone (a shallow clone?)"
        return
    tmp = Path(tempfile.mkdtemp(prefix="pr-council-previous-"))
    tree = tmp / "tree"
    added = _git("worktree", "add", "--detach", "--quiet", str(tree), rev)
    try:
        if added.returncode != 0:
            yield None, f"git worktree add failed: {added.stderr.strip()}"
        else:
            yield tree, ""
    finally:
        if added.returncode == 0:
            _git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(tmp, ignore_errors=True)


def _probe(tree: Path, url: str, context: Path, jobs: int, boards: int) -> dict[str, Any]:
    """bench/_throughput_probe.py with `tree`'s bot first on sys.path."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(Path(__file__).parent / "_throughput_probe.py")]
    args = ["--url", url, "--context", str(context), "--jobs", str(jobs)]
    done = subprocess.run(
        [*command, *args, "--boards", str(boards)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the probe failed in {tree}:\n{done.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(row["bot"]) != (tree / "bot").resolve():
        raise RuntimeError(f"the probe in {tree} imported bot from {row['bot']}")
    return row


def _throughput_row(row: dict[str, Any], server_cpu: float) -> dict[str, Any]:
    cpu = row["process_cpu_s_per_board"]
    return {
        "per_minute": round(row["per_minute"], 1),
        "process_cpu_s_per_board": round(cpu, 3),
        "cpu_bound_per_minute": round(60 / cpu, 1),
        # The warm-up board is in it too: the server's CPU per board it served.
        "server_cpu_s_per_board": round(server_cpu / (row["boards"] + 1), 3),
    }


def against_previous(boards: int, jobs: int = 4) -> dict[str, Any]:
    """Boards per minute, `jobs` at a time, of this tree and of PREVIOUS_REV, back to back
    against one fake server process, at latency 0 and SMALL_LATENCY_S per call."""
    from deliberation import _ServerProcess, make_context

    from tests.support.model_server import FakeModelServer

    result: dict[str, Any] = {"revision": PREVIOUS_REV, "jobs_at_once": jobs, "boards": boards}
    with _previous_tree(PREVIOUS_REV) as (old, why), tempfile.TemporaryDirectory() as tmp:
        result["skipped"] = why or None
        context = Path(tmp) / "context.txt"
        context.write_text(make_context(FakeModelServer()))
        trees = {"previous": old} if old is not None else {}
        trees["new"] = ROOT
        rows = []
        for latency in (0.0, SMALL_LATENCY_S):
            row: dict[str, Any] = {"latency_s": latency}
            with _ServerProcess(latency) as served:
                for name, tree in list(trees.items()):
                    served.reset()
                    began = served.cpu()
                    try:
                        probe = _probe(tree, served.server.url, context, jobs, boards)
                    except (RuntimeError, subprocess.TimeoutExpired) as error:
                        if name == "new":
                            raise
                        # The old tree no longer runs here (a dependency moved on): say so.
                        result["skipped"] = f"the previous code's probe failed: {error}"
                        del trees[name]
                        continue
                    row[name] = _throughput_row(probe, served.cpu() - began)
            if "previous" in row:
                row["ratio"] = round(row["new"]["per_minute"] / row["previous"]["per_minute"], 2)
                row["cpu_bound_ratio"] = round(
                    row["new"]["cpu_bound_per_minute"] / row["previous"]["cpu_bound_per_minute"],
                    2,
                )
            rows.append(row)
    result["rows"] = rows
    return result


def print_previous(result: dict[str, Any]) -> None:
    jobs = result["jobs_at_once"]
    where = "not measured" if result["skipped"] else "a worktree"
    print(
        f"Worker throughput against the previous code ({result['revision'][:7]}, {where}; "
        f"{result['boards']} boards {jobs} at a time, SQL ledger, fake server in another process)"
    )
    if result["skipped"]:
        print(f"  previous code not measured: {result['skipped']}")
    for row in result["rows"]:
        new, old = row["new"], row.get("previous")
        at = "answers at once" if row["latency_s"] == 0 else f"{row['latency_s']:g} s per call"
        if old is None:
            print(f"  {at}: boards per minute, {jobs} at once: new {new['per_minute']:.0f}")
        else:
            met = "met" if row["ratio"] >= GOAL_THROUGHPUT_RATIO else "NOT met"
            print(
                f"  {at}: boards per minute, {jobs} at once: new {new['per_minute']:.0f}; "
                f"previous code {old['per_minute']:.0f} (same run): x{row['ratio']} "
                f"(goal x{GOAL_THROUGHPUT_RATIO:g}): {met}"
            )
        line = f"new {new['cpu_bound_per_minute']:.0f} ({new['process_cpu_s_per_board']:.3f} s)"
        if old is not None:
            line += (
                f"; previous code {old['cpu_bound_per_minute']:.0f} "
                f"({old['process_cpu_s_per_board']:.3f} s): x{row['cpu_bound_ratio']}"
            )
        print(f"    CPU-bound limit, 60 / process CPU per board: {line}")
        servers = f"new {new['server_cpu_s_per_board']:.3f} s"
        if old is not None:
            servers += f", previous code {old['server_cpu_s_per_board']:.3f} s"
        print(f"    fake server CPU per board: {servers}")


def print_context(diff_rows: list[dict[str, Any]], repo_rows: list[dict[str, Any]]) -> None:
    print("Context work vs diff size (60,000-token budget; baseline: unidiff's bare parse)")
    print(f"  {'changed lines':>13} {'files':>5} {'diff':>8} {'build':>8} {'parse':>8} "
          f"{'build/parse':>11} {'peak':>9}")  # fmt: skip
    for r in diff_rows:
        print(
            f"  {r['changed_lines']:>13,} {r['files']:>5} {r['diff_mib']:>6.1f}MB "
            f"{r['build_s']:>7.2f}s {r['bare_parse_s']:>7.2f}s {r['ratio_to_parse']:>11} "
            f"{r['peak_mib']:>6.1f}MiB"
        )
    largest = diff_rows[-1]
    met = "met" if largest["build_s"] < GOAL_200K_S else "NOT met"
    print(f"  {largest['changed_lines']:,} lines in {largest['build_s']:.2f} s "
          f"(goal < {GOAL_200K_S:g} s): {met}")  # fmt: skip
    print("Context work vs repository size (1,000 changed lines; baseline: the 1k-file repo)")
    for r in repo_rows:
        print(f"  {r['repo_files']:>7,} files {r['build_s']:>7.2f}s  x{r['ratio_to_1k_files']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller cases, one repeat")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "scale.json"
    )
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    diff_sizes = DIFF_SIZES[:2] if args.quick else DIFF_SIZES
    repo_sizes = REPO_SIZES[:2] if args.quick else REPO_SIZES
    diff_rows = context_vs_diff(repeats, diff_sizes)
    repo_rows = context_vs_repo(repeats, repo_sizes)
    print_context(diff_rows, repo_rows)
    with tempfile.TemporaryDirectory() as tmp:
        gh_row = asyncio.run(github_requests(Path(tmp)))
    print_github(gh_row)
    engine_row = asyncio.run(engine(repeats))
    print_engine(engine_row)
    previous = against_previous(12 if args.quick else 24)
    print_previous(previous)
    args.out.parent.mkdir(exist_ok=True)
    results = {
        "context_vs_diff": diff_rows,
        "context_vs_repo": repo_rows,
        "github": gh_row,
        "engine": engine_row,
        "throughput_against_previous": previous,
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
