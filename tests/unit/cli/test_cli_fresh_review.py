"""A fresh `council review` process at its critical path: the seats of a phase call together
even while the process has yet to learn its endpoint's structured mode, at the default
settings (retries, timeouts and deadlines as a user has them)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.support.cli import COUNCIL, council_env
from tests.support.council_answers import CouncilScript
from tests.support.critical_path import critical_steps
from tests.support.diffs import AUTH_DIFF
from tests.support.model_server import FakeModelServer

ANSWER_S = 2.0  # every answer's time, its stream beginning at once
MODEL = "box:local-model"  # an endpoint in `auto` mode: a fresh process negotiates


def fresh_review(
    models: FakeModelServer, tmp_path: Path, diff: Path, store: str
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """`council review --protocol quick` as a new process on a new store, at the default
    settings; byte code cached as an installed package has it. (The result, when it
    started and its wall time, on `time.monotonic()`, the fake's clock.)"""
    env = council_env(
        models,
        tmp_path,
        COUNCIL_ENDPOINTS=json.dumps({"box": {"base_url": models.openai_url}}),
        COUNCIL_MODELS=MODEL,
        DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / store}",
        PYTHONPYCACHEPREFIX=str(tmp_path / "pycache"),
    )
    for setting in ("COUNCIL_MAX_RETRIES", "COUNCIL_CALL_DEADLINE_S", "PYTHONDONTWRITEBYTECODE"):
        env.pop(setting, None)
    argv = [COUNCIL, "review", "--diff", str(diff), "--protocol", "quick", "--json"]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    return done, started, time.monotonic() - started


def test_a_fresh_quick_review_runs_at_its_critical_path(
    models: FakeModelServer, tmp_path: Path
) -> None:
    diff = tmp_path / "change.diff"
    diff.write_text(AUTH_DIFF)
    models.default(CouncilScript().reply)
    warm, _, _ = fresh_review(models, tmp_path, diff, "warm.db")  # compiles the byte code
    assert warm.returncode == 0, warm.stderr
    models.reset()
    models.default(CouncilScript(latency_s=ANSWER_S).reply)
    done, started, wall = fresh_review(models, tmp_path, diff, "council.db")
    assert done.returncode == 0, done.stderr
    advisory = json.loads(done.stdout)
    assert advisory["resolution"] == "APPROVED" and len(advisory["seats"]) == 3
    calls = list(models.calls)
    assert advisory["usage"]["calls"] == len(calls)
    path = ANSWER_S * len(critical_steps("quick", {c.request.output_name for c in calls}))
    timeline = [
        (c.label, round(c.started_at - started, 2), round(c.ended_at - started, 2)) for c in calls
    ]
    # The three seats' assessments reached the server before the first of them was answered.
    assess = [c for c in calls if c.request.output_name == "submit_assessment"]
    assert len(assess) == 3
    assert max(c.started_at for c in assess) < min(c.ended_at for c in assess), timeline
    # From the first request to the last answer: the critical path (one answer per step).
    first, last = min(c.started_at for c in calls), max(c.ended_at for c in calls)
    assert last - first <= 1.10 * path, timeline
    # From the first request to the process's exit (the store written, the advisory
    # printed): within the goal. Start-up before it is measured by bench/fresh_review.py.
    assert started + wall - first <= 1.10 * path + 1.0, (wall, timeline)
    # ...and the process ends once its work is done: no interpreter teardown after the
    # last answer's advisory is stored and printed (it took 0.4 s).
    assert started + wall - last <= 0.5, (wall, timeline)
