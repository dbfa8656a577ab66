"""Context builder speed and memory, against unidiff's bare parse of the same diff.

Cases: synthetic pull requests of 10, 1,000 and 50,000 changed lines over 1 to 500 files
(a repository of Python modules read from memory, so related-file discovery and widening
run for real), and this repository's own history (each of its recent commits, and the
whole range as one diff; files are read from git once, before timing). Reported per case:
median build time over repeats, changed lines per second, the bare `unidiff.PatchSet` parse
of the same diff (the baseline, same run), and peak memory from a separate traced run.

Goal: 50,000 changed lines in under 2 s.

Run: `python bench/context.py` (or `make bench`). Writes bench/results/context.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from unidiff.patch import PatchSet

from bot.context import PullRequestMeta, build_context
from bot.review.localrepo import LocalRepo
from bot.tokens import TokenEstimator

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 2.0
Reader = Callable[[str], Awaitable[bytes | None]]


@dataclass
class Case:
    name: str
    diff: str
    files: list[str]
    read: Reader
    changed_lines: int
    changed_files: int


@dataclass
class Result:
    case: str
    changed_files: int
    changed_lines: int
    build_median_s: float
    lines_per_s: float
    unidiff_median_s: float
    peak_mib: float
    sections: int
    tokens: int


# --- synthetic pull requests ---------------------------------------------------------


def _module(index: int, functions: int) -> list[str]:
    lines = [f"from pkg import mod{(index + 1) % 997}", "import os", ""]
    for f in range(functions):
        lines += [
            "",
            f"def func_{index}_{f}(items, limit=10):",
            f'    """Function {f} of module {index}."""',
            "    total = 0",
            "    for item in items[:limit]:",
            f"        total += item * {f}",
            "    return total",
        ]
    return lines


def synthetic(changed_lines: int, changed_files: int, repo_files: int = 1_000) -> Case:
    """`changed_files` modules of the repository each get an equal share of changed lines
    (as replaced lines, so each counts once as added and once as deleted, halved)."""
    per_file = max(1, changed_lines // changed_files // 2)
    heads: dict[str, bytes] = {}
    pieces = []
    for i in range(repo_files):
        lines = _module(i, max(4, per_file // 2 + 4))
        path = f"pkg/mod{i}.py"
        if i < changed_files:
            pieces.append(_replace_diff(path, lines, per_file))
            body = [line.replace("total += item", "total -= item", 1) for line in lines]
            heads[path] = ("\n".join(body) + "\n").encode()
        else:
            heads[path] = ("\n".join(lines) + "\n").encode()
    for i in range(0, repo_files, 50):
        heads[f"tests/test_mod{i}.py"] = f"from pkg.mod{i} import *\n".encode()
    heads["README.md"] = b"# Synthetic\n" + b"Words.\n" * 200

    async def read(path: str) -> bytes | None:
        return heads.get(path)

    diff = "".join(pieces)
    added = sum(
        1 for line in diff.split("\n") if line.startswith("+") and not line.startswith("+++")
    )
    deleted = sum(
        1 for line in diff.split("\n") if line.startswith("-") and not line.startswith("---")
    )
    return Case(
        f"synthetic {added + deleted:,} lines / {changed_files} files",
        diff,
        sorted(heads),
        read,
        added + deleted,
        changed_files,
    )


def _replace_diff(path: str, lines: list[str], count: int) -> str:
    """One hunk per changed line group of 5, each replacing lines with new ones."""
    out = [f"diff --git a/{path} b/{path}", "index 1111111..2222222 100644", f"--- a/{path}",
           f"+++ b/{path}"]  # fmt: skip
    done = 0
    number = 4
    while done < count and number + 8 < len(lines):
        take = min(5, count - done)
        ctx_before = lines[number - 3 : number]
        old = lines[number : number + take]
        new = [f"{line}  # changed" for line in old]
        after = lines[number + take : number + take + 3]
        out.append(
            f"@@ -{number - 2},{3 + take + len(after)} +{number - 2},{3 + take + len(after)} @@"
        )
        out += [f" {x}" for x in ctx_before] + [f"-{x}" for x in old] + [f"+{x}" for x in new]
        out += [f" {x}" for x in after]
        done += take
        number += take + 8
    return "\n".join(out) + "\n"


# --- this repository's history -------------------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True).stdout.decode(
        "utf-8", "replace"
    )


async def history_cases(commits: int) -> list[tuple[str, str, str]]:
    """(name, diff, revision) for recent commits and for the whole range."""
    shas = _git("log", "--format=%H", f"-{commits + 1}", "HEAD").split()
    cases = []
    for parent, sha in zip(shas[1:], shas[:-1], strict=False):
        cases.append((f"commit {sha[:8]}", _git("diff", "-M", parent, sha), sha))
    first = _git("rev-list", "--max-parents=0", "HEAD").split()[0]
    cases.append((f"range {first[:8]}..HEAD", _git("diff", "-M", first, "HEAD"), "HEAD"))
    return cases


def _count(diff: str) -> tuple[int, int]:
    lines = diff.split("\n")
    changed = sum(1 for line in lines if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))
    return changed, diff.count("\ndiff --git ") + diff.startswith("diff --git ")


# --- measuring -----------------------------------------------------------------------


async def _build(case: Case) -> tuple[int, int]:
    built = await build_context(
        PullRequestMeta(title=case.name, body="Benchmark."),
        case.diff,
        case.files,
        case.read,
        estimator=TokenEstimator(),
    )
    return len(built.sections), built.tokens


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(case: Case, repeats: int) -> Result:
    sections, tokens = asyncio.run(_build(case))  # warm: grammar loading, regex compiles
    build_s = _median_time(lambda: asyncio.run(_build(case)), repeats)
    parse_s = _median_time(lambda: PatchSet(case.diff), repeats)
    tracemalloc.start()
    asyncio.run(_build(case))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return Result(
        case=case.name,
        changed_files=case.changed_files,
        changed_lines=case.changed_lines,
        build_median_s=build_s,
        lines_per_s=case.changed_lines / build_s if build_s else 0.0,
        unidiff_median_s=parse_s,
        peak_mib=peak / 2**20,
        sections=sections,
        tokens=tokens,
    )


async def _snapshot(rev: str) -> dict[str, bytes]:
    """Every file at the revision, read once: the builder is measured, not git."""
    async with LocalRepo(ROOT, rev=rev) as repo:
        found = {p: await repo.read(p) for p in repo.files}
    return {p: data for p, data in found.items() if data is not None}


def _memory_reader(files: dict[str, bytes]) -> Reader:
    async def read(path: str) -> bytes | None:
        return files.get(path)

    return read


def measure_history(commits: int, repeats: int) -> list[Result]:
    results = []
    for name, diff, rev in asyncio.run(history_cases(commits)):
        files = asyncio.run(_snapshot(rev))
        changed, count = _count(diff)
        case = Case(name, diff, sorted(files), _memory_reader(files), changed, count)
        results.append(measure(case, repeats))
    return results


def print_table(results: list[Result]) -> None:
    header = (
        f"{'case':<40} {'files':>6} {'lines':>8} {'build s':>9} {'lines/s':>10} "
        f"{'unidiff s':>10} {'peak MiB':>9} {'tokens':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.case:<40} {r.changed_files:>6} {r.changed_lines:>8,} {r.build_median_s:>9.3f} "
            f"{r.lines_per_s:>10,.0f} {r.unidiff_median_s:>10.3f} {r.peak_mib:>9.1f} "
            f"{r.tokens:>8,}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--commits", type=int, default=8, help="Recent commits to measure.")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "context.json"
    )
    args = parser.parse_args()
    cases = [synthetic(10, 1), synthetic(1_000, 20), synthetic(50_000, 500)]
    results = [measure(c, args.repeats) for c in cases]
    results += measure_history(args.commits, args.repeats)
    print_table(results)
    largest = max(
        (r for r in results if r.case.startswith("synthetic")), key=lambda r: r.changed_lines
    )
    met = largest.build_median_s < GOAL_S
    print(
        f"\n{largest.changed_lines:,} changed lines in {largest.build_median_s:.2f} s "
        f"(goal < {GOAL_S:.0f} s): {'met' if met else 'NOT met'}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "repeats": args.repeats,
                "goal": {"changed_lines": largest.changed_lines, "max_s": GOAL_S, "met": met},
                "results": [asdict(r) for r in results],
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
