"""A phase never waits on negotiation: on a fresh adapter the seats of a phase call at once,
and the call that finds the structured mode holds the others only until the server has
accepted or refused the request's format (its response began), never for its whole answer;
where the mode is known (set in the settings, OpenAI's own API, Azure) nothing is asked."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from bot.providers import CapabilityTable, Message, ProviderRegistry
from bot.providers.adapter import Adapter
from bot.providers.base import CallResult
from bot.providers.negotiation import known_endpoint
from bot.providers.openai_adapter import OpenAIAdapter
from bot.providers.refs import ModelRef
from bot.settings import EndpointConfig
from tests.support.model_server import FakeModelServer, RecordedCall, Reply
from tests.unit.providers.test_negotiation import MODEL, REF, kinds
from tests.unit.providers.test_providers import GOOD, Verdict, make_settings, structured_call

LATENCY = 1.5  # every answer's, from its request's arrival to its end
SEATS = 3


def registry_for(models: FakeModelServer, **endpoint: Any) -> ProviderRegistry:
    """Endpoint "box" at the fake, three calls at a time, the settings' retries (2); and
    the `azure` endpoint, the fake behind Azure's api-version."""
    box = {"base_url": models.openai_url, "concurrency": SEATS, **endpoint}
    azure = {"base_url": models.openai_url, "api_version": "2024-10-21", "concurrency": SEATS}
    settings = make_settings(models, endpoints={"box": box, "azure": azure})
    return ProviderRegistry(settings)


def seat_call(seat: int) -> Any:
    """Each seat's own request (its own body: the fake tells retries from other seats)."""
    message = Message(role="user", content=f"Review this change as seat {seat}.")
    return structured_call(messages=[message], label=f"seat-{seat}/assess")


async def one_phase(
    adapter: Adapter, *, streamed_leader: bool = False
) -> tuple[float, list[CallResult[Verdict]]]:
    """The seats' calls of one phase, all at once; the first streamed when `streamed_leader`
    (as the engine's leader is). Seconds from the first call to the last answer."""
    started = time.monotonic()
    leader = adapter.start(seat_call(1)).result() if streamed_leader else adapter.call(seat_call(1))
    others = [adapter.call(seat_call(seat)) for seat in range(2, SEATS + 1)]
    results = await asyncio.gather(leader, *others)
    return time.monotonic() - started, list(results)


def answered(models: FakeModelServer) -> list[RecordedCall]:
    return [c for c in models.calls if c.status == 200]


def sent_before_the_first_answer_ended(models: FakeModelServer) -> bool:
    """Every answered request reached the server before the first answer was complete."""
    calls = answered(models)
    first = min(calls, key=lambda c: c.started_at)
    return all(c.started_at < first.ended_at for c in calls)


@pytest.mark.parametrize("streamed_leader", [False, True])
async def test_a_fresh_adapters_seats_finish_in_one_answer_time_not_two(
    models: FakeModelServer, streamed_leader: bool
) -> None:
    models.on(reply=Reply(json=GOOD, latency_s=LATENCY))
    registry = registry_for(models)
    adapter = registry.get(REF)
    assert isinstance(adapter, OpenAIAdapter) and not adapter.mode_confirmed
    elapsed, results = await one_phase(adapter, streamed_leader=streamed_leader)
    assert all(r.output == Verdict.model_validate(GOOD) for r in results)
    assert kinds(models) == [(200, "json_schema")] * SEATS
    assert sent_before_the_first_answer_ended(models), [
        (round(c.started_at, 2), round(c.ended_at, 2)) for c in models.calls
    ]
    assert elapsed < 2 * LATENCY  # one answer's time (two before: the first's, the others')
    assert adapter.mode_confirmed and adapter.structured_mode == "json_schema"
    await registry.aclose()


async def test_a_refusal_under_concurrency_is_met_once_and_every_seat_steps_down(
    models: FakeModelServer,
) -> None:
    models.behave_as("llama-cpp-python", MODEL)
    models.max_parallel(SEATS, MODEL)
    models.on(reply=Reply(json=GOOD, latency_s=LATENCY))
    registry = registry_for(models)
    _, results = await one_phase(registry.get(REF))
    assert all(r.output == Verdict.model_validate(GOOD) for r in results)
    # One seat met the refusal (its SDK retries aside); no other seat sent json_schema.
    refused = [c for c in models.calls if c.status == 500]
    assert {c.label for c in refused} == {"seat-1/assess"}
    assert {how for status, how in kinds(models) if status == 500} == {"json_schema"}
    assert sorted(c.label or "" for c in answered(models)) == [
        f"seat-{seat}/assess" for seat in range(1, SEATS + 1)
    ]
    assert {how for status, how in kinds(models) if status == 200} == {"json_object"}
    assert sent_before_the_first_answer_ended(models)
    assert registry.get(REF).structured_mode == "json_object"
    await registry.aclose()


async def test_a_mode_set_in_the_settings_is_never_negotiated(models: FakeModelServer) -> None:
    models.behave_as("llama-cpp-python", MODEL)  # it would refuse json_schema
    models.max_parallel(SEATS, MODEL)
    models.on(reply=Reply(json=GOOD, latency_s=LATENCY))
    registry = registry_for(models, structured="json_object")
    elapsed, results = await one_phase(registry.get(REF))
    assert all(r.output == Verdict.model_validate(GOOD) for r in results)
    assert kinds(models) == [(200, "json_object")] * SEATS  # the first request already
    assert sent_before_the_first_answer_ended(models)
    assert elapsed < 2 * LATENCY
    await registry.aclose()


@pytest.mark.parametrize("ref", ["openai:gpt-5.4", "azure:council-deployment"])
async def test_openai_and_azure_are_known_so_the_first_requests_go_at_once(
    models: FakeModelServer, ref: str
) -> None:
    models.on(reply=Reply(json=GOOD, latency_s=LATENCY))
    registry = registry_for(models)
    adapter = registry.get(ref)
    assert isinstance(adapter, OpenAIAdapter)
    assert adapter.structured_mode == "json_schema"  # before any call
    _, results = await one_phase(adapter)
    assert all(r.output == Verdict.model_validate(GOOD) for r in results)
    assert kinds(models) == [(200, "json_schema")] * SEATS
    assert sent_before_the_first_answer_ended(models)
    await registry.aclose()


async def test_a_known_endpoint_that_refuses_the_format_is_negotiated_from_the_next_mode(
    models: FakeModelServer,
) -> None:
    """An Azure deployment of a model without structured outputs: the seats sent at once
    are refused, the first refusal steps down, and every seat lands on json_object."""
    models.behave_as("llama-cpp-python", "old-deployment")
    models.max_parallel(SEATS, "old-deployment")
    models.on(reply=Reply(json=GOOD, latency_s=0.2))
    azure = {"base_url": models.openai_url, "api_version": "2024-06-01", "concurrency": SEATS}
    registry = ProviderRegistry(make_settings(models, endpoints={"azure": azure}, max_retries=0))
    adapter = registry.get("azure:old-deployment")
    assert isinstance(adapter, OpenAIAdapter) and not adapter.mode_confirmed
    _, results = await one_phase(adapter)
    assert all(r.output == Verdict.model_validate(GOOD) for r in results)
    statuses = kinds(models)
    assert sorted(statuses) == [(200, "json_object")] * SEATS + [(500, "json_schema")] * SEATS
    assert statuses[-1] == (200, "json_object")
    assert adapter.structured_mode == "json_object" and adapter.mode_confirmed
    await adapter.call(seat_call(4))
    assert kinds(models)[-1] == (200, "json_object")  # no second refusal
    await registry.aclose()


async def test_a_server_that_ignores_the_format_under_concurrency_is_read_then_told(
    models: FakeModelServer,
) -> None:
    """The seats that went with the accepted format read their JSON out of the prose; the
    calls after them put the schema in the prompt."""
    models.behave_as("prose", MODEL)
    models.on(reply=Reply(json=GOOD, latency_s=0.5))
    registry = registry_for(models)
    adapter = registry.get(REF)
    _, results = await one_phase(adapter)
    assert all(r.output == Verdict.model_validate(GOOD) for r in results)
    assert kinds(models) == [(200, "json_schema")] * SEATS  # no re-ask
    await adapter.call(seat_call(4))
    later = models.calls[-1].request
    assert "response_format" not in later.body and "JSON schema" in later.prompt_text()
    await registry.aclose()


def test_which_endpoints_are_known() -> None:
    table = CapabilityTable()

    def known(provider: str, model: str, url: str | None, version: str | None = None) -> bool:
        endpoint = None
        if provider not in ("openai", "openai-compatible"):
            endpoint = EndpointConfig(base_url=url or "", api_version=version)
        ref = ModelRef(
            f"{provider}:{model}", provider, "openai", model, url, None, version, endpoint
        )
        return known_endpoint(ref, table.lookup("openai", model))

    assert known("openai", "gpt-5.4", None)  # api.openai.com
    assert not known("openai", "ft:my-fine-tune", None)  # a model the table does not know
    assert known("azure", "prod-gpt", "https://acme.openai.azure.com/openai/v1")
    assert known("azure", "prod-gpt", "https://acme.cognitiveservices.azure.com/openai/v1")
    assert known("gateway", "prod-gpt", "https://llm.acme.internal/v1", "2024-10-21")
    assert not known("vllm", "gpt-5.4", "http://10.0.0.5:8000/v1")  # a known name elsewhere
    assert not known("openai-compatible", "gpt-5.4", "http://127.0.0.1:8080/v1")
