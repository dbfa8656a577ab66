"""Deadlines from what a local endpoint does: its measured (or set) speed, its own
`call_deadline_s`, and timeout messages that name the limit that stopped the call."""

from __future__ import annotations

from typing import Any

import pytest

from bot.providers import Message, ModelCall, ProviderRegistry, ProviderTimeout
from bot.providers.preflight import preflight
from bot.providers.speed import PROBE_LABEL, Speed, deadline_for, remember
from bot.queue.jobs import job_timeout_s
from bot.settings import Settings
from tests.support.model_server import FakeModelServer, Reply

ANSWER = "The change reads well and its tests cover the new branch. " * 6
PROBE_TEXT = "Review keeps a codebase honest, one change at a time, for years. " * 6


def settings(models: FakeModelServer, endpoint: dict[str, Any], **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "max_retries": 0,
        "request_timeout_s": 30.0,
        "endpoints": {"box": {"base_url": models.openai_url, **endpoint}},
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


def slow_answer(models: FakeModelServer, seconds: float) -> None:
    """The review's call takes `seconds`; the speed probe is quick (0.2 s to the first chunk,
    0.6 s in all)."""
    models.on(
        lambda r: r.label == PROBE_LABEL,
        reply=Reply(text=PROBE_TEXT, first_token_s=0.2, latency_s=0.6),
    )
    models.on(lambda r: r.label == "seat-1/assess", reply=Reply(text=ANSWER, latency_s=seconds))


def seat_call() -> ModelCall[Any]:
    return ModelCall(
        system=[],
        messages=[Message(role="user", content="Assess the change.")],
        max_tokens=256,
        label="seat-1/assess",
    )


async def test_a_local_call_gets_its_deadline_from_the_measured_speed(
    models: FakeModelServer,
) -> None:
    """COUNCIL_CALL_DEADLINE_S of 1 s would stop a 3 s call; the preflight measured the
    server, and the call's deadline follows its speed, so it finishes."""
    models.behave_as("llama-cpp-python")
    slow_answer(models, 3.0)
    registry = ProviderRegistry(settings(models, {"local": True}, call_deadline_s=1.0))
    await preflight(registry, ["box:qwen2.5-coder"])
    (probe,) = models.calls_labelled(PROBE_LABEL)
    assert probe.request.stream and probe.status == 200
    adapter = registry.get("box:qwen2.5-coder")
    deadline = adapter.deadline(seat_call())
    assert deadline.seconds > 3
    assert "from the endpoint's measured speed" in deadline.described
    result = await adapter.call(seat_call())
    assert result.text == ANSWER and result.latency_ms >= 3000
    await preflight(registry, ["box:qwen2.5-coder"])  # measured once per process
    assert len(models.calls_labelled(PROBE_LABEL)) == 1
    await registry.aclose()


async def test_the_endpoints_call_deadline_wins_and_is_named(models: FakeModelServer) -> None:
    models.behave_as("llama-cpp-python")
    slow_answer(models, 3.0)
    endpoint = {"local": True, "call_deadline_s": 1}
    registry = ProviderRegistry(settings(models, endpoint, call_deadline_s=300.0))
    await preflight(registry, ["box:qwen2.5-coder"])
    assert not models.calls_labelled(PROBE_LABEL)  # its own deadline: nothing to measure
    with pytest.raises(ProviderTimeout) as raised:
        await registry.get("box:qwen2.5-coder").call(seat_call())
    assert str(raised.value) == (
        "box:qwen2.5-coder: no answer within the 1 s deadline set by the endpoint's "
        "call_deadline_s (retries included)"
    )
    await registry.aclose()


async def test_the_request_timeout_is_named_when_it_stopped_the_call(
    models: FakeModelServer,
) -> None:
    """A hosted-style endpoint: each attempt waits COUNCIL_REQUEST_TIMEOUT_S for the server,
    long before the call deadline."""
    models.on(reply=Reply(text=ANSWER, latency_s=2.0))
    registry = ProviderRegistry(
        settings(models, {"api_key_env": None}, request_timeout_s=0.5, call_deadline_s=30.0)
    )
    with pytest.raises(ProviderTimeout) as raised:
        await registry.get("box:qwen2.5-coder").call(seat_call())
    message = str(raised.value)
    assert "timed out: no answer within the 0.5 s request timeout" in message
    assert "COUNCIL_REQUEST_TIMEOUT_S" in message and "call deadline" not in message
    await registry.aclose()


async def test_the_call_deadline_is_named_with_its_variable(models: FakeModelServer) -> None:
    models.on(reply=Reply(text=ANSWER, latency_s=2.0))
    registry = ProviderRegistry(settings(models, {"api_key_env": None}, call_deadline_s=0.5))
    with pytest.raises(ProviderTimeout) as raised:
        await registry.get("box:qwen2.5-coder").call(seat_call())
    assert str(raised.value) == (
        "box:qwen2.5-coder: no answer within the 0.5 s call deadline (COUNCIL_CALL_DEADLINE_S) "
        "(retries included)"
    )
    await registry.aclose()


def test_a_measured_speed_outlasts_the_engines_default_and_says_where_it_came_from(
    models: FakeModelServer,
) -> None:
    """The engine sends COUNCIL_CALL_DEADLINE_S (300 s) with every call; a CPU server that
    needs longer gets longer, and hosted endpoints keep the 300 s."""
    config = settings(models, {"local": True})
    local = ProviderRegistry(config).resolve("box:qwen2.5-coder")
    remember(models.openai_url, "qwen2.5-coder", Speed(60.0, 5.0, "measured"))
    sizes = {"prompt_tokens": 5_000, "output_tokens": 1_000}
    deadline = deadline_for(local, models.openai_url, requested_s=300, default_s=300, **sizes)
    assert deadline.seconds == 455  # 1.5 x (5,000 / 60 + 1,000 / 5) + 30
    assert deadline.described == (
        "the 455 s deadline from the endpoint's measured speed: 60 prompt tokens/s, "
        "5 output tokens/s"
    )
    hosted = ProviderRegistry(settings(models, {})).resolve("box:qwen2.5-coder")
    kept = deadline_for(hosted, models.openai_url, requested_s=300, default_s=300, **sizes)
    assert kept.described == "the 300 s call deadline (COUNCIL_CALL_DEADLINE_S)"
    small = deadline_for(
        local,
        models.openai_url,
        requested_s=300,
        default_s=300,
        **{
            "prompt_tokens": 500,
            "output_tokens": 100,
        },
    )
    assert small.seconds == 300  # never shorter than the call's own


def test_the_job_timeout_covers_an_endpoint_that_sets_its_speed(models: FakeModelServer) -> None:
    plain = job_timeout_s(settings(models, {"local": True}))
    entry = {"local": True, "prompt_tokens_per_s": 60, "output_tokens_per_s": 5}
    timed = job_timeout_s(settings(models, entry))
    assert timed > plain
    fixed = job_timeout_s(settings(models, {"local": True, "call_deadline_s": 3_000}))
    assert fixed > plain


async def test_a_server_that_does_not_stream_is_probed_once_and_keeps_its_deadline(
    models: FakeModelServer,
) -> None:
    """Ollama's own API answers in one piece: no speed can be read from it, so its calls keep
    COUNCIL_CALL_DEADLINE_S, and later reviews do not probe it again."""
    models.ollama_models = ["llama3.1:8b"]
    models.on(lambda r: r.label == PROBE_LABEL, reply=Reply(text=PROBE_TEXT, latency_s=0.3))
    endpoint = {"base_url": f"{models.url}/v1", "local": True, "structured": "format"}
    registry = ProviderRegistry(
        Settings(_env_file=None, max_retries=0, preflight_ttl_s=0, endpoints={"ollama": endpoint})
    )
    await preflight(registry, ["ollama:llama3.1:8b"])
    await preflight(registry, ["ollama:llama3.1:8b"])
    (probe,) = models.calls_labelled(PROBE_LABEL)
    assert probe.api == "ollama" and probe.status == 200
    deadline = registry.get("ollama:llama3.1:8b").deadline(seat_call())
    assert deadline.described == "the 300 s call deadline (COUNCIL_CALL_DEADLINE_S)"
    await registry.aclose()
