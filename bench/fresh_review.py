"""A fresh `council review` against its critical path: what a CLI run or an Action run pays.

Each run is `council review --diff <small diff> --protocol P --json` as a new process
(interpreter start-up, imports, settings, the store created in a new SQLite file, the
review, the exit) against the fake model server, every answer taking L seconds, its stream
beginning at once. The model is an OpenAI-compatible endpoint (`box:local-model`) whose
structured mode a fresh process does not know:

- "auto": the endpoint in `auto` mode: the process's first structured call negotiates;
- "set": the same endpoint with its mode set in the settings (`structured: json_schema`).

The critical path is L per sequential step of the protocol's planned calls
(tests.support.critical_path: each phase's member calls go out at once, an officer's call
is a step of its own; the chair's merge, made only when two findings overlap, is no step
when it was not made: the scripted seats report none). The baseline, same run: `council
review --dry-run` on the same diff (start-up without a model call). Reported per protocol
and case, medians over `repeats` (after one warm-up of each command): the wall time and its
three parts (start-up: process start to the first request the fake received; the model
calls: to the last answer; the tail: to the exit), the wall time over the critical path,
and the goal: wall <= 1.10 x critical path + 1 s.

Run: `python -m bench.fresh_review` (also a part of `python bench/deliberation.py`).
Writes bench/results/fresh_review.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.startup import COUNCIL, environment  # noqa: E402
from tests.support.council_answers import CouncilScript  # noqa: E402
from tests.support.critical_path import critical_steps  # noqa: E402
from tests.support.diffs import AUTH_DIFF  # noqa: E402
from tests.support.model_server import FakeModelServer, run_fake_model_server  # noqa: E402

MODEL = "local-model"
REF = f"box:{MODEL}"
CASES = {"auto": "auto", "set": "json_schema"}  # case -> the endpoint's `structured`
# The issue's own shape: two seats raise the same finding, so the chair's merge runs too
# (a step of its own on the critical path: quick's 9 s at 3 s answers).
FINDING = {
    "severity": "critical",
    "path": "app/auth.py",
    "start_line": 2,
    "title": "Hard-coded admin password bypasses the check",
    "detail": "Any user who sends the password 'admin' is logged in without check().",
}
WITH_FINDINGS = {"Application Security Reviewer": [FINDING], "Correctness Reviewer": [FINDING]}
GOAL_RATIO, GOAL_SLACK_S = 1.10, 1.0


def review_env(home: Path, server: FakeModelServer, structured: str, run: int) -> dict[str, str]:
    """The start-up bench's environment (no keys, no COUNCIL_* settings, byte code cached
    under `home`), the endpoint at the fake, and a store of its own for this run."""
    env = environment(home)
    env.update(
        {
            "COUNCIL_ENDPOINTS": json.dumps(
                {"box": {"base_url": server.openai_url, "structured": structured}}
            ),
            "COUNCIL_MODELS": REF,
            "DATABASE_URL": f"sqlite+aiosqlite:///{home / f'council-{run}.db'}",
        }
    )
    return env


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(time.monotonic() at the start, wall seconds) of one run, which must succeed."""
    started = time.monotonic()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return started, wall


def one_review(
    server: FakeModelServer, home: Path, diff: Path, protocol: str, case: str, run: int
) -> dict[str, Any]:
    server.calls.clear()
    argv = [str(COUNCIL), "review", "--diff", str(diff), "--protocol", protocol, "--json"]
    started, wall = timed(argv, review_env(home, server, CASES[case], run), home)
    calls = list(server.calls)
    made = {c.request.output_name for c in calls}
    first, last = min(c.started_at for c in calls), max(c.ended_at for c in calls)
    return {
        "wall_s": wall,
        "startup_s": first - started,
        "model_s": last - first,
        "tail_s": started + wall - last,
        "calls": len(calls),
        "steps": critical_steps(protocol, made),
        "json_schema_requests": sum(
            (c.request.body.get("response_format") or {}).get("type") == "json_schema"
            for c in calls
        ),
    }


def measure(latency: float, repeats: int, protocols: list[str]) -> dict[str, Any]:
    result: dict[str, Any] = {"latency_s": latency, "repeats": repeats, "protocols": {}}
    with (
        run_fake_model_server() as server,
        tempfile.TemporaryDirectory(prefix="council-fresh-") as tmp,
    ):
        home = Path(tmp)
        diff = home / "change.diff"
        diff.write_text(AUTH_DIFF)
        plain = CouncilScript(latency_s=latency)
        found = CouncilScript(
            latency_s=latency, findings=WITH_FINDINGS, merge_groups=[["F1", "F2"]]
        )
        server.default(plain.reply)
        counter = itertools.count()
        dry = [str(COUNCIL), "review", "--dry-run", "--diff", str(diff), "--protocol", "quick"]
        dry_env = review_env(home, server, "auto", next(counter))
        timed(dry, dry_env, home)  # warm: byte code compiled, the OS's caches filled
        baseline = statistics.median(timed(dry, dry_env, home)[1] for _ in range(repeats))
        result["dry_run_s"] = baseline
        for protocol in protocols:
            rows: dict[str, Any] = {}
            for case in [*CASES, "findings"]:
                server.default((found if case == "findings" else plain).reply)
                mode = "auto" if case == "findings" else case
                one_review(server, home, diff, protocol, mode, next(counter))  # warm
                runs = [
                    one_review(server, home, diff, protocol, mode, next(counter))
                    for _ in range(repeats)
                ]
                path = latency * len(runs[0]["steps"])
                wall = statistics.median(r["wall_s"] for r in runs)
                rows[case] = {
                    "structured": CASES[mode],
                    "calls": runs[0]["calls"],
                    "json_schema_requests": runs[0]["json_schema_requests"],
                    "steps": runs[0]["steps"],
                    "critical_path_s": path,
                    "wall_s": wall,
                    "startup_s": statistics.median(r["startup_s"] for r in runs),
                    "model_s": statistics.median(r["model_s"] for r in runs),
                    "tail_s": statistics.median(r["tail_s"] for r in runs),
                    "wall_vs_critical_path": wall / path,
                    "goal_max_s": GOAL_RATIO * path + GOAL_SLACK_S,
                    "met": wall <= GOAL_RATIO * path + GOAL_SLACK_S,
                }
            result["protocols"][protocol] = rows
    return result


def print_table(result: dict[str, Any]) -> None:
    print(
        f"Fresh `council review` process, {REF} at the fake, every answer L = "
        f"{result['latency_s']:g} s, median of {result['repeats']}; baseline, the dry run: "
        f"{result['dry_run_s']:.2f} s"
    )
    print(
        f"  {'protocol, mode':<24} {'calls':>5} {'path':>6} {'wall':>7} {'start-up':>8} "
        f"{'model':>7} {'tail':>6} {'x path':>6} {'goal':>7} {'met':>3}"
    )
    for protocol, rows in result["protocols"].items():
        for case, row in rows.items():
            name = f"{protocol}, {case} ({row['structured']})"
            print(
                f"  {name:<24} {row['calls']:>5} {row['critical_path_s']:>5.1f}s "
                f"{row['wall_s']:>6.2f}s {row['startup_s']:>7.2f}s {row['model_s']:>6.2f}s "
                f"{row['tail_s']:>5.2f}s {row['wall_vs_critical_path']:>6.3f} "
                f"{row['goal_max_s']:>6.2f}s {'yes' if row['met'] else 'NO':>3}"
            )
    print(
        f"  goal: wall <= {GOAL_RATIO:.2f} x critical path + {GOAL_SLACK_S:g} s "
        "(critical path: L per step of the protocol's planned calls that was made)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=3.0, help="seconds per answer (L)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--protocols", default="quick,board", help="comma-separated")
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "fresh_review.json"
    )
    args = parser.parse_args()
    result = measure(args.latency, args.repeats, args.protocols.split(","))
    print_table(result)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
