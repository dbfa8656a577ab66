"""Structured output against the servers people run: each server kind of the fake behaves
like the real one (llama-cpp-python refuses json_schema with a 500, LM Studio refuses
json_object with a 400, a chatty model ignores the format...), and the adapter finds a mode
that works, remembers it, and a board convenes on it."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.asyncio import Redis

from bot.council.advisory import Resolution, SeatState
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.scoring import ReviewSignals
from bot.providers import BadRequest, InvalidOutput, ProviderRegistry, ServerError
from bot.providers.negotiation import IGNORED_TO_GIVE_UP, ProcessModes
from bot.providers.openai_adapter import OpenAIAdapter
from bot.providers.schema import schema_instructions
from bot.queue.modes import RedisModes
from bot.tokens import TokenEstimator
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, Fault, Reply
from tests.unit.providers.test_providers import GOOD, Verdict, make_settings, structured_call

MODEL = "qwen2.5-coder:7b"
REF = f"box:{MODEL}"


def box(models: FakeModelServer, **endpoint: Any) -> ProviderRegistry:
    """A registry with one local OpenAI-compatible endpoint, "box", at the fake."""
    config = {"base_url": models.openai_url, "local": True, **endpoint}
    return ProviderRegistry(make_settings(models, endpoints={"box": config}, max_retries=0))


def adapter(registry: ProviderRegistry) -> OpenAIAdapter:
    found = registry.get(REF)
    assert isinstance(found, OpenAIAdapter)
    return found


def kinds(models: FakeModelServer) -> list[tuple[int, str]]:
    """(status, how structure was asked for) of every chat call."""
    out = []
    for call in models.calls:
        body = call.request.body
        if "response_format" in body:
            how = str(body["response_format"]["type"])
        elif body.get("tools"):
            how = "tools"
        else:
            how = "text"
        out.append((call.status, how))
    return out


@pytest.fixture
async def redis() -> AsyncIterator[Redis]:
    client = Redis.from_url("redis://127.0.0.1:6379/0")
    yield client
    await client.aclose()


async def test_llama_cpp_refuses_json_schema_and_json_object_with_its_schema_works(
    models: FakeModelServer,
) -> None:
    models.behave_as("llama-cpp-python", MODEL)
    models.on(reply=Reply(json=GOOD))
    registry = box(models)
    result = await adapter(registry).call(structured_call())
    assert result.output == Verdict.model_validate(GOOD)
    assert kinds(models) == [(500, "json_schema"), (200, "json_object")]
    sent = models.calls[-1].request.body["response_format"]
    assert sent["schema"]["required"] == list(Verdict.model_json_schema()["properties"])
    assert adapter(registry).structured_mode == "json_object"
    await adapter(registry).call(structured_call())
    assert kinds(models)[-1] == (200, "json_object")
    assert len(models.calls) == 3  # remembered: no second refusal
    await registry.aclose()
    # A new client in this process starts with what worked.
    again = box(models)
    await adapter(again).call(structured_call())
    assert kinds(models)[-1] == (200, "json_object") and len(models.calls) == 4
    await again.aclose()


async def test_lm_studio_refuses_json_object_so_an_old_config_lands_on_tools(
    models: FakeModelServer,
) -> None:
    models.behave_as("lm-studio", MODEL)
    models.on(reply=Reply(json=GOOD))
    registry = box(models, json_schema=False)  # the older setting: start after json_schema
    result = await adapter(registry).call(structured_call())
    assert result.output == Verdict.model_validate(GOOD)
    assert kinds(models) == [(400, "json_object"), (200, "tools")]
    tools = models.calls[-1].request.body["tools"]
    assert [t["function"]["name"] for t in tools] == ["verdict"]  # only this call's tool
    assert adapter(registry).structured_mode == "tools"
    await registry.aclose()
    fresh = box(models)  # auto, nothing remembered: json_schema works at once on LM Studio
    fresh.modes = ProcessModes()
    models.calls.clear()
    await adapter(fresh).call(structured_call())
    assert kinds(models) == [(200, "json_schema")]
    await fresh.aclose()


async def test_a_server_without_structure_or_tools_lands_on_text(models: FakeModelServer) -> None:
    models.behave_as("no-tools", MODEL)
    models.on(reply=Reply(json=GOOD))
    registry = box(models)
    result = await adapter(registry).call(structured_call())
    assert result.output == Verdict.model_validate(GOOD)
    assert kinds(models) == [
        (400, "json_schema"),
        (400, "json_object"),
        (400, "tools"),
        (200, "text"),
    ]
    last = models.calls[-1].request
    assert schema_instructions("verdict", {})[:60] in last.prompt_text()
    assert adapter(registry).structured_mode == "text"
    await registry.aclose()


async def test_a_model_that_ignores_the_format_is_read_and_then_told_the_schema(
    models: FakeModelServer,
) -> None:
    """Each prose answer is read (the JSON out of its text); only after
    `IGNORED_TO_GIVE_UP` of them in a row is the format given up for the schema in the
    prompt: one prose answer is the model's, not proof that the server ignores the format."""
    models.behave_as("prose", MODEL)
    models.on(reply=Reply(json=GOOD))
    registry = box(models)
    for answered in range(1, IGNORED_TO_GIVE_UP + 1):
        assert adapter(registry).structured_mode == "json_schema"
        result = await adapter(registry).call(structured_call())
        assert result.output == Verdict.model_validate(GOOD)
        assert "```json" in result.text
        assert "response_format" in models.calls[-1].request.body
        assert len(models.calls) == answered  # read, never re-asked
    assert adapter(registry).structured_mode == "text"
    await adapter(registry).call(structured_call())
    last = models.calls[-1].request
    assert "response_format" not in last.body
    assert "JSON schema" in last.prompt_text()
    await registry.aclose()


async def test_one_prose_answer_between_json_ones_keeps_the_format(
    models: FakeModelServer,
) -> None:
    models.on(reply=Reply(json=GOOD), times=1)
    models.on(
        reply=Reply(text="Looks fine to me.\n```json\n" + json.dumps(GOOD) + "\n```"), times=1
    )
    models.on(reply=Reply(json=GOOD))
    registry = box(models)
    for _ in range(IGNORED_TO_GIVE_UP + 1):
        result = await adapter(registry).call(structured_call())
        assert result.output == Verdict.model_validate(GOOD)
    assert adapter(registry).structured_mode == "json_schema"
    assert all("response_format" in c.request.body for c in models.calls)
    await registry.aclose()


async def test_text_mode_repairs_an_answer_once(models: FakeModelServer) -> None:
    models.on(reply=Reply(text="I reviewed it and it looks fine overall."), times=1)
    models.on(reply=Reply(text=json.dumps(GOOD)))
    registry = box(models, structured="text")
    result = await adapter(registry).call(structured_call())
    assert result.output == Verdict.model_validate(GOOD)
    assert len(models.calls) == 2
    repair = models.calls[1].request.last_user_text()
    assert "could not be read as the JSON object" in repair
    assert result.usage.output_tokens == sum(
        (c.usage or {})["completion_tokens"] for c in models.calls
    )
    await registry.aclose()


async def test_a_set_mode_is_used_as_is_and_its_refusal_surfaces(models: FakeModelServer) -> None:
    models.behave_as("llama-cpp-python", MODEL)
    registry = box(models, structured="json_schema")
    with pytest.raises(ServerError) as raised:
        await adapter(registry).call(structured_call())
    assert "response_format.type" in str(raised.value)
    assert len(models.calls) == 1
    await registry.aclose()


async def test_a_real_outage_is_not_taken_for_a_refusal(models: FakeModelServer) -> None:
    models.on(reply=Fault.server_error(502))
    registry = box(models)
    with pytest.raises(ServerError):
        await adapter(registry).call(structured_call())
    assert kinds(models) == [(502, "json_schema")]
    assert not adapter(registry).mode_confirmed
    await registry.aclose()


async def test_a_refusal_that_does_not_name_the_format_is_not_a_fallback(
    models: FakeModelServer,
) -> None:
    models.on(reply=Fault.bad_request("Invalid 'messages[1].content': string too long."))
    registry = box(models)
    with pytest.raises(BadRequest):
        await adapter(registry).call(structured_call())
    assert kinds(models) == [(400, "json_schema")]
    await registry.aclose()


async def test_the_working_mode_is_shared_by_workers_through_redis(
    models: FakeModelServer, redis: Redis
) -> None:
    models.behave_as("llama-cpp-python", MODEL)
    models.on(reply=Reply(json=GOOD))
    prefix = f"test-{uuid.uuid4().hex[:8]}"
    first = box(models)
    first.modes = RedisModes(redis, prefix)
    await adapter(first).call(structured_call())
    assert [s for s, _ in kinds(models)] == [500, 200]
    # Another worker: its own process memory is empty, Redis knows.
    second = box(models)
    second.modes = RedisModes(redis, prefix)
    models.calls.clear()
    await adapter(second).call(structured_call())
    assert kinds(models) == [(200, "json_object")]
    await first.aclose()
    await second.aclose()
    await redis.delete(*[k async for k in redis.scan_iter(f"{prefix}:*")])


async def test_ollama_native_format_when_set(models: FakeModelServer) -> None:
    models.behave_as("ollama", MODEL)
    models.on(reply=Reply(json=GOOD))
    registry = box(models, structured="format")
    found = registry.get(REF)
    result = await found.call(structured_call())
    assert result.output == Verdict.model_validate(GOOD)
    body = models.calls[-1].request.body
    # Streamed: a looping answer can be left (tests/unit/providers/test_runaway_answers.py).
    assert body["format"]["required"] and body["stream"] is True
    assert body["options"]["num_predict"] > 0
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    assert result.cost_usd == 0.0  # a local model
    await registry.aclose()


async def test_a_local_server_gets_one_call_at_a_time_and_each_deadline_starts_at_its_turn(
    models: FakeModelServer,
) -> None:
    models.on(reply=Reply(json=GOOD, latency_s=0.4))
    registry = box(models)
    one = adapter(registry)
    calls = [structured_call(deadline_s=0.8) for _ in range(3)]
    results = await asyncio.gather(*(one.call(c) for c in calls))
    assert all(r.output is not None for r in results)  # 1.2 s in all, 0.4 s each
    assert models.peak_in_flight() == 1
    await registry.aclose()
    wide = box(models, concurrency=3)
    models.calls.clear()
    await asyncio.gather(*(adapter(wide).call(structured_call()) for _ in range(3)))
    assert models.peak_in_flight() >= 2
    await wide.aclose()


async def test_reasoning_tokens_are_counted_and_priced(models: FakeModelServer) -> None:
    models.on(reply=Reply(json=GOOD, reasoning_tokens=900))
    registry = ProviderRegistry(make_settings(models))
    result = await registry.get("openai:gpt-5.4").call(structured_call())
    assert result.usage.reasoning_tokens == 900
    assert result.usage.output_tokens >= 900
    caps = registry.capabilities_of("openai:gpt-5.4")
    assert result.cost_usd >= 900 * caps.output_price / 1_000_000
    body = models.calls[-1].request.body
    assert "max_completion_tokens" in body and "temperature" not in body
    await registry.aclose()


CONTEXT = "<untrusted-diff>\n+ def handler(request):\n+     retry(request)\n</untrusted-diff>"
SIGNALS = ReviewSignals(topic="Review this pull request", languages=["python"], areas=["security"])


@pytest.mark.parametrize(
    ("kind", "endpoint", "mode"),
    [
        ("llama-cpp-python", {}, "json_object"),
        ("lm-studio", {}, "json_schema"),
        ("lm-studio", {"json_schema": False}, "tools"),
        ("ollama", {}, "json_schema"),
        ("ollama", {"structured": "format"}, "format"),
        ("no-tools", {}, "text"),
        ("prose", {}, "text"),
    ],
)
async def test_a_board_convenes_on_every_server_kind(
    models: FakeModelServer, kind: str, endpoint: dict[str, Any], mode: str
) -> None:
    models.behave_as(kind, MODEL)  # type: ignore[arg-type]
    models.default(CouncilScript().reply)
    registry = box(models, concurrency=4, **endpoint)
    registry.modes = ProcessModes()
    request = DeliberationRequest(
        deliberation_id=f"d-{kind}",
        topic="Review this pull request",
        protocol="board",
        context=CONTEXT,
        signals=SIGNALS,
        models=[REF],
        board=BoardConfig(default_size=3, min_size=2, discussion_rounds=1),
        assessment_timeout_s=20.0,
    )
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(request)
    assert advisory.resolution == Resolution.APPROVED, advisory.reason
    assert len(advisory.seats) >= 2
    assert all(s.state == SeatState.OK for s in advisory.seats), advisory.seats
    assert all(s.assessment is not None and s.vote is not None for s in advisory.seats)
    assert advisory.synthesis is not None
    assert not advisory.partial and not advisory.missing_perspectives
    assert registry.get(REF).structured_mode == mode
    await registry.aclose()


async def test_a_raw_newline_inside_a_string_is_read_as_the_server_meant_it(
    models: FakeModelServer,
) -> None:
    """llama-cpp-python's schema grammar lets a model write a raw newline inside a string
    (a note, a replacement of code); `json.loads` refuses it as an "Invalid control
    character". The answer is the object asked for: it is taken, with no re-ask, and the
    endpoint keeps its mode (the schema still enforced by the server's grammar)."""
    models.behave_as("llama-cpp-python", MODEL)
    note = "line one\nline two\tindented"
    raw = json.dumps({**GOOD, "note": "@@"}).replace('"@@"', '"' + note + '"')
    assert "\n" in raw  # a raw control character inside a string, as the server sent it
    with pytest.raises(json.JSONDecodeError, match="Invalid control character"):
        json.loads(raw)
    models.on(reply=Reply(text=raw))
    registry = box(models)
    result = await adapter(registry).call(structured_call())
    assert result.output == Verdict.model_validate({**GOOD, "note": note})
    assert kinds(models) == [(500, "json_schema"), (200, "json_object")]  # no re-ask
    assert adapter(registry).structured_mode == "json_object"
    await adapter(registry).call(structured_call())
    assert kinds(models)[-1] == (200, "json_object")  # the grammar is still asked for
    await registry.aclose()


def test_a_repair_reason_names_what_is_wrong_with_the_whole_answer() -> None:
    """Free text with a raw newline in a string: the outer object is read (not an inner
    one, whose missing fields would be a false reason for the re-ask)."""
    from bot.providers.schema import extract_json

    inner = '{"x": 1, "label": null}'
    text = 'Here it is: {"verdict": "REJECT", "score": 3, "points": [' + inner + "], "
    text += '"best": null, "note": "a\nb"}'
    assert extract_json(text)["verdict"] == "REJECT"


async def test_a_number_out_of_range_is_clamped_with_a_note_not_re_asked(
    models: FakeModelServer,
) -> None:
    """llama-cpp-python's grammar drops an integer's minimum and maximum: a score of 0 where
    the schema says 1-10 came back on every re-ask. It is read as the nearest allowed value,
    and the answer's record says so; one request, no re-ask."""
    models.behave_as("llama-cpp-python", MODEL)
    models.on(reply=Reply(json={**GOOD, "score": 0}), times=1)
    registry = box(models, structured="json_object")
    result = await adapter(registry).call(structured_call())
    assert result.output is not None and result.output.score == 1
    assert result.adjusted == ("score: 0 is below the minimum 1; read as 1",)
    assert len(models.calls) == 1
    models.on(reply=Reply(json={**GOOD, "score": 11}))
    result = await adapter(registry).call(structured_call())
    assert result.output is not None and result.output.score == 10
    assert result.adjusted == ("score: 11 is above the maximum 10; read as 10",)
    await registry.aclose()


async def test_an_answer_wrong_in_another_way_is_not_clamped_but_refused(
    models: FakeModelServer,
) -> None:
    """A missing field beside a number out of range: nothing is guessed, the answer is
    invalid (the engine re-asks, naming what is wrong)."""
    models.behave_as("llama-cpp-python", MODEL)
    wrong = {k: v for k, v in GOOD.items() if k != "verdict"} | {"score": 0}
    models.on(reply=Reply(json=wrong))
    registry = box(models, structured="json_object")
    with pytest.raises(InvalidOutput) as refused:
        await adapter(registry).call(structured_call())
    assert "verdict" in str(refused.value) and "greater_than_equal" in str(refused.value)
    await registry.aclose()


def test_clamping_reads_nested_numbers_and_refuses_strict_float_bounds() -> None:
    from bot.providers.ranges import clamped

    errors = [
        {"type": "less_than_equal", "loc": ("points", 0, "x"), "ctx": {"le": 5}},
        {"type": "greater_than", "loc": ("n",), "ctx": {"gt": 0}},
    ]
    fixed = clamped({"points": [{"x": 9}], "n": 0}, errors)
    assert fixed == (
        {"points": [{"x": 5}], "n": 1},
        ["points.0.x: 9 is above the maximum 5; read as 5", "n: 0 is not above 0; read as 1"],
    )
    strict_float = [{"type": "greater_than", "loc": ("p",), "ctx": {"gt": 0.0}}]
    assert clamped({"p": 0.0}, strict_float) is None
    assert clamped({"p": "x"}, [{"type": "int_parsing", "loc": ("p",)}]) is None


async def test_a_stream_without_usage_is_counted_by_the_estimator_and_marked(
    models: FakeModelServer,
) -> None:
    """llama-cpp-python sends no usage chunk in a stream: the call's tokens are the
    estimator's count (not 0), marked estimated, and the estimator is not taught that the
    request cost nothing."""
    models.behave_as("llama-cpp-python", MODEL)
    models.on(reply=Reply(json=GOOD))
    registry = box(models, structured="json_object")
    registry.estimator = TokenEstimator()  # this registry's own, read before and after
    before = {kind: registry.estimator.ratio(kind) for kind in ("prose", "code", "data")}
    result = await adapter(registry).start(structured_call()).result()
    assert models.calls[-1].request.stream and models.calls[-1].usage is None
    assert result.usage_estimated
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    after = {kind: registry.estimator.ratio(kind) for kind in ("prose", "code", "data")}
    assert after == before
    await registry.aclose()
