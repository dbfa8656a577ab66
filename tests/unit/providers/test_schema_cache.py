"""Tool schemas are built once per process, and never changed by the bodies that carry them;
every call is counted per model (the one reference called, never a list of them).

Against the fake model server through the real SDKs; the schema builds are counted by the
counter in bot.providers.schema, the metrics read from the real Prometheus registry.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from bot.council.engine import Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.prompts import DELIBERATION_TOOLS, tools_for
from bot.providers import (
    ModelCall,
    ProviderError,
    ProviderRegistry,
    anthropic_adapter,
    openai_adapter,
)
from bot.providers.base import Message, SystemBlock
from bot.providers.schema import (
    SCHEMA_BUILDS,
    model_schema,
    schema_chars,
    strict_schema,
    tool_schema,
)
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, Fault
from tests.unit.council.test_engine import ANTHROPIC, OPENAI, request
from tests.unit.providers.test_providers import make_settings


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


def forget_schemas() -> None:
    for cached in (tool_schema, schema_chars, anthropic_adapter._tool, openai_adapter._function):
        cached.cache_clear()
    SCHEMA_BUILDS.clear()


async def test_each_schema_is_built_once_however_many_calls(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    forget_schemas()
    engine = Engine(registry, load_catalog(), InMemoryLedger())
    calls = 0
    for n in range(4):
        await engine.deliberate(request(did=f"s-{n}", models=[ANTHROPIC, OPENAI]))
        calls = len(models.calls)
    assert calls > 3 * len(tools_for("board"))
    # Anthropic sends every tool of the protocol's phases, plain; OpenAI each phase's strict one.
    assert {name for name, strict in SCHEMA_BUILDS if not strict} == {
        t.schema.__name__ for t in tools_for("board")
    }
    assert any(strict for _, strict in SCHEMA_BUILDS)
    assert set(SCHEMA_BUILDS.values()) == {1}, SCHEMA_BUILDS


async def test_the_bodies_never_change_the_cached_schemas(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    engine = Engine(registry, load_catalog(), InMemoryLedger())
    await engine.deliberate(request(did="m-1", models=[ANTHROPIC, OPENAI]))
    for tool in DELIBERATION_TOOLS:
        assert tool_schema(tool.schema, strict=False) == model_schema(tool.schema)
        assert tool_schema(tool.schema, strict=True) == strict_schema(tool.schema)
        assert anthropic_adapter._tool(tool)["input_schema"] == model_schema(tool.schema)
        function = openai_adapter._function(tool, strict=True)["function"]
        assert function["parameters"] == strict_schema(tool.schema)
    # What the fake received is the schema as built.
    sent = [c.request.output_schema for c in models.calls if c.request.api == "anthropic"]
    assert sent and all(s is not None for s in sent)


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_calls_are_counted_per_model_latency_and_errors(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    seconds = "council_model_call_seconds_count"
    errors = "council_model_call_errors_total"
    before = {ref: sample(seconds, {"model": ref}) for ref in (ANTHROPIC, OPENAI)}
    failed = sample(errors, {"model": OPENAI, "kind": "server_error"})
    clean = sample(errors, {"model": ANTHROPIC, "kind": "server_error"})
    tokens_before = sample("council_model_tokens_total", {"model": ANTHROPIC, "kind": "output"})
    models.on(lambda r: r.api == "openai", reply=Fault.server_error(), times=1)
    models.default(CouncilScript().reply)
    call: ModelCall[Any] = ModelCall(
        system=[SystemBlock(text="You review code.")],
        messages=[Message(role="user", content="Say hello.")],
    )
    with pytest.raises(ProviderError):
        await registry.get(OPENAI).call(call)
    await registry.get(OPENAI).call(call)
    for _ in range(2):
        await registry.get(ANTHROPIC).call(call)

    assert sample(seconds, {"model": ANTHROPIC}) - before[ANTHROPIC] == 2
    assert sample(seconds, {"model": OPENAI}) - before[OPENAI] == 2  # failed or answered
    assert sample(errors, {"model": OPENAI, "kind": "server_error"}) - failed == 1
    assert sample(errors, {"model": ANTHROPIC, "kind": "server_error"}) - clean == 0
    # Tokens are counted per call under the model called, as the fake reported them.
    answered = [c for c in models.calls if c.status == 200 and c.api == "anthropic"]
    billed = sum(int((c.usage or {}).get("output_tokens", 0)) for c in answered)
    assert (
        sample("council_model_tokens_total", {"model": ANTHROPIC, "kind": "output"})
        - (tokens_before)
        == billed
        > 0
    )
    # One label per model reference: never the joined list of a deliberation's models.
    labels = {
        s.labels["model"]
        for metric in REGISTRY.collect()
        if metric.name
        in ("council_model_call_seconds", "council_model_call_errors", "council_model_tokens")
        for s in metric.samples
    }
    assert {ANTHROPIC, OPENAI} <= labels
    assert not any("," in label for label in labels)
