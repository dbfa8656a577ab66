"""`council models check`, run as the installed console script against the fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.model_server import FakeModelServer, Fault

COUNCIL = str(Path(sys.executable).with_name("council"))


def run_check(models: FakeModelServer, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "COUNCIL_"))
    }
    base.update(
        {
            "ANTHROPIC_API_KEY": "sk-ant-test-secret-0123456789",
            "ANTHROPIC_BASE_URL": models.anthropic_url,
            "OPENAI_API_KEY": "sk-test-secret-0123456789",
            "OPENAI_BASE_URL": models.openai_url,
            "COUNCIL_MAX_RETRIES": "0",
            "COUNCIL_OLLAMA_URL": "http://127.0.0.1:9",
        }
    )
    base.update(env)
    return subprocess.run(
        [COUNCIL, "models", "check", *args], capture_output=True, text=True, env=base, timeout=60
    )


def test_check_against_the_fake_reports_each_model(models: FakeModelServer) -> None:
    done = run_check(models, "--json")
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
        }
        assert r["ok"] is True and r["structured"] is True and r["error"] is None
        assert r["reachable"] is True and r["price_source"] == "table"
        assert r["input_tokens"] > 0 and r["output_tokens"] > 0
    anthropic, openai = results
    assert anthropic["structured_mode"] == "tools" and openai["structured_mode"] == "json_schema"
    assert (openai["input_price"], openai["output_price"]) == (2.5, 15.0)
    assert openai["context_window"] == 1_000_000 and openai["max_output_tokens"] == 128_000
    assert {c.request.output_name for c in models.calls} == {"ping"}


def test_check_table_output(models: FakeModelServer) -> None:
    done = run_check(models, "--models", "openai:gpt-5.4", COLUMNS="200")
    assert done.returncode == 0, done.stderr
    assert "openai:gpt-5.4" in done.stdout and "json_schema" in done.stdout
    assert "$2.50/$15.00 per M (table)" in done.stdout


def test_check_reports_an_unreachable_url_and_exits_1(models: FakeModelServer) -> None:
    done = run_check(
        models, "--json", "--models", "openai-compatible:qwen@http://127.0.0.1:9/v1,openai:gpt-5.4"
    )
    assert done.returncode == 1
    bad, good = json.loads(done.stdout)
    assert bad["ok"] is False and "unreachable" in bad["error"]
    assert good["ok"] is True


def test_check_reports_missing_key_and_unknown_model(models: FakeModelServer) -> None:
    models.on(lambda r: r.model == "no-such-model", reply=Fault.not_found())
    done = run_check(
        models,
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


def test_check_with_nothing_configured_says_what_to_set(models: FakeModelServer) -> None:
    done = run_check(models, ANTHROPIC_API_KEY="", OPENAI_API_KEY="")
    assert done.returncode == 1
    assert "ANTHROPIC_API_KEY" in done.stderr and "COUNCIL_MODELS" in done.stderr


def test_check_offers_a_local_ollama_when_no_key_is_set(models: FakeModelServer) -> None:
    models.ollama_models = ["llama3.1:8b"]
    done = run_check(
        models, "--json", ANTHROPIC_API_KEY="", OPENAI_API_KEY="", COUNCIL_OLLAMA_URL=models.url
    )
    assert done.returncode == 0, done.stderr
    (result,) = json.loads(done.stdout)
    assert result["model"] == "ollama:llama3.1:8b" and result["ok"] is True


def test_check_shows_the_mode_each_server_took_and_where_prices_come_from(
    models: FakeModelServer,
) -> None:
    models.behave_as("llama-cpp-python", "qwen2.5-coder:7b")
    models.behave_as("prose", "mystery-model")
    endpoints = {
        "llamacpp": {"base_url": models.openai_url, "local": True, "context_window": 32_768},
        "gateway": {"base_url": models.openai_url, "api_key_env": "GATEWAY_KEY"},
    }
    done = run_check(
        models,
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
        "--models",
        "llamacpp:qwen2.5-coder:7b,gateway:mystery-model",
        COUNCIL_ENDPOINTS=json.dumps(endpoints),
        GATEWAY_KEY="gw-0123456789",
        COLUMNS="200",
    )
    assert "free (local)" in table.stdout and "unknown" in table.stdout
