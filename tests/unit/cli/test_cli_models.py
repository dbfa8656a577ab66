"""`council models check`, run as the installed console script against the fake server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.council import prompts
from bot.store.answer_sizes import record_answer_size
from bot.store.db import Database
from tests.support.model_server import FakeModelServer, Fault, Reply

COUNCIL = str(Path(sys.executable).with_name("council"))
# What the check says of a local server's speed and of a typical seat call (stable names).
SPEED_FIELDS = (
    "prompt_tokens_per_s",
    "output_tokens_per_s",
    "speed_error",
    "endpoint_entry",
    "seat_prompt_tokens",
    "seat_context_tokens",
    "seat_max_tokens",
    "seat_answer_tokens",
    "seat_answer_basis",
    "seat_call_s",
    "seat_deadline_s",
    "seat_deadline",
    "warnings",
)


def run_check(
    models: FakeModelServer, store: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """`council models check` with the store (its recorded answer sizes) in `store`."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "COUNCIL_", "DATABASE_"))
    }
    base.update(
        {
            "ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789",
            "ANTHROPIC_BASE_URL": models.anthropic_url,
            "OPENAI_API_KEY": "sk-test-secret-0123456789",
            "OPENAI_BASE_URL": models.openai_url,
            "COUNCIL_MAX_RETRIES": "0",
            "COUNCIL_OLLAMA_URL": "http://127.0.0.1:9",
            "DATABASE_URL": f"sqlite+aiosqlite:///{store / 'council.db'}",
        }
    )
    base.update(env)
    return subprocess.run(
        [COUNCIL, "models", "check", *args], capture_output=True, text=True, env=base, timeout=60
    )


def test_check_against_the_fake_reports_each_model(models: FakeModelServer, tmp_path: Path) -> None:
    done = run_check(models, tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert [r["model"] for r in results] == ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4"]
    for r in results:
        assert set(r) == {
            "model",
            "ok",
            "reachable",
            "structured",
            "structured_mode",
            "latency_ms",
            "input_tokens",
            "output_tokens",
            "context_window",
            "max_output_tokens",
            "price_source",
            "input_price",
            "output_price",
            "error",
            "p95_output_tokens",
            "recorded_answers",
            "reserve_output_tokens",
            "reserve_usd",
            "reserve_basis",
            *SPEED_FIELDS,
        }
        assert r["ok"] is True and r["structured"] is True and r["error"] is None
        # Hosted: not timed; a seat call gets COUNCIL_CALL_DEADLINE_S.
        assert r["prompt_tokens_per_s"] is None and r["seat_call_s"] is None
        assert r["seat_deadline"] == "the 300 s call deadline (COUNCIL_CALL_DEADLINE_S)"
        assert r["warnings"] == [] and r["endpoint_entry"] is None
        assert r["reachable"] is True and r["price_source"] == "table"
        assert r["input_tokens"] > 0 and r["output_tokens"] > 0
    anthropic, openai = results
    assert anthropic["structured_mode"] == "tools" and openai["structured_mode"] == "json_schema"
    assert (openai["input_price"], openai["output_price"]) == (2.5, 15.0)
    assert openai["context_window"] == 1_000_000 and openai["max_output_tokens"] == 128_000
    assert {c.request.output_name for c in models.calls} == {"ping"}


def test_check_table_output(models: FakeModelServer, tmp_path: Path) -> None:
    done = run_check(models, tmp_path, "--models", "openai:gpt-5.4", COLUMNS="200")
    assert done.returncode == 0, done.stderr
    assert "openai:gpt-5.4" in done.stdout and "json_schema" in done.stdout
    assert "$2.50/$15.00 per M (table)" in done.stdout


def test_check_reports_an_unreachable_url_and_exits_1(
    models: FakeModelServer, tmp_path: Path
) -> None:
    done = run_check(
        models,
        tmp_path,
        "--json",
        "--models",
        "openai-compatible:qwen@http://127.0.0.1:9/v1,openai:gpt-5.4",
    )
    assert done.returncode == 1
    bad, good = json.loads(done.stdout)
    assert bad["ok"] is False and "unreachable" in bad["error"]
    assert good["ok"] is True


def test_check_reports_missing_key_and_unknown_model(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.on(lambda r: r.model == "no-such-model", reply=Fault.not_found())
    done = run_check(
        models,
        tmp_path,
        "--json",
        "--models",
        "openai:no-such-model,anthropic:claude-opus-5",
        ANTHROPIC_API_KEY="",
    )
    assert done.returncode == 1
    unknown, missing = json.loads(done.stdout)
    assert "unknown model" in unknown["error"]
    assert "ANTHROPIC_API_KEY is not set" in missing["error"]
    assert "sk-test-secret" not in done.stdout + done.stderr


def test_check_with_nothing_configured_says_what_to_set(
    models: FakeModelServer, tmp_path: Path
) -> None:
    done = run_check(models, tmp_path, ANTHROPIC_API_KEY="", OPENAI_API_KEY="")
    assert done.returncode == 1
    assert "ANTHROPIC_API_KEY" in done.stderr and "COUNCIL_MODELS" in done.stderr


def test_check_offers_a_local_ollama_when_no_key_is_set(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.ollama_models = ["llama3.1:8b"]
    done = run_check(
        models,
        tmp_path,
        "--json",
        ANTHROPIC_API_KEY="",
        OPENAI_API_KEY="",
        COUNCIL_OLLAMA_URL=models.url,
    )
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)
    assert result["model"] == "ollama:llama3.1:8b" and result["ok"] is True


def test_check_shows_the_mode_each_server_took_and_where_prices_come_from(
    models: FakeModelServer, tmp_path: Path
) -> None:
    models.behave_as("llama-cpp-python", "qwen2.5-coder:7b")
    models.behave_as("prose", "mystery-model")
    endpoints = {
        "llamacpp": {"base_url": models.openai_url, "local": True, "context_window": 32_768},
        "gateway": {"base_url": models.openai_url, "api_key_env": "GATEWAY_KEY"},
    }
    done = run_check(
        models,
        tmp_path,
        "--json",
        "--models",
        "llamacpp:qwen2.5-coder:7b,gateway:mystery-model,gateway:openai/gpt-5.4",
        COUNCIL_ENDPOINTS=json.dumps(endpoints),
        GATEWAY_KEY="gw-0123456789",
    )
    assert done.returncode == 0, done.stderr
    local, mystery, known = json.loads(done.stdout)
    assert local["structured_mode"] == "json_object" and local["price_source"] == "local"
    assert local["context_window"] == 32_768 and local["input_price"] == 0.0
    assert mystery["structured_mode"] == "text" and mystery["price_source"] == "unknown"
    assert mystery["input_price"] is None
    assert known["price_source"] == "table" and known["input_price"] == 2.5
    table = run_check(
        models,
        tmp_path,
        "--models",
        "llamacpp:qwen2.5-coder:7b,gateway:mystery-model",
        COUNCIL_ENDPOINTS=json.dumps(endpoints),
        GATEWAY_KEY="gw-0123456789",
        COLUMNS="200",
    )
    assert "free (local)" in table.stdout and "unknown" in table.stdout


async def test_check_says_what_a_seat_call_reserves(
    models: FakeModelServer, tmp_path: Path
) -> None:
    """gpt-5.4 has 60 answers recorded (its last 50 are 110..600 tokens): a seat call holds
    their p95; claude-sonnet-5-5 has none: a seat call holds its whole output limit."""
    async with Database(f"sqlite+aiosqlite:///{tmp_path / 'council.db'}") as db:
        for n in range(1, 61):
            await record_answer_size(db, "openai:gpt-5.4", n * 10)
    done = run_check(models, tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    anthropic, openai = json.loads(done.stdout)

    assert openai["p95_output_tokens"] == 580  # the 48th of 110..600: not 600, not 590
    assert openai["recorded_answers"] == 50
    assert openai["reserve_output_tokens"] == 580
    assert openai["reserve_basis"] == "p95 of the last 50 answers"
    assert anthropic["p95_output_tokens"] is None and anthropic["recorded_answers"] == 0
    assert anthropic["reserve_output_tokens"] == 8192
    assert anthropic["reserve_basis"] == "worst case (never seen)"
    # Both hold the same input estimate (a full 60,000-token context, its margin and the
    # framing allowance) at the dearest input rate ($2.50 per M for each), and their output.
    held_input = [
        (openai["reserve_usd"] * 1e6 - 580 * 15.0) / 2.5,
        (anthropic["reserve_usd"] * 1e6 - 8192 * 10.0) / 2.5,
    ]
    assert held_input[0] == pytest.approx(held_input[1], abs=1)
    assert 60_000 + 512 < held_input[0] < 60_000 * 1.1 + 512

    table = run_check(models, tmp_path, COLUMNS="250")
    assert table.returncode == 0, table.stderr
    assert f"p95 580 tokens, ${openai['reserve_usd']:.4f}" in table.stdout
    assert f"worst case (never seen), ${anthropic['reserve_usd']:.4f}" in table.stdout


def test_check_still_checks_when_the_store_cannot_be_read(
    models: FakeModelServer, tmp_path: Path
) -> None:
    unreadable = f"sqlite+aiosqlite:///{tmp_path / 'no' / 'such' / 'dir' / 'council.db'}"
    done = run_check(
        models, tmp_path, "--json", "--models", "openai:gpt-5.4", DATABASE_URL=unreadable
    )
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)
    assert result["ok"] is True and result["reserve_usd"] is None
    assert result["reserve_basis"] == "unknown (the store could not be read)"


PROBE_ANSWER = "Review keeps a codebase honest, one change at a time, for years. " * 8


def test_check_times_a_local_server_and_says_what_a_seat_call_takes(
    models: FakeModelServer, tmp_path: Path
) -> None:
    """The fake takes 1 s to the first chunk of the probe's answer and 1 s more for the rest:
    the check reports those speeds, a seat call's time at them, the deadline a review gives
    it and the entry to paste, and warns of the limits that would stop it."""
    models.behave_as("llama-cpp-python", "qwen2.5-coder:1.5b")  # a stream without usage
    models.on(
        lambda r: r.label == "speed-probe",
        reply=Reply(text=PROBE_ANSWER, first_token_s=1.0, latency_s=2.0),
    )
    entry = {"base_url": models.openai_url, "local": True, "context_window": 8192}
    env = {"COUNCIL_ENDPOINTS": json.dumps({"llamacpp": entry}), "COUNCIL_CALL_DEADLINE_S": "60"}
    done = run_check(models, tmp_path, "--json", "--models", "llamacpp:qwen2.5-coder:1.5b", **env)
    assert done.returncode == 0, done.stderr
    (r,) = json.loads(done.stdout)
    (probe,) = models.calls_labelled("speed-probe")
    assert probe.request.stream
    prompt_tokens = models.count_tokens(probe.request.last_user_text())
    assert r["prompt_tokens_per_s"] == pytest.approx(prompt_tokens / 1.0, rel=0.25)
    assert r["output_tokens_per_s"] == pytest.approx(models.count_tokens(PROBE_ANSWER), rel=0.25)
    assert r["speed_error"] is None

    # A typical seat call: half the 8,192-token window of context, rules, brief and schema in;
    # the assessment's output limit out; its time at the measured speed.
    assert r["seat_context_tokens"] == 4096 < r["seat_prompt_tokens"] < 8192
    assert r["seat_max_tokens"] == prompts.ASSESS_TOOL.output_tokens(8192)
    assert r["seat_answer_tokens"] == r["seat_max_tokens"]
    assert r["seat_answer_basis"] == "the call's max_tokens"
    expected = (
        r["seat_prompt_tokens"] / r["prompt_tokens_per_s"]
        + r["seat_answer_tokens"] / r["output_tokens_per_s"]
    )
    assert r["seat_call_s"] == pytest.approx(expected, rel=0.01)
    assert 60 < r["seat_call_s"] < r["seat_deadline_s"]
    assert r["seat_deadline"].startswith(f"the {r['seat_deadline_s']:g} s deadline from the ")
    assert "endpoint's measured speed: " in r["seat_deadline"]
    measured = {
        "prompt_tokens_per_s": pytest.approx(r["prompt_tokens_per_s"], rel=0.01),
        "output_tokens_per_s": pytest.approx(r["output_tokens_per_s"], rel=0.01),
    }
    assert r["endpoint_entry"] == {"llamacpp": {**entry, **measured}}
    (warning,) = r["warnings"]
    assert "the App's job timeout counts 60 s a call (COUNCIL_CALL_DEADLINE_S)" in warning

    table = run_check(models, tmp_path, "--models", "llamacpp:qwen2.5-coder:1.5b", **env)
    assert table.returncode == 0, table.stderr
    out = " ".join(table.stdout.split())
    assert f"llamacpp:qwen2.5-coder:1.5b: a seat call ({r['seat_prompt_tokens']:,} prompt" in out
    assert re.search(r"takes up to [\d,]+ s; it gets the \d+ s deadline from the endpoint", out)
    assert 'its entry in COUNCIL_ENDPOINTS, with the speed measured: "llamacpp": {' in out
    assert "warning: reviews measure this server" in out
    first, again = models.calls_labelled("speed-probe")
    assert first.request.last_user_text()[:40] != again.request.last_user_text()[:40]

    # The endpoint's own deadline is too short for such a call: said, with what to change.
    short = {"llamacpp": {**entry, "call_deadline_s": 20}}
    done = run_check(
        models,
        tmp_path,
        "--json",
        "--models",
        "llamacpp:qwen2.5-coder:1.5b",
        COUNCIL_ENDPOINTS=json.dumps(short),
    )
    (r,) = json.loads(done.stdout)
    assert r["seat_deadline"] == "the 20 s deadline set by the endpoint's call_deadline_s"
    (warning,) = r["warnings"]
    assert warning.endswith(
        "past the 20 s deadline set by the endpoint's call_deadline_s; raise the endpoint's "
        "call_deadline_s"
    )
