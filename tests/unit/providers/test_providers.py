"""Provider adapters against the fake model server, through the real SDKs over a real port."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from bot.providers import (
    ConfigurationError,
    ContextTooLong,
    InvalidOutput,
    Message,
    ModelCall,
    OutputTool,
    ProviderRegistry,
    ProviderTimeout,
    RateLimited,
    Refused,
    ServerError,
    SystemBlock,
    Unreachable,
)
from bot.providers.capabilities import CapabilityTable, cost_usd
from bot.providers.negotiation import IGNORED_TO_GIVE_UP
from bot.settings import Settings
from bot.tokens import TokenEstimator
from tests.support.model_server import FakeModelServer, Fault, Reply

ANTHROPIC = "anthropic:claude-sonnet-5-5"
OPENAI = "openai:gpt-5.4"
MODELS = [ANTHROPIC, OPENAI]


class Point(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int
    label: str | None = None


class Verdict(BaseModel):
    """Optional and nested fields, as the seats' schemas have them."""

    model_config = ConfigDict(extra="forbid")
    verdict: str = Field(description="APPROVE or REJECT")
    score: int = Field(ge=1, le=10)
    points: list[Point]
    best: Point | None = None
    note: str | None = None


VERDICT = OutputTool("verdict", "Give the verdict.", Verdict)
GOOD = {
    "verdict": "APPROVE",
    "score": 7,
    "points": [{"x": 1, "label": None}],
    "best": None,
    "note": "fine",
}


def make_settings(models: FakeModelServer, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "anthropic_api_key": "test-anthropic-key",
        "anthropic_base_url": models.anthropic_url,
        "openai_api_key": "test-openai-key",
        "openai_base_url": models.openai_url,
        "max_retries": 2,
        "request_timeout_s": 5.0,
        "call_deadline_s": 20.0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


def structured_call(**kwargs: Any) -> ModelCall[Verdict]:
    base: dict[str, Any] = {
        "system": [SystemBlock(text="You review code.")],
        "messages": [Message(role="user", content="Review this change.")],
        "output": VERDICT,
        "max_tokens": 512,
        "label": "seat-1/assess",
    }
    base.update(kwargs)
    return ModelCall(**base)


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models), estimator=TokenEstimator())
    yield reg
    await reg.aclose()


@pytest.mark.parametrize("ref", MODELS)
@pytest.mark.parametrize("streamed", [False, True])
async def test_structured_answer_validates(
    models: FakeModelServer, registry: ProviderRegistry, ref: str, streamed: bool
) -> None:
    models.on(reply=Reply(json=GOOD))
    adapter = registry.get(ref)
    call = structured_call()
    result = await (adapter.start(call).result() if streamed else adapter.call(call))
    assert result.output == Verdict.model_validate(GOOD)
    assert result.structured_native is True
    assert result.usage.output_tokens > 0 and result.usage.total_input_tokens > 0
    assert result.cost_usd > 0
    recorded = models.calls[-1]
    assert recorded.request.stream is streamed
    assert recorded.request.output_name == "verdict"
    assert recorded.label == "seat-1/assess"


@pytest.mark.parametrize("ref", MODELS)
@pytest.mark.parametrize("streamed", [False, True])
async def test_plain_answer(
    models: FakeModelServer, registry: ProviderRegistry, ref: str, streamed: bool
) -> None:
    models.on(reply=Reply(text="The change looks sound."))
    adapter = registry.get(ref)
    call = structured_call(output=None)
    result = await (adapter.start(call).result() if streamed else adapter.call(call))
    assert result.text == "The change looks sound."
    assert result.output is None


async def test_openai_sends_a_strict_schema_the_fake_accepts(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.on(reply=Reply(json=GOOD))
    await registry.get(OPENAI).call(structured_call())
    body = models.calls[-1].request.body
    schema = body["response_format"]["json_schema"]
    assert schema["strict"] is True
    assert schema["schema"]["additionalProperties"] is False
    assert set(schema["schema"]["required"]) == {"verdict", "score", "points", "best", "note"}
    # Only the phase's own schema: no tool definitions ride along.
    assert "tools" not in body and "tool_choice" not in body
    assert "temperature" not in body  # gpt-5.4 is a reasoning model


async def test_anthropic_forces_the_output_tool(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    other = OutputTool("other", "Another phase's tool.", Point)
    models.on(reply=Reply(json=GOOD))
    await registry.get(ANTHROPIC).call(structured_call(tools=(other, VERDICT)))
    request = models.calls[-1].request
    assert request.tool_names == ["other", "verdict"]
    assert request.body["tool_choice"] == {"type": "tool", "name": "verdict"}


@pytest.mark.parametrize("ref", MODELS)
async def test_rate_limit_is_retried_honouring_retry_after(
    models: FakeModelServer, registry: ProviderRegistry, ref: str
) -> None:
    models.on(reply=Fault.rate_limited(retry_after=1.0), times=1)
    models.on(reply=Reply(json=GOOD))
    result = await registry.get(ref).call(structured_call())
    assert result.attempts == 2
    first, second = models.calls[-2], models.calls[-1]
    assert first.status == 429 and second.status == 200
    assert second.started_at - first.ended_at >= 0.95


@pytest.mark.parametrize("ref", MODELS)
async def test_rate_limit_exhausted_is_typed(
    models: FakeModelServer, registry: ProviderRegistry, ref: str
) -> None:
    models.on(reply=Fault.rate_limited(retry_after=0.1))
    with pytest.raises(RateLimited):
        await registry.get(ref).call(structured_call())
    assert [c.status for c in models.calls] == [429, 429, 429]  # 1 try + 2 retries


@pytest.mark.parametrize("ref", MODELS)
async def test_server_error_after_retries(
    models: FakeModelServer, registry: ProviderRegistry, ref: str
) -> None:
    models.on(reply=Fault.server_error(500))
    with pytest.raises(ServerError):
        await registry.get(ref).call(structured_call())
    assert [c.attempt_of for c in models.calls] == [1, 2, 3]


@pytest.mark.parametrize("ref", MODELS)
async def test_deadline_holds_against_a_hang(models: FakeModelServer, ref: str) -> None:
    reg = ProviderRegistry(make_settings(models, request_timeout_s=30.0, call_deadline_s=1.0))
    models.on(reply=Fault.hang())
    started = time.monotonic()
    with pytest.raises(ProviderTimeout, match="deadline"):
        await reg.get(ref).call(structured_call())
    assert time.monotonic() - started < 2.0
    await reg.aclose()


@pytest.mark.parametrize("ref", MODELS)
async def test_deadline_holds_against_a_huge_retry_after(models: FakeModelServer, ref: str) -> None:
    reg = ProviderRegistry(make_settings(models, call_deadline_s=1.0))
    # Both SDKs obey a retry-after of up to a minute or two: far past any call deadline.
    models.on(reply=Fault.rate_limited(retry_after=100))
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        await reg.get(ref).call(structured_call())
    assert time.monotonic() - started < 2.0
    assert len(models.calls) == 1
    await reg.aclose()


@pytest.mark.parametrize("ref", MODELS)
async def test_malformed_json_is_a_server_error(models: FakeModelServer, ref: str) -> None:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    models.on(reply=Fault.malformed_json())
    with pytest.raises(ServerError):
        await reg.get(ref).call(structured_call())
    await reg.aclose()


@pytest.mark.parametrize("ref", MODELS)
async def test_off_topic_answer_is_invalid_output_with_a_reason(
    models: FakeModelServer, registry: ProviderRegistry, ref: str
) -> None:
    models.on(reply=Fault.off_topic())
    with pytest.raises(InvalidOutput) as caught:
        await registry.get(ref).call(structured_call())
    # The re-ask sends the reason back; it must say what was wrong.
    assert "JSON" in caught.value.validation_error or "schema" in caught.value.validation_error
    assert caught.value.usage.output_tokens > 0  # the tokens were still paid for


@pytest.mark.parametrize("ref", MODELS)
async def test_truncated_answer_is_invalid_output(
    models: FakeModelServer, registry: ProviderRegistry, ref: str
) -> None:
    # Cut before `points`: what is whole does not validate (what does is kept:
    # tests/unit/providers/test_runaway_answers.py).
    models.on(reply=Fault.truncated('{"verdict": "APPROVE", "score": 7, "poi'))
    with pytest.raises(InvalidOutput, match="max-tokens"):
        await registry.get(ref).call(structured_call())


@pytest.mark.parametrize("ref", MODELS)
async def test_wrong_shape_returns_the_validation_error(
    models: FakeModelServer, registry: ProviderRegistry, ref: str
) -> None:
    # A wrong type (a number out of its range is clamped instead: test_negotiation.py).
    models.on(reply=Reply(json={**GOOD, "score": "high"}))
    with pytest.raises(InvalidOutput) as caught:
        await registry.get(ref).call(structured_call())
    assert "score" in caught.value.validation_error


@pytest.mark.parametrize("ref", MODELS)
async def test_context_too_long_is_typed(
    models: FakeModelServer, registry: ProviderRegistry, ref: str
) -> None:
    models.on(reply=Fault.bad_request("prompt is too long: 250000 tokens > 200000 maximum"))
    with pytest.raises(ContextTooLong):
        await registry.get(ref).call(structured_call())


async def test_openai_refusal_is_typed(models: FakeModelServer, registry: ProviderRegistry) -> None:
    models.on(reply=Reply(text="", stop_reason="content_filter"))
    with pytest.raises(Refused):
        await registry.get(OPENAI).call(structured_call())


async def test_an_endpoint_without_json_schema_starts_at_json_object_and_learns_text(
    models: FakeModelServer,
) -> None:
    """`json_schema: false` (the older setting) starts after json_schema; a server that
    answers prose around a fenced block, answer after answer, ignores the format, so later
    calls put the schema in the prompt."""
    settings = make_settings(
        models,
        endpoints={"local": {"base_url": models.openai_url, "json_schema": False}},
    )
    reg = ProviderRegistry(settings)
    fenced = "Here you go:\n```json\n" + json.dumps(GOOD) + "\n```"
    models.on(reply=Reply(text=fenced))
    adapter = reg.get("local:llama3.1:8b")
    for _ in range(IGNORED_TO_GIVE_UP):
        result = await adapter.call(structured_call())
        assert result.output == Verdict.model_validate(GOOD)
        first = models.calls[-1].request
        assert first.body["response_format"]["type"] == "json_object"
        assert first.body["response_format"]["schema"]["required"]
    assert adapter.structured_mode == "text"
    await adapter.call(structured_call())
    second = models.calls[-1].request
    assert "response_format" not in second.body
    assert "JSON schema" in second.prompt_text()
    assert second.model == "llama3.1:8b"
    assert len(models.calls) == IGNORED_TO_GIVE_UP + 1
    await reg.aclose()


async def test_concurrency_limit_holds_under_50_calls(models: FakeModelServer) -> None:
    reg = ProviderRegistry(make_settings(models, provider_concurrency=5))
    models.on(reply=Reply(json=GOOD, latency_s=0.1))
    adapter = reg.get(ANTHROPIC)
    await asyncio.gather(*(adapter.call(structured_call()) for _ in range(50)))
    events = sorted(
        [(c.started_at, 1) for c in models.calls] + [(c.ended_at, -1) for c in models.calls]
    )
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert len(models.calls) == 50
    assert peak == 5
    await reg.aclose()


async def test_token_estimator_converges_on_reported_usage(models: FakeModelServer) -> None:
    estimator = TokenEstimator(chars_per_token=2.0)
    reg = ProviderRegistry(make_settings(models), estimator=estimator)
    adapter = reg.get(ANTHROPIC)
    text = "def handler(request):\n    return compute(request.body)\n" * 60
    models.on(reply=Reply(text="ok"))
    for _ in range(12):
        await adapter.call(
            structured_call(output=None, messages=[Message(role="user", content=text)])
        )
    reported = models.calls[-1].usage
    assert reported is not None
    # The fake counts ceil(chars / 4): the estimator must have moved from 2.0 to about 4.
    assert 3.6 <= estimator.chars_per_token <= 4.4
    assert (
        abs(estimator.estimate(text) - models.count_tokens(text)) / models.count_tokens(text) < 0.1
    )
    await reg.aclose()


async def test_the_estimator_learns_code_and_prose_apart_from_the_usage_reported(
    models: FakeModelServer,
) -> None:
    """Over HTTP: the adapter tells the estimator what it sent per kind of text, and the
    usage the fake reports (counted like a real tokenizer) calibrates each kind."""
    estimator = TokenEstimator(3.0)
    reg = ProviderRegistry(make_settings(models), estimator=estimator)
    adapter = reg.get(OPENAI)
    code = "def handler(request):\n    return compute(request.body, retries=3)\n" * 80
    prose = "The reviewer reads the change and explains what it means for users.\n" * 80
    models.on(reply=Reply(text="ok"))
    for n in range(16):
        text = code * (n % 3) + prose * (2 - n % 3) or code
        await adapter.call(
            structured_call(output=None, messages=[Message(role="user", content=text)])
        )
    for text in (code, prose):
        counted = models.count_tokens(text)
        assert abs(estimator.estimate(text) - counted) / counted < 0.1, text[:20]
    assert estimator.ratio("prose") > estimator.ratio("code") + 0.3
    await reg.aclose()


LONG_CONTEXT = "Context line describing the pull request in detail.\n" * 400  # ~5,000 tokens


def cached_call(seat: int) -> ModelCall[Verdict]:
    return structured_call(
        system=[
            SystemBlock(text="Rules of the council."),
            SystemBlock(text=LONG_CONTEXT, cache=True),
        ],
        messages=[Message(role="user", content=f"You are seat {seat}. Assess.")],
    )


async def test_sequential_calls_read_the_cached_prefix(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.on(reply=Reply(json=GOOD))
    adapter = registry.get(ANTHROPIC)
    first = await adapter.call(cached_call(1))
    second = await adapter.call(cached_call(2))
    assert first.usage.cache_write_tokens > 4000 and first.usage.cache_read_tokens == 0
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.usage.cache_write_tokens == 0
    assert second.cost_usd < first.cost_usd


async def test_parallel_first_calls_all_pay_the_write(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.on(reply=Reply(json=GOOD, latency_s=0.3, first_token_s=0.1))
    adapter = registry.get(ANTHROPIC)
    results = await asyncio.gather(*(adapter.call(cached_call(i)) for i in range(4)))
    assert all(r.usage.cache_write_tokens > 4000 for r in results)
    assert all(r.usage.cache_read_tokens == 0 for r in results)


async def test_calls_launched_after_the_first_response_began_read(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.on(reply=Reply(json=GOOD, latency_s=0.4, first_token_s=0.1))
    adapter = registry.get(ANTHROPIC)
    warming = adapter.start(cached_call(0))
    await warming.wait_began()
    assert warming.began.is_set() and not warming.task.done()
    rest = await asyncio.gather(*(adapter.call(cached_call(i)) for i in range(1, 5)))
    first = await warming.result()
    assert first.usage.cache_write_tokens > 4000
    assert all(r.usage.cache_read_tokens == first.usage.cache_write_tokens for r in rest)


async def test_no_breakpoint_below_the_minimum_prefix(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.on(reply=Reply(json=GOOD))
    call = structured_call(system=[SystemBlock(text="Short rules.", cache=True)])
    first = await registry.get(ANTHROPIC).call(call)
    assert "cache_control" not in str(models.calls[-1].request.body.get("system"))
    assert first.usage.cache_write_tokens == 0


async def test_openai_reports_cached_tokens(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.on(reply=Reply(json=GOOD))
    adapter = registry.get(OPENAI)
    await adapter.call(cached_call(1))
    second = await adapter.call(cached_call(2))
    assert second.usage.cache_read_tokens >= 1024
    assert second.usage.cache_read_tokens % 128 == 0
    assert second.usage.cache_write_tokens == 0


def test_cost_arithmetic() -> None:
    table = CapabilityTable()
    caps = table.lookup("anthropic", "claude-sonnet-5-5-20261001")
    assert (caps.input_price, caps.output_price) == (2.0, 10.0)
    cost = cost_usd(
        caps,
        input_tokens=1_000_000,
        output_tokens=100_000,
        cache_write_tokens=200_000,
        cache_read_tokens=2_000_000,
    )
    # 2.00 + 1.00 + 0.2 * 2.5 + 2 * 0.2
    assert cost == pytest.approx(2.0 + 1.0 + 0.5 + 0.4)
    gpt = table.lookup("openai", "gpt-5.4-mini")
    assert cost_usd(gpt, input_tokens=0, output_tokens=1_000_000) == pytest.approx(4.5)


def test_an_unknown_model_has_an_unknown_price_and_a_local_one_is_free() -> None:
    table = CapabilityTable()
    caps = table.lookup("openai", "some-new-model")
    assert caps.known is False and caps.priced is False
    assert caps.price_source == "unknown"
    assert (caps.input_price, caps.output_price) == (0.0, 0.0)
    assert caps.structured == "json_schema"  # negotiation starts at the best mode
    local = table.lookup("openai", "llama3.1:8b", local=True)
    assert local.priced is True and local.price_source == "local"
    assert cost_usd(local, input_tokens=10_000, output_tokens=2_000) == 0.0


def test_a_known_model_keeps_its_price_behind_a_gateway_or_a_local_address() -> None:
    table = CapabilityTable()
    direct = table.lookup("openai", "gpt-5.4")
    for name in ("gpt-5.4", "openai/gpt-5.4"):
        via = table.lookup("openai", name, local=True)
        assert (via.input_price, via.output_price) == (direct.input_price, direct.output_price)
        assert via.price_source == "table"
    claude = table.lookup("openai", "anthropic/claude-sonnet-5-5")
    assert (claude.input_price, claude.output_price) == (2.0, 10.0)
    assert claude.family == "openai" and claude.structured == "json_schema"


def test_config_extends_the_capability_table() -> None:
    from bot.providers import ModelCapabilities

    local = ModelCapabilities(
        family="openai",
        match="llama3*",
        context_window=8192,
        structured="json_schema",
        input_price=0,
        output_price=0,
        cache_write_price=0,
        cache_read_price=0,
    )
    caps = CapabilityTable([local]).lookup("openai", "llama3.1:8b")
    assert caps.known and caps.context_window == 8192 and caps.input_price == 0


@pytest.mark.parametrize(
    ("text", "provider", "model", "base_url"),
    [
        ("anthropic:claude-opus-5", "anthropic", "claude-opus-5", None),
        ("openai:gpt-5.4", "openai", "gpt-5.4", None),
        ("vllm:meta/llama-3:70b", "vllm", "meta/llama-3:70b", "http://vllm:8000/v1"),
        (
            "openai-compatible:qwen@http://127.0.0.1:1234/v1",
            "openai-compatible",
            "qwen",
            "http://127.0.0.1:1234/v1",
        ),
        ("ollama:llama3.1:8b", "ollama", "llama3.1:8b", "http://127.0.0.1:11434/v1"),
    ],
)
def test_model_references(text: str, provider: str, model: str, base_url: str | None) -> None:
    settings = Settings(_env_file=None, endpoints={"vllm": {"base_url": "http://vllm:8000/v1"}})
    ref = ProviderRegistry(settings).resolve(text)
    assert (ref.provider, ref.model, ref.base_url) == (provider, model, base_url)


@pytest.mark.parametrize("text", ["nocolon", "unknown:model", "openai-compatible:m@ftp://x"])
def test_bad_model_references_are_clear(text: str) -> None:
    with pytest.raises(ConfigurationError):
        ProviderRegistry(Settings(_env_file=None)).resolve(text)


def test_repo_config_may_not_name_a_url() -> None:
    with pytest.raises(ConfigurationError, match="may not name"):
        ProviderRegistry(Settings(_env_file=None)).resolve(
            "openai-compatible:m@http://evil.example/v1", allow_urls=False
        )


async def test_missing_key_is_a_configuration_error_without_the_secret(
    models: FakeModelServer,
) -> None:
    reg = ProviderRegistry(make_settings(models, anthropic_api_key=None))
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY is not set"):
        reg.get(ANTHROPIC)


async def test_unreachable_endpoint(models: FakeModelServer) -> None:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    with pytest.raises(Unreachable):
        await reg.get("openai-compatible:m@http://127.0.0.1:9/v1").call(structured_call())
    await reg.aclose()


async def test_authentication_failure_names_the_variable_not_the_key(
    models: FakeModelServer,
) -> None:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    models.on(reply=Fault.unauthorized())
    with pytest.raises(ConfigurationError) as caught:
        await reg.get(OPENAI).call(structured_call())
    assert "OPENAI_API_KEY" in str(caught.value)
    assert "test-openai-key" not in str(caught.value)
    await reg.aclose()
