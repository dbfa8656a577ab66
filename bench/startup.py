"""Command-line start-up: wall time of `council` commands against a bare `python -c pass`.

Cases: `python -c pass` (the interpreter alone, the baseline, same run), `council --help`,
`council --version`, `council agents --help`, `council context --diff`, and `council review
--dry-run --diff` on a small fixture diff (written to a temporary directory, where the
commands also run), without a model and with `--models anthropic:<model>`. The
environment has no provider key, no COUNCIL_* settings and an unreachable Ollama URL, so
the dry run calls no model and waits for nothing. Byte code is cached as on a user's
machine (under the temporary directory, PYTHONPYCACHEPREFIX, so the tree is not written).
Each command runs `--repeats` times after one warm-up run; reported per case: the median
and the fastest wall time, the median CPU time (user + system, which a busy machine moves
less), and the median wall time as a multiple of the baseline's.

Goals: `council --help` under 0.5 s, `council review --dry-run` on a small diff under 1.5 s.

Run: `python bench/startup.py` (or `make bench`). Writes bench/results/startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the shared test diff lives in tests/support

from tests.support.diffs import AUTH_DIFF  # noqa: E402

PYTHON = Path(sys.executable)
COUNCIL = PYTHON.with_name("council")
SONNET = "anthropic:claude-sonnet-5-5"
GOALS_S = {"council --help": 0.5, "council review --dry-run --diff": 1.5}

DIFF = AUTH_DIFF


@dataclass
class Result:
    case: str
    median_s: float
    min_s: float
    cpu_median_s: float  # user + system: less moved than wall time by a busy machine
    ratio: float  # median over the baseline's median
    goal_s: float | None
    met: bool | None


def environment(home: Path) -> dict[str, str]:
    """This environment without provider keys or our settings; state under `home`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "COUNCIL_", "DATABASE_", "GITHUB_"))
        and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        {
            "PYTHONPYCACHEPREFIX": str(home / "pycache"),
            "COUNCIL_OLLAMA_URL": "http://127.0.0.1:9",  # refused at once: no local default
            "DATABASE_URL": f"sqlite+aiosqlite:///{home / 'council.db'}",
            "XDG_STATE_HOME": str(home / "state"),
        }
    )
    return env


def cases(diff: Path) -> dict[str, list[str]]:
    council = str(COUNCIL)
    return {
        "python -c pass": [str(PYTHON), "-c", "pass"],
        "council --help": [council, "--help"],
        "council --version": [council, "--version"],
        "council agents --help": [council, "agents", "--help"],
        "council context --diff": [council, "context", "--diff", str(diff)],
        "council review --dry-run --diff": [council, "review", "--dry-run", "--diff", str(diff)],
        # A configured model: the board is planned for it, its SDK still not loaded.
        "... --models anthropic:<model>": [
            council,
            *("review", "--dry-run", "--diff", str(diff), "--models", SONNET),
        ],
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def times(
    argv: list[str], repeats: int, env: dict[str, str], cwd: Path
) -> list[tuple[float, float]]:
    """(wall, cpu) seconds of each run."""

    def once() -> tuple[float, float]:
        cpu = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=False)
        elapsed = time.perf_counter() - start
        cpu = _children_cpu() - cpu
        if done.returncode != 0:
            raise SystemExit(
                f"{' '.join(argv)} exited {done.returncode}:\n"
                f"{done.stderr.decode('utf-8', 'replace')}"
            )
        return elapsed, cpu

    once()  # warm
    return [once() for _ in range(repeats)]


def measure(repeats: int) -> list[Result]:
    with tempfile.TemporaryDirectory(prefix="council-startup-") as tmp:
        work = Path(tmp)
        diff = work / "change.diff"
        diff.write_text(DIFF)
        env = environment(work)
        runs = {name: times(argv, repeats, env, work) for name, argv in cases(diff).items()}
    baseline = statistics.median(wall for wall, _ in runs["python -c pass"])
    results = []
    for name, timed in runs.items():
        walls = [wall for wall, _ in timed]
        median = statistics.median(walls)
        goal = GOALS_S.get(name)
        results.append(
            Result(
                case=name,
                median_s=median,
                min_s=min(walls),
                cpu_median_s=statistics.median(cpu for _, cpu in timed),
                ratio=median / baseline if baseline else 0.0,
                goal_s=goal,
                met=None if goal is None else median < goal,
            )
        )
    return results


def print_table(results: list[Result]) -> None:
    header = (
        f"{'case':<34} {'median s':>9} {'min s':>7} {'cpu s':>7} {'x python':>9} "
        f"{'goal s':>7} {'met':>4}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        goal = f"{r.goal_s:.1f}" if r.goal_s is not None else "-"
        met = "-" if r.met is None else ("yes" if r.met else "NO")
        print(
            f"{r.case:<34} {r.median_s:>9.3f} {r.min_s:>7.3f} {r.cpu_median_s:>7.3f} "
            f"{r.ratio:>9.1f} {goal:>7} {met:>4}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "startup.json"
    )
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results = measure(args.repeats)
    load = (load_before, os.getloadavg()[0])
    print_table(results)
    print(
        f"\n1-minute load average {load[0]:.1f} before, {load[1]:.1f} after, {os.cpu_count()} CPUs"
    )
    goals = [r for r in results if r.goal_s is not None]
    print(
        "; ".join(
            f"{r.case} {r.median_s:.2f} s (goal < {r.goal_s:g} s): "
            + ("met" if r.met else "NOT met")
            for r in goals
        )
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "repeats": args.repeats,
                "cpus": os.cpu_count(),
                "load_average": {"before": load[0], "after": load[1]},
                "goals": {r.case: {"max_s": r.goal_s, "met": r.met} for r in goals},
                "results": [asdict(r) for r in results],
            },
            indent=2,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
