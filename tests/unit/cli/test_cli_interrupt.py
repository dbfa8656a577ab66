"""A command-line review stopped before it finished (Ctrl-C, or SIGTERM as a CI runner or a
`kill` sends it) ends `cancelled` in `council history`, never `running` for ever, and the
process says so and exits 130."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.cli import COUNCIL, council_env, run_council
from tests.support.council_answers import CouncilScript
from tests.support.diffs import AUTH_DIFF
from tests.support.model_server import FakeModelServer


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_review_ends_cancelled_in_the_history(
    models: FakeModelServer, tmp_path: Path, sent: signal.Signals
) -> None:
    models.default(CouncilScript(latency_s=30.0).reply)  # the seats are still thinking
    diff = tmp_path / "change.diff"
    diff.write_text(AUTH_DIFF)
    review = subprocess.Popen(
        [COUNCIL, "review", "--diff", str(diff), "--protocol", "quick", "--json"],
        env=council_env(models, tmp_path, COUNCIL_MODELS="openai:gpt-5.4"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not models.calls and time.monotonic() < deadline and review.poll() is None:
        time.sleep(0.05)
    assert models.calls, "no seat was called"
    review.send_signal(sent)
    out, err = review.communicate(timeout=30)
    assert review.returncode == 130, err
    assert "stopped; the review did not finish" in err
    assert out == ""  # no advisory: there is none
    history = run_council(None, tmp_path, "history", "--json")
    (record,) = json.loads(history.stdout)
    assert record["status"] == "cancelled", record
