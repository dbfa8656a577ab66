"""`council review` against a slow, silent server (issue 23, item 8): the console script,
a hosted model whose first vote comes after the call deadline, and a local llama-cpp-python
server whose streams report no usage. The JSON, its Markdown and the text for a person say
"no vote (timed out)", never "abstain", and say which tokens were estimated."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, FakeRequest, Reply
from tests.unit.cli.test_cli_review import DIFF, run_review

LOCAL_MODEL = "qwen2.5-coder:7b"
MODELS = f"anthropic:claude-sonnet-5-5,box:{LOCAL_MODEL}"
DEADLINE_S = 3.0
TIMED_OUT = "no vote (timed out)"
ESTIMATED = re.compile(r"bout [\d,]+ of the [\d,]+ tokens are estimated: the server reported")


def first_hosted_vote(r: FakeRequest) -> bool:
    return r.output_name == "submit_vote" and r.api == "anthropic"


def review(models: FakeModelServer, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A board review; the first vote of the hosted model (its leader's, which the other
    seats of that model wait for) answers after the call deadline."""
    models.reset()
    models.behave_as("llama-cpp-python", LOCAL_MODEL)
    models.default(CouncilScript().reply)
    models.on(first_hosted_vote, reply=Reply(latency_s=4 * DEADLINE_S), times=1)
    diff = tmp_path / "change.diff"
    diff.write_text(DIFF)
    box = {"base_url": models.openai_url, "local": True, "structured": "json_object"}
    return run_review(
        models,
        tmp_path,
        "--diff",
        str(diff),
        "--protocol",
        "board",
        *args,
        COUNCIL_MODELS=MODELS,
        COUNCIL_ENDPOINTS=json.dumps({"box": box}),
        COUNCIL_CALL_DEADLINE_S=str(DEADLINE_S),
    )


@pytest.mark.parametrize("output", ["json", "text"])
def test_a_timed_out_vote_and_estimated_tokens_are_said(
    models: FakeModelServer, tmp_path: Path, output: str
) -> None:
    done = review(models, tmp_path, "--format", output)
    assert done.returncode == 0, done.stderr
    if output == "json":
        result = json.loads(done.stdout)
        late = [s for s in result["seats"] if s["vote"] is None]
        assert [s["state"] for s in late] == ["no_vote"]
        assert [s["vote"] for s in result["seats"]].count("APPROVE") == len(result["seats"]) - 1
        shown = result["markdown"]
    else:
        shown = done.stdout
    assert TIMED_OUT in shown
    assert "abstain" not in shown.lower()
    assert ESTIMATED.search(" ".join(shown.split())), shown[-800:]
