"""Preflight: a missing key, an unreachable URL or a model a local server does not serve is
one clear error before any seat is called."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from bot.providers import ProviderRegistry
from bot.providers.preflight import PreflightFailed, preflight
from bot.settings import Settings
from tests.support.model_server import FakeModelServer


def settings(models: FakeModelServer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "anthropic_api_key": "sk-ant-test-0123456789",
        "anthropic_base_url": models.anthropic_url,
        "openai_api_key": "sk-test-0123456789",
        "openai_base_url": models.openai_url,
        "max_retries": 0,
        "request_timeout_s": 5.0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def failure(registry: ProviderRegistry, models: list[str]) -> PreflightFailed:
    with pytest.raises(PreflightFailed) as raised:
        await preflight(registry, models)
    await registry.aclose()
    return raised.value


async def test_a_missing_key_is_named_and_nothing_is_sent(models: FakeModelServer) -> None:
    registry = ProviderRegistry(settings(models, openai_api_key=None))
    error = await failure(registry, ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4"])
    assert [p.model for p in error.problems] == ["openai:gpt-5.4"]
    assert "OPENAI_API_KEY is not set" in str(error)
    assert not [c for c in models.calls if c.model == "gpt-5.4"]


async def test_an_endpoint_that_does_not_answer_is_named_by_its_url(
    models: FakeModelServer,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    registry = ProviderRegistry(
        settings(models, endpoints={"vllm": {"base_url": url, "api_key_env": None}})
    )
    error = await failure(registry, ["vllm:qwen3-coder"])
    assert "cannot reach the provider at " + url in str(error)
    assert "vllm:qwen3-coder" in str(error)


async def test_a_local_server_must_serve_the_model(models: FakeModelServer) -> None:
    models.served_models = ["llama3.1:8b", "qwen2.5-coder:7b"]
    registry = ProviderRegistry(
        settings(models, endpoints={"box": {"base_url": models.openai_url, "local": True}})
    )
    error = await failure(registry, ["box:llama3.2:3b"])
    assert f"{models.openai_url} does not serve llama3.2:3b" in str(error)
    assert "llama3.1:8b, qwen2.5-coder:7b" in str(error)
    registry = ProviderRegistry(
        settings(models, endpoints={"box": {"base_url": models.openai_url, "local": True}})
    )
    await preflight(registry, ["box:llama3.1:8b"])  # served: no error
    await registry.aclose()


async def test_an_answer_is_trusted_for_the_ttl(models: FakeModelServer) -> None:
    registry = ProviderRegistry(settings(models))
    await preflight(registry, ["openai:gpt-5.4", "anthropic:claude-sonnet-5-5"])
    listed = models.model_list_calls
    assert listed == 2
    await preflight(registry, ["openai:gpt-5.4", "anthropic:claude-sonnet-5-5"])
    assert models.model_list_calls == listed
    assert not models.calls  # no chat call at all: the lists proved both keys
    await registry.aclose()
    fresh = ProviderRegistry(settings(models, preflight_ttl_s=0))
    await preflight(fresh, ["openai:gpt-5.4"])
    assert models.model_list_calls == listed + 1
    await fresh.aclose()


async def test_credentials_in_an_endpoint_url_are_never_shown(models: FakeModelServer) -> None:
    url = f"http://council:s3cret-pass@127.0.0.1:{closed_port()}/v1"
    registry = ProviderRegistry(settings(models, endpoints={"proxy": {"base_url": url}}))
    error = await failure(registry, ["proxy:qwen3"])
    assert "s3cret-pass" not in str(error)
    assert "cannot reach the provider at http://[REDACTED]@127.0.0.1:" in str(error)


async def test_a_server_without_a_model_list_is_asked_for_one_tiny_answer(
    models: FakeModelServer,
) -> None:
    models.lists_models = False
    registry = ProviderRegistry(
        settings(models, endpoints={"azure": {"base_url": models.openai_url, "api_key_env": None}})
    )
    await preflight(registry, ["azure:gpt-5.4-deployment"])
    (call,) = models.calls
    assert call.label == "preflight" and call.status == 200
    assert call.request.max_tokens == 16 and "response_format" not in call.request.body
    await registry.aclose()
