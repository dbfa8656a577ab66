"""A review on a self-hosted model server the developer started: the manual check of
README's "CPU servers" figures (`make bench-local`).

Not part of `make bench` or the tests: it needs a real server, and on a CPU a review takes
minutes. Start one first, for example llama-cpp-python's:

    python -m llama_cpp.server --model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        --n_ctx 8192 --port 8000

then `make bench-local` (or `python bench/local.py --base-url http://127.0.0.1:8000/v1`).

What it runs, each as a new `council` process with the product's defaults for a local
endpoint (`{"local": true}` and nothing else set): `council models check --json` (what the
endpoint does, measured), then `council review --base HEAD~1 --json` in a small repository
it writes: one commit of a 30-line change (a handler that builds SQL from a request
argument and returns another user's orders), once per protocol asked (`quick`; `board`
with `--size 3 --rounds 1`). For each it records the wall time, the resolution, how many
seats answered, the calls and their endings, the tokens (and how many the estimator
counted), and writes bench/results/local.json. The goals (issue 23): quick ends with a
verdict from at least 2 seats in under 20 minutes, the 3-seat board in under 60.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COUNCIL = Path(sys.executable).parent / "council"
RESULTS = ROOT / "bench" / "results" / "local.json"
GOALS_S = {"quick": 20 * 60, "board": 60 * 60}

BEFORE = '''"""Orders of the shop's customers."""

import sqlite3


def connect(path: str) -> sqlite3.Connection:
    return sqlite3.connect(path)


def order_count(db: sqlite3.Connection, user_id: int) -> int:
    row = db.execute("SELECT COUNT(*) FROM orders WHERE user_id = ?", (user_id,)).fetchone()
    return int(row[0])
'''

ADDED = '''

def orders_of(db: sqlite3.Connection, session: dict, request: dict) -> list[dict]:
    """The orders a customer asks for, newest first, filtered by status."""
    user_id = request.get("user_id", session["user_id"])
    status = request.get("status", "open")
    limit = int(request.get("limit", 50))
    query = (
        "SELECT id, user_id, status, total FROM orders "
        f"WHERE user_id = {user_id} AND status = '{status}' "
        "ORDER BY created_at DESC"
    )
    rows = db.execute(query).fetchall()
    orders = []
    for row in rows[:limit]:
        orders.append(
            {"id": row[0], "user_id": row[1], "status": row[2], "total": row[3]}
        )
    return orders


def cancel_order(db: sqlite3.Connection, session: dict, order_id: int) -> bool:
    """Cancel one of the customer's open orders."""
    cursor = db.execute(
        "UPDATE orders SET status = 'cancelled' WHERE id = ? AND status = 'open'",
        (order_id,),
    )
    db.commit()
    return cursor.rowcount == 1
'''


def write_repository(where: Path) -> Path:
    """A repository whose HEAD adds the 30-line change to shop/orders.py."""
    repo = where / "shop"
    (repo / "shop").mkdir(parents=True)
    target = repo / "shop" / "orders.py"
    target.write_text(BEFORE)
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Orders: count"], check=True)
    target.write_text(BEFORE + ADDED)
    subprocess.run([*git, "commit", "-q", "-am", "Orders: list and cancel a customer's orders"])
    return repo


def environment(home: Path, base_url: str, model: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "COUNCIL_", "DATABASE_", "GITHUB_"))
    }
    env.update(
        {
            "COUNCIL_ENDPOINTS": json.dumps({"local": {"base_url": base_url, "local": True}}),
            "COUNCIL_MODELS": f"local:{model}",
            "COUNCIL_OLLAMA_URL": "http://127.0.0.1:9",
            "DATABASE_URL": f"sqlite+aiosqlite:///{home / 'council.db'}",
            "XDG_STATE_HOME": str(home / "state"),
        }
    )
    return env


def run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, int, str, str]:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    return time.monotonic() - started, done.returncode, done.stdout, done.stderr


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """What a reader of the figures needs out of `council review --json`."""
    seats = report.get("seats") or []
    answered = [s for s in seats if s.get("state") in ("ok", "abstained", "no_vote")]
    usage = report.get("usage") or {}
    return {
        "resolution": report.get("resolution"),
        "seats": len(seats),
        "seats_answered": len(answered),
        "seat_states": {
            f"{s.get('id')} {s.get('persona')}": [s.get("state"), s.get("verdict"), s.get("vote")]
            for s in seats
        },
        "calls": usage.get("calls"),
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "estimated_tokens": usage.get("estimated_tokens"),
        "findings": [f.get("title") for f in report.get("findings") or []][:8],
        "notes": report.get("notes"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--protocols", default="quick,board")
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help="Run the `bot` of another checkout (a baseline: `git worktree add ../base REV`).",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    council = [str(COUNCIL)]
    if args.source is not None:
        boot = f"import sys; sys.path.insert(0, {str(args.source.resolve())!r}); "
        main = "from bot.cli import main; sys.argv[0] = 'council'; main()"
        council = [sys.executable, "-c", boot + main]
    results: dict[str, Any] = {"base_url": args.base_url, "model": args.model, "runs": {}}
    with tempfile.TemporaryDirectory(prefix="council-local-") as tmp:
        home = Path(tmp)
        repo = write_repository(home)
        env = environment(home, args.base_url, args.model)
        wall, code, out, err = run([*council, "models", "check", "--json"], repo, env)
        print(f"models check: {wall:.0f} s, exit {code}", flush=True)
        try:
            results["models_check"] = {"wall_s": round(wall, 1), "report": json.loads(out)}
        except json.JSONDecodeError:
            results["models_check"] = {"wall_s": round(wall, 1), "stdout": out, "stderr": err}
        for protocol in args.protocols.split(","):
            command = [*council, "review", "--base", "HEAD~1", "--protocol", protocol]
            if protocol == "board":
                command += ["--size", "3", "--rounds", "1"]
            wall, code, out, err = run([*command, "--json"], repo, env)
            entry: dict[str, Any] = {"wall_s": round(wall, 1), "exit": code}
            try:
                report = json.loads(out)
                entry.update(summary(report))
                entry["report"] = report
            except json.JSONDecodeError:
                entry.update(stdout=out[-4000:], stderr=err[-4000:])
            goal = GOALS_S.get(protocol)
            entry["goal_s"] = goal
            results["runs"][protocol] = entry
            print(
                f"{protocol}: {wall / 60:.1f} min (goal {goal and goal // 60} min), exit {code}, "
                f"{entry.get('resolution')}, {entry.get('seats_answered')} of "
                f"{entry.get('seats')} seats answered",
                flush=True,
            )
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
