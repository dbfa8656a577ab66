"""`council review` against a local server with a small window: a prompt it refuses as too
long is cut to fit (whole sections from the end, never the first diff section) and sent
once more, the model's later calls fit before they are sent, and no call asks for more
output than the window leaves; a window the server says (llama-server's /props) is fitted
before the first call."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.support.cli import run_council
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, RecordedCall

WINDOW = 6000
LEFT_OUT = "left out to fit the model's window of 6,000 tokens"
FILES = 6


def file_diff(index: int, functions: int = 40) -> str:
    body = "".join(
        f"+def handler_{index}_{n}(request):\n+    return process(request, {n})\n"
        for n in range(functions)
    )
    return (
        f"diff --git a/app/mod{index}.py b/app/mod{index}.py\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/app/mod{index}.py\n@@ -0,0 +1,{functions * 2} @@\n{body}"
    )


def review(models: FakeModelServer, tmp_path: Path, protocol: str) -> dict[str, Any]:
    """A review of a six-file change by `box:qwen`, a local server (COUNCIL_ENDPOINTS)."""
    (tmp_path / "change.diff").write_text("".join(file_diff(i) for i in range(FILES)))
    endpoints = json.dumps({"box": {"base_url": models.openai_url, "local": True}})
    done = run_council(
        models,
        tmp_path,
        "review",
        "--diff",
        "change.diff",
        "--models",
        "box:qwen",
        "--protocol",
        protocol,
        "--json",
        COUNCIL_ENDPOINTS=endpoints,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["resolution"] == "APPROVED"
    assert {s["state"] for s in result["seats"]} == {"ok"}
    return result


def seat_calls(models: FakeModelServer) -> list[RecordedCall]:
    return [c for c in models.calls if c.request.output_name is not None]


def fits(models: FakeModelServer, call: RecordedCall) -> bool:
    """The call's context was cut for the window (its first diff section kept), and its
    prompt and the output it asked for fit in the window (the fake's own count)."""
    system = call.request.system_text
    asked = call.request.max_tokens
    return (
        LEFT_OUT in system
        and "## diff: app/mod0.py" in system
        and f"## diff: app/mod{FILES - 1}.py" not in system
        and isinstance(asked, int)
        and models.prompt_tokens(call.request) + asked <= WINDOW
    )


def test_a_prompt_refused_as_too_long_is_cut_and_sent_once_more(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.behave_as("llama-cpp-python")  # says nothing of its window: the default is planned
    models.context_window(WINDOW)
    models.default(CouncilScript().reply)
    review(models, tmp_path, "board")
    calls = seat_calls(models)
    refused = [c for c in calls if c.status == 400]
    assert len(refused) == 1  # the first call with the whole context, and no other
    first = refused[0]
    assert LEFT_OUT not in first.request.system_text
    assert "## diff: app/mod1.py" in first.request.system_text
    assert first.request.max_tokens is not None and first.request.max_tokens > WINDOW
    later = calls[calls.index(first) + 1 :]
    retry = next(c for c in later if c.status == 200)
    assert retry.label == first.label  # the same seat's call, answered
    assert {c.request.output_name for c in later} >= {
        "submit_assessment",
        "submit_discussion",
        "submit_vote",
        "submit_synthesis",
    }
    assert all(fits(models, c) for c in later)


def test_a_window_the_server_says_is_fitted_before_the_first_call(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.behave_as("llama-server")  # GET /props says the window
    models.context_window(WINDOW)
    models.default(CouncilScript().reply)
    review(models, tmp_path, "quick")
    calls = seat_calls(models)
    assert calls and all(c.status == 200 for c in calls)
    assert all(fits(models, c) for c in calls)


def test_the_advisory_says_once_how_far_the_context_was_cut(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.behave_as("llama-cpp-python")
    models.context_window(WINDOW)
    models.default(CouncilScript().reply)
    result = review(models, tmp_path, "quick")
    said = [n for n in result["notes"] if "window" in n]
    assert len(said) == 1
    assert re.fullmatch(
        r"box:qwen's window is 6,000 tokens: the context was cut from [\d,]+ to [\d,]+ "
        r"tokens for it",
        said[0],
    )
