"""`council review` against models it cannot call: one clear error, exit 2, no seat called;
and the token cap and the dry run's queue and prices, as a user sees them."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer
from tests.unit.cli.test_cli_review import DIFF, run_review

BOTH = "anthropic:claude-sonnet-5-5,openai:gpt-5.4"


def diff(tmp_path: Path) -> str:
    path = tmp_path / "change.diff"
    path.write_text(DIFF)
    return str(path)


def chat_calls(models: FakeModelServer) -> list[str]:
    return [c.model for c in models.calls]


def test_a_missing_key_exits_2_naming_the_variable_before_any_seat_is_called(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.default(CouncilScript().reply)
    done = run_review(
        models, tmp_path, "--diff", diff(tmp_path), COUNCIL_MODELS=BOTH, OPENAI_API_KEY=""
    )
    assert done.returncode == 2, done.stderr
    assert "openai:gpt-5.4: OPENAI_API_KEY is not set" in done.stderr
    assert "NO_QUORUM" not in done.stdout + done.stderr
    assert chat_calls(models) == []  # not one seat, not even the Anthropic ones


def test_an_unreachable_endpoint_exits_2_naming_its_url(
    models: FakeModelServer, tmp_path: Path
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    done = run_review(
        models,
        tmp_path,
        "--diff",
        diff(tmp_path),
        COUNCIL_MODELS="box:qwen3-coder",
        COUNCIL_ENDPOINTS=json.dumps({"box": {"base_url": url, "local": True}}),
    )
    assert done.returncode == 2, done.stderr
    assert f"cannot reach the provider at {url}" in done.stderr
    assert chat_calls(models) == []


def test_the_token_cap_stops_the_council_and_says_so(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.default(CouncilScript().reply)
    done = run_review(
        models, tmp_path, "--diff", diff(tmp_path), "--json", COUNCIL_MAX_SPEND_TOKENS="1000"
    )
    advisory = json.loads(done.stdout)
    assert advisory["resolution"] == "COST_LIMIT", done.stderr
    assert "token cap of 1,000 tokens (COUNCIL_MAX_SPEND_TOKENS)" in advisory["markdown"]
    assert chat_calls(models) == []  # not one call's worst case fits in 1,000 tokens


def test_the_dry_run_says_a_local_server_queues_and_costs_nothing(
    models: FakeModelServer, tmp_path: Path
) -> None:
    done = run_review(
        models,
        tmp_path,
        "--diff",
        diff(tmp_path),
        "--dry-run",
        COUNCIL_MODELS="ollama:llama3.1:8b",
        COLUMNS="200",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "estimated cost: nothing (the models are free or priced at $0)" in out
    # 3 seats: the security seat, the correctness owner and one filled to board.min_size.
    assert "queue: ollama takes 1 call at a time: a phase's 3 calls to it run in 3 turns" in out
    assert "each with its own 10 s deadline (up to 30 s a phase" in out
    assert "unknown_model" not in out  # a local model's price is no mystery
    assert chat_calls(models) == []


def test_the_dry_run_says_an_unknown_price_is_unknown(
    models: FakeModelServer, tmp_path: Path
) -> None:
    endpoints = {"gateway": {"base_url": models.openai_url, "api_key_env": "GATEWAY_KEY"}}
    done = run_review(
        models,
        tmp_path,
        "--diff",
        diff(tmp_path),
        "--dry-run",
        COUNCIL_MODELS="gateway:mystery-model,openai:gpt-5.4",
        COUNCIL_ENDPOINTS=json.dumps(endpoints),
        GATEWAY_KEY="k-0123456789",
        COLUMNS="200",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "+ unknown for gateway:mystery-model (no price known)" in out
