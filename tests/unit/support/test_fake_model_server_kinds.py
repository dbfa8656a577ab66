"""Server kinds of the fake model server: the OpenAI-compatible servers people run, driven
through the real openai (and anthropic) SDKs; Ollama's native /api/chat through httpx."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import anthropic
import httpx
import openai
import pytest
from pydantic import BaseModel, ConfigDict, Field

from bot.providers.schema import extract_json, schema_instructions, strict_schema
from tests.support.council_answers import CouncilScript
from tests.support.model_server import (
    MODELS_CREATED,
    SERVER_KINDS,
    FakeModelServer,
    Fault,
    Reply,
    ServerKind,
    count_tokens,
)

GPT = "gpt-5"
LOCAL = "llama3.1:8b"
CLAUDE = "claude-sonnet-5-5-20260101"


class Point(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int
    label: str | None


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    verdict: Literal["APPROVE", "REJECT"]
    score: int = Field(ge=1, le=10)
    points: list[Point] = Field(min_length=1)


class Vote(BaseModel):
    """The shape of CouncilScript's submit_vote answer."""

    model_config = ConfigDict(extra="forbid")
    vote: str
    confidence: float
    rationale: str
    conditions: list[str]
    suggestions: list[str]


GOOD = {"verdict": "REJECT", "score": 3, "points": [{"x": 4, "label": "retry"}]}
VERDICT_SCHEMA = strict_schema(Verdict)
JSON_SCHEMA: Any = {
    "type": "json_schema",
    "json_schema": {"name": "Verdict", "schema": VERDICT_SCHEMA, "strict": True},
}
LLAMA_CPP_MESSAGE = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
    "  Input should be 'text' or 'json_object' [type=literal_error, "
    "input_value='json_schema', input_type=str]"
)
LM_STUDIO_MESSAGE = "'response_format.type' must be 'json_schema'"
VERDICT_TOOL: Any = {
    "type": "function",
    "function": {"name": "submit_verdict", "parameters": VERDICT_SCHEMA},
}
FORCE_VERDICT: Any = {"type": "function", "function": {"name": "submit_verdict"}}


# One client of each per module: building one (its SSL context) costs about 0.1 s.
@pytest.fixture(scope="module")
async def gpt(fake_models: FakeModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    # A short timeout: a serving slot the fake leaked fails a test instead of hanging it.
    client = openai.AsyncOpenAI(
        base_url=fake_models.openai_url, api_key="test", max_retries=0, timeout=5.0
    )
    yield client
    await client.close()


@pytest.fixture(scope="module")
async def claude(fake_models: FakeModelServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(
        base_url=fake_models.anthropic_url, api_key="test", max_retries=0, timeout=5.0
    )
    yield client
    await client.close()


@pytest.fixture(scope="module")
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        yield client


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


async def chat(gpt: openai.AsyncOpenAI, model: str = LOCAL, **kwargs: Any) -> Any:
    kwargs.setdefault("messages", user("Assess the change."))
    return await gpt.chat.completions.create(model=model, **kwargs)


def content_of(completion: Any) -> str:
    content = completion.choices[0].message.content
    assert isinstance(content, str)
    return content


def canonical_tokens(value: object) -> int:
    return count_tokens(json.dumps(value, sort_keys=True, separators=(",", ":")))


# --------------------------------------------------------------------------------------------
# Each kind's refusal, in its own status, body and message; the mode it honours
# --------------------------------------------------------------------------------------------


async def test_llama_cpp_python_refuses_json_schema_with_its_500(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("llama-cpp-python")
    with pytest.raises(openai.InternalServerError) as caught:
        await chat(gpt, response_format=JSON_SCHEMA)
    err = caught.value
    assert err.status_code == 500
    assert err.message == f"Error code: 500 - {LLAMA_CPP_MESSAGE}"
    assert err.response.json() == {
        "error": {
            "message": LLAMA_CPP_MESSAGE,
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    }
    assert [(c.status, c.reply) for c in models.calls] == [(500, None)]


async def test_llama_cpp_python_honours_json_object_with_and_without_a_schema(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("llama-cpp-python")
    shaped = await chat(gpt, response_format={"type": "json_object", "schema": VERDICT_SCHEMA})
    Verdict.model_validate_json(content_of(shaped))
    request = models.calls[-1].request
    assert (request.output_name, request.output_schema) == (None, VERDICT_SCHEMA)
    plain = await chat(gpt, response_format={"type": "json_object"})
    assert isinstance(json.loads(content_of(plain)), dict)
    models.on(reply=Reply(json=GOOD))
    scripted = await chat(gpt, response_format={"type": "json_object", "schema": VERDICT_SCHEMA})
    assert json.loads(content_of(scripted)) == GOOD


@pytest.mark.parametrize("schema", [None, VERDICT_SCHEMA])
async def test_lm_studio_refuses_json_object_with_a_plain_string_error(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, schema: Any
) -> None:
    models.behave_as("lm-studio")
    response_format: Any = {"type": "json_object"}
    if schema is not None:
        response_format["schema"] = schema
    with pytest.raises(openai.BadRequestError) as caught:
        await chat(gpt, response_format=response_format)
    err = caught.value
    assert err.status_code == 400
    assert err.response.json() == {"error": LM_STUDIO_MESSAGE}
    # openai 3.x puts only `error.message` into the exception's message: LM Studio's string
    # error leaves the message bare, and the text is the whole `body`.
    assert err.message == "Error code: 400"
    assert err.body == LM_STUDIO_MESSAGE
    assert (err.type, err.code, err.param) == (None, None, None)


async def test_lm_studio_honours_json_schema(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("lm-studio", model=LOCAL)
    completion = await gpt.chat.completions.parse(
        model=LOCAL, messages=user("Assess."), response_format=Verdict
    )
    assert isinstance(completion.choices[0].message.parsed, Verdict)
    models.on(reply=Reply(json=GOOD))
    scripted = await chat(gpt, response_format=JSON_SCHEMA)
    assert Verdict.model_validate_json(content_of(scripted)) == Verdict.model_validate(GOOD)


async def test_ollama_v1_honours_json_schema_json_object_and_tools(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("ollama")
    Verdict.model_validate_json(content_of(await chat(gpt, response_format=JSON_SCHEMA)))
    shaped = await chat(gpt, response_format={"type": "json_object", "schema": VERDICT_SCHEMA})
    Verdict.model_validate_json(content_of(shaped))
    tooled = await chat(gpt, tools=[VERDICT_TOOL], tool_choice=FORCE_VERDICT)
    calls = tooled.choices[0].message.tool_calls
    assert calls is not None and calls[0].function.name == "submit_verdict"
    Verdict.model_validate_json(calls[0].function.arguments)
    assert [c.status for c in models.calls] == [200, 200, 200]


@pytest.mark.parametrize(("model", "full_name"), [(LOCAL, LOCAL), ("llama3", "llama3:latest")])
async def test_no_tools_refuses_tools_as_ollama_does(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, model: str, full_name: str
) -> None:
    models.behave_as("no-tools")
    with pytest.raises(openai.BadRequestError) as caught:
        await chat(gpt, model, tools=[VERDICT_TOOL], tool_choice="none")
    message = f"registry.ollama.ai/library/{full_name} does not support tools"
    err = caught.value
    assert err.status_code == 400
    assert err.message == f"Error code: 400 - {message}"
    assert err.response.json() == {
        "error": {"message": message, "type": "api_error", "param": None, "code": None}
    }


@pytest.mark.parametrize(
    "response_format", [JSON_SCHEMA, {"type": "json_object"}], ids=["json_schema", "json_object"]
)
async def test_no_tools_refuses_structured_output_but_answers_text(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, response_format: Any
) -> None:
    models.behave_as("no-tools")
    with pytest.raises(openai.BadRequestError) as caught:
        await chat(gpt, response_format=response_format)
    err = caught.value
    message = "response_format is not supported by this server"
    assert err.status_code == 400
    assert err.message == f"Error code: 400 - {message}"
    assert (err.type, err.param, err.code) == ("invalid_request_error", "response_format", None)
    assert content_of(await chat(gpt)) == "OK"
    assert [c.status for c in models.calls] == [400, 200]


PROSE = re.compile(r"^[^\n`]+[.!]\n\n```json\n(?P<json>.+)\n```\n\n[^\n`]+[.!]$", re.DOTALL)


@pytest.mark.parametrize(
    "asked",
    [
        {"response_format": JSON_SCHEMA},
        {"response_format": {"type": "json_object"}},
        {"tools": [VERDICT_TOOL], "tool_choice": FORCE_VERDICT},
    ],
    ids=["json_schema", "json_object", "forced_tool"],
)
async def test_prose_wraps_the_answer_in_a_fenced_block_whatever_was_asked(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, asked: dict[str, Any]
) -> None:
    models.behave_as("prose")
    models.on(reply=Reply(json=GOOD), times=1)
    completion = await chat(gpt, **asked)
    choice = completion.choices[0]
    assert choice.message.tool_calls is None and choice.finish_reason == "stop"
    found = PROSE.match(content_of(completion))
    assert found is not None, content_of(completion)
    assert json.loads(found.group("json")) == GOOD
    assert extract_json(content_of(completion)) == GOOD
    if "tools" in asked:
        assert models.calls[-1].request.output_name == "submit_verdict"
        # With no rule, the default answer is a valid instance of the asked schema, wrapped.
        default = await chat(gpt, **asked)
        Verdict.model_validate(extract_json(content_of(default)))


# --------------------------------------------------------------------------------------------
# The answer's shape read from our text mode's instructions: a council runs on every kind
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SERVER_KINDS)
async def test_text_mode_instructions_name_the_answer_on_every_kind(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, kind: ServerKind
) -> None:
    models.behave_as(kind)
    models.default(CouncilScript(vote="REJECT").reply)
    schema = strict_schema(Vote)
    messages: Any = [
        {"role": "user", "content": "You are seated as: the skeptic.\nVote on the change."},
        {"role": "user", "content": schema_instructions("submit_vote", schema)},
    ]
    completion = await chat(gpt, messages=messages)
    request = models.calls[-1].request
    assert (request.output_name, request.output_schema) == ("submit_vote", schema)
    assert request.server_kind == kind
    text = content_of(completion)
    vote = Vote.model_validate(extract_json(text) if kind == "prose" else json.loads(text))
    assert vote.vote == "REJECT"
    assert (PROSE.match(text) is not None) == (kind == "prose")


async def test_a_json_object_schema_takes_its_name_from_the_instructions(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("llama-cpp-python")
    messages: Any = [
        *user("Assess."),
        {"role": "user", "content": schema_instructions("submit_assessment", VERDICT_SCHEMA)},
    ]
    await chat(
        gpt,
        messages=messages,
        response_format={"type": "json_object", "schema": {"type": "object"}},
    )
    request = models.calls[-1].request
    assert request.output_name == "submit_assessment"
    assert request.output_schema == {"type": "object"}  # the schema sent wins over the prompt's


# --------------------------------------------------------------------------------------------
# Serving limits
# --------------------------------------------------------------------------------------------


async def recorded(models: FakeModelServer, count: int) -> None:
    """Wait until the server has seen `count` calls (so the next one arrives after them)."""
    for _ in range(400):
        if len(models.calls) >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"the server saw {len(models.calls)} calls, not {count}")


async def in_order(models: FakeModelServer, *requests: Any) -> list[Any]:
    """Start the requests one after another, each once the server has seen the previous."""
    started = []
    for n, request in enumerate(requests, start=1):
        started.append(asyncio.ensure_future(request))
        await recorded(models, n)
    return list(await asyncio.gather(*started))


@pytest.mark.parametrize("kind", ["llama-cpp-python", "ollama"])
async def test_local_kinds_serve_one_request_at_a_time(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, kind: ServerKind
) -> None:
    models.behave_as(kind)
    models.on(reply=Reply(text="slow", latency_s=0.2))
    await in_order(models, chat(gpt), chat(gpt))
    first, second = models.calls
    assert first.queued_s == 0.0
    assert 0.1 < second.queued_s < 0.4  # it arrived just after the first: about 0.2 s
    served_at = second.started_at + second.queued_s
    assert abs(served_at - first.ended_at) < 0.1  # its turn came when the first was done
    assert second.ended_at - served_at >= 0.2  # and its latency started then
    assert models.peak_in_flight(LOCAL) == 1
    assert models.peak_in_flight() == 1
    assert models.in_flight() == 0


async def test_max_parallel_limits_any_model_first_in_first_out(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.on(reply=Reply(text="slow", latency_s=0.15))
    await in_order(models, chat(gpt, GPT), chat(gpt, GPT))  # OpenAI: unlimited by default
    assert [c.queued_s for c in models.calls] == [0.0, 0.0]
    assert models.peak_in_flight(GPT) == 2
    models.reset()
    models.max_parallel(2, model=GPT)
    models.on(reply=Reply(text="slow", latency_s=0.25), times=2)
    models.on(reply=Reply(text="quick", latency_s=0.05))
    labels = [f"call-{n}" for n in range(5)]
    await in_order(
        models, *(chat(gpt, GPT, extra_headers={"x-council-label": label}) for label in labels)
    )
    assert [c.label for c in models.calls] == labels  # arrival order
    by_service = sorted(models.calls, key=lambda c: c.started_at + c.queued_s)
    assert [c.label for c in by_service] == labels  # served first in, first out
    waits = [c.queued_s for c in models.calls]
    assert waits[:2] == [0.0, 0.0] and all(w > 0.05 for w in waits[2:])
    assert models.peak_in_flight(GPT) == 2 and models.peak_in_flight("other") == 0


async def test_max_parallel_none_lifts_a_local_kinds_single_slot(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("ollama")
    models.max_parallel(None, model=LOCAL)
    models.on(reply=Reply(text="slow", latency_s=0.15))
    await asyncio.gather(chat(gpt), chat(gpt))
    assert [c.queued_s for c in models.calls] == [0.0, 0.0]
    assert models.peak_in_flight(LOCAL) == 2
    with pytest.raises(ValueError):
        models.max_parallel(0)


async def test_a_client_that_leaves_the_queue_frees_its_place(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.max_parallel(1)
    models.on(reply=Reply(text="slow", latency_s=0.4))
    impatient = openai.AsyncOpenAI(
        base_url=models.openai_url, api_key="test", max_retries=0, timeout=0.1
    )
    served = asyncio.ensure_future(chat(gpt, GPT))
    await recorded(models, 1)
    with pytest.raises(openai.APITimeoutError):
        await chat(impatient, GPT)
    await impatient.close()
    gone = models.calls[1]
    for _ in range(40):  # the server notices the disconnect within a poll interval
        if gone.done:
            break
        await asyncio.sleep(0.01)
    assert (gone.status, gone.reply, gone.began_at) == (499, None, None)
    assert 0.08 <= gone.queued_s < 0.4  # it left when its client timed out, after 0.1 s
    assert models.queued() == 0 and models.in_flight() == 1
    await served
    after = await asyncio.wait_for(chat(gpt, GPT), 1.0)  # a leaked slot would block it
    assert content_of(after) == "slow"
    assert models.calls[2].queued_s == 0.0
    assert models.peak_in_flight() == 1 and models.in_flight() == 0


# --------------------------------------------------------------------------------------------
# Model lists and served models
# --------------------------------------------------------------------------------------------


async def test_model_lists_in_each_apis_shape(
    models: FakeModelServer,
    gpt: openai.AsyncOpenAI,
    claude: anthropic.AsyncAnthropic,
    http: httpx.AsyncClient,
) -> None:
    models.served_models = [LOCAL, CLAUDE]
    models.behave_as("ollama", model=LOCAL)
    page = await gpt.models.list()
    assert [(m.id, m.object, m.created, m.owned_by) for m in page.data] == [
        (LOCAL, "model", MODELS_CREATED, "library"),
        (CLAUDE, "model", MODELS_CREATED, "system"),
    ]
    listed = await claude.models.list()
    assert [(m.id, m.type) for m in listed.data] == [(LOCAL, "model"), (CLAUDE, "model")]
    assert listed.data[1].display_name == "Claude Sonnet 5.5"
    assert listed.data[1].created_at == dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    raw = await http.get(
        models.url + "/v1/models",
        headers={"x-api-key": "test", "anthropic-version": "2023-06-01"},
    )
    assert {k: raw.json()[k] for k in ("has_more", "first_id", "last_id")} == {
        "has_more": False,
        "first_id": LOCAL,
        "last_id": CLAUDE,
    }
    tags = (await http.get(models.url + "/api/tags")).json()["models"]
    assert [t["name"] for t in tags] == [LOCAL, CLAUDE]
    assert models.model_list_calls == 3 and models.list_calls == 3
    assert not models.calls  # a model list is not a chat call


async def test_model_lists_need_a_key_and_are_empty_by_default(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    url = models.url + "/v1/models"
    anthropic_headers = {"anthropic-version": "2023-06-01"}
    refused = await http.get(url)
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert refused.json()["error"]["code"] == "invalid_api_key"
    assert "You didn't provide an API key" in refused.json()["error"]["message"]
    refused = await http.get(url, headers=anthropic_headers)
    assert refused.status_code == 401
    assert refused.json()["type"] == "error"
    assert refused.json()["error"] == {
        "type": "authentication_error",
        "message": "x-api-key header is required",
    }
    listed = await http.get(url, headers={"authorization": "Bearer test"})
    assert listed.json() == {"object": "list", "data": []}
    listed = await http.get(url, headers={**anthropic_headers, "x-api-key": "test"})
    assert listed.json() == {"data": [], "has_more": False, "first_id": None, "last_id": None}
    assert models.model_list_calls == 4


def _openai_not_found(model: str) -> Any:
    message = f"The model `{model}` does not exist or you do not have access to it."
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": "model_not_found",
        }
    }


def _ollama_not_found(model: str) -> Any:
    message = f'model "{model}" not found, try pulling it first'
    return {"error": {"message": message, "type": "api_error", "param": None, "code": None}}


def _lm_studio_not_found(model: str) -> Any:
    message = (
        f'Model "{model}" not found. Please specify a valid model.\n\n'
        f"Your models:\n\n{LOCAL}\nqwen2.5-coder:7b"
    )
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "model",
            "code": "model_not_found",
        }
    }


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("openai", _openai_not_found),
        ("prose", _openai_not_found),
        ("ollama", _ollama_not_found),
        ("no-tools", _ollama_not_found),
        ("lm-studio", _lm_studio_not_found),
    ],
)
async def test_a_model_not_served_is_a_404_in_the_kinds_shape(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, kind: ServerKind, expected: Any
) -> None:
    models.behave_as(kind)
    models.served_models = [LOCAL, "qwen2.5-coder:7b"]
    with pytest.raises(openai.NotFoundError) as caught:
        await chat(gpt, "llama3.2:3b")
    body = expected("llama3.2:3b")
    assert caught.value.response.json() == body
    assert caught.value.message == f"Error code: 404 - {body['error']['message']}"
    assert content_of(await chat(gpt, LOCAL)) == "OK"
    assert [c.status for c in models.calls] == [404, 200]


async def test_served_models_on_the_other_apis(
    models: FakeModelServer,
    gpt: openai.AsyncOpenAI,
    claude: anthropic.AsyncAnthropic,
    http: httpx.AsyncClient,
) -> None:
    models.served_models = ["qwen2.5-coder"]
    models.behave_as("llama-cpp-python", model="anything")
    assert content_of(await chat(gpt, "anything")) == "OK"  # it serves its default model
    models.behave_as("ollama", model="qwen2.5-coder:latest")
    assert content_of(await chat(gpt, "qwen2.5-coder:latest")) == "OK"  # untagged = :latest
    with pytest.raises(anthropic.NotFoundError) as caught:
        await claude.messages.create(model=CLAUDE, max_tokens=8, messages=user("hi"))
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"] == {"type": "not_found_error", "message": f"model: {CLAUDE}"}
    native = await http.post(models.url + "/api/chat", json={"model": LOCAL, "stream": False})
    assert native.status_code == 404
    assert native.json() == {"error": f'model "{LOCAL}" not found, try pulling it first'}
    assert [c.status for c in models.calls] == [200, 200, 404, 404]


# --------------------------------------------------------------------------------------------
# Reasoning tokens
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_openai_counts_reasoning_inside_completion_tokens(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, streamed: bool
) -> None:
    text = "Thought it through."
    models.on(reply=Reply(text=text, reasoning_tokens=120))
    if streamed:
        chunks = [
            c
            async for c in await chat(gpt, GPT, stream=True, stream_options={"include_usage": True})
        ]
        usage = chunks[-1].usage
    else:
        usage = (await chat(gpt, GPT)).usage
    assert usage is not None and usage.completion_tokens_details is not None
    assert usage.completion_tokens_details.reasoning_tokens == 120
    assert usage.completion_tokens == len(text) // 4 + 1 + 120
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_anthropic_adds_reasoning_to_output_tokens(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    text = "Thought it through."
    models.on(reply=Reply(text=text, reasoning_tokens=120))
    message = await claude.messages.create(model=CLAUDE, max_tokens=256, messages=user("hi"))
    async with claude.messages.stream(model=CLAUDE, max_tokens=256, messages=user("hi")) as stream:
        streamed = await stream.get_final_message()
    assert message.usage.output_tokens == len(text) // 4 + 1 + 120
    assert streamed.usage.output_tokens == message.usage.output_tokens


# --------------------------------------------------------------------------------------------
# Ollama's native API
# --------------------------------------------------------------------------------------------

OLLAMA_FINAL_KEYS = {
    "model",
    "created_at",
    "message",
    "done",
    "done_reason",
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
}


async def test_ollama_native_answers_a_schema_format_in_one_object(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    models.on(lambda r: r.api == "ollama", reply=Reply(json=GOOD, latency_s=0.05))
    body = {
        "model": LOCAL,
        "messages": [
            {"role": "system", "content": "You review code."},
            {"role": "user", "content": "Assess."},
        ],
        "format": VERDICT_SCHEMA,
        "stream": False,
        "options": {"temperature": 0.2, "seed": 7},
    }
    answer = await http.post(models.url + "/api/chat", json=body)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    data = answer.json()
    assert set(data) == OLLAMA_FINAL_KEYS
    assert data["message"] == {"role": "assistant", "content": json.dumps(GOOD)}
    assert Verdict.model_validate_json(data["message"]["content"]) == Verdict.model_validate(GOOD)
    assert (data["model"], data["done"], data["done_reason"]) == (LOCAL, True, "stop")
    assert data["prompt_eval_count"] == (
        count_tokens("You review code.")
        + count_tokens("Assess.")
        + canonical_tokens(body["format"])
    )
    assert data["eval_count"] == len(json.dumps(GOOD)) // 4 + 1
    assert data["total_duration"] >= 50_000_000
    assert dt.datetime.fromisoformat(data["created_at"]).tzinfo is not None
    call = models.calls[-1]
    assert (call.api, call.status, call.model) == ("ollama", 200, LOCAL)
    assert call.ended_at - call.started_at >= 0.05
    assert call.request.output_schema == VERDICT_SCHEMA
    assert (call.request.stream, call.request.temperature) == (False, 0.2)
    assert call.usage is not None and call.usage["eval_count"] == data["eval_count"]


async def test_ollama_native_streams_ndjson_by_default(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    text = "A streamed answer that the server sends over several lines."
    models.on(reply=Reply(text=text, latency_s=0.05))
    body = {"model": LOCAL, "messages": user("Assess.")}  # no "stream": streamed
    async with http.stream("POST", models.url + "/api/chat", json=body) as answer:
        assert answer.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) async for line in answer.aiter_lines() if line]
    assert len(lines) > 3
    pieces, last = lines[:-1], lines[-1]
    assert all(set(p) == {"model", "created_at", "message", "done"} for p in pieces)
    assert all(p["done"] is False and p["message"]["role"] == "assistant" for p in pieces)
    assert "".join(p["message"]["content"] for p in pieces) == text
    assert set(last) == OLLAMA_FINAL_KEYS
    assert (last["done"], last["done_reason"], last["message"]["content"]) == (True, "stop", "")
    assert last["eval_count"] == len(text) // 4 + 1
    assert last["prompt_eval_count"] == count_tokens("Assess.")
    call = models.calls[-1]
    assert call.request.stream is True and call.done and call.status == 200


@pytest.mark.parametrize("streamed", [False, True])
async def test_ollama_native_num_predict_cuts_the_answer(
    models: FakeModelServer, http: httpx.AsyncClient, streamed: bool
) -> None:
    text = "The change retries forever when the network is down. " * 4
    models.on(reply=Reply(text=text))
    body = {
        "model": LOCAL,
        "messages": user("Assess."),
        "stream": streamed,
        "options": {"num_predict": 10},
    }
    answer = await http.post(models.url + "/api/chat", json=body)
    lines = [json.loads(line) for line in answer.text.splitlines() if line]
    content = "".join(line["message"]["content"] for line in lines)
    assert content == text[:40]
    assert (lines[-1]["done_reason"], lines[-1]["eval_count"]) == ("length", 10)


async def test_ollama_native_json_format_rules_and_faults(
    models: FakeModelServer, http: httpx.AsyncClient
) -> None:
    url = models.url + "/api/chat"
    plain = {"model": LOCAL, "messages": user("Assess."), "stream": False}
    answer = await http.post(url, json={**plain, "format": "json"})
    assert isinstance(json.loads(answer.json()["message"]["content"]), dict)
    default = await http.post(url, json={**plain, "format": VERDICT_SCHEMA})
    Verdict.model_validate_json(default.json()["message"]["content"])
    models.on(reply=Fault.rate_limited(retry_after=0.5), times=1)
    limited = await http.post(url, json=plain)
    assert limited.status_code == 429 and limited.headers["retry-after"] == "0.5"
    assert set(limited.json()) == {"error"} and "Rate limit" in limited.json()["error"]
    missing = await http.post(url, json={"messages": user("hi"), "stream": False})
    assert (missing.status_code, missing.json()) == (400, {"error": "model is required"})
    assert [c.status for c in models.calls] == [200, 200, 429, 400]
    assert all(c.api == "ollama" for c in models.calls)


async def test_ollama_native_and_v1_share_the_models_single_slot(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, http: httpx.AsyncClient
) -> None:
    models.behave_as("ollama")
    models.on(reply=Reply(text="slow", latency_s=0.15))
    native = http.post(
        models.url + "/api/chat",
        json={"model": LOCAL, "messages": user("hi"), "stream": False},
    )
    await in_order(models, native, chat(gpt))
    first, second = models.calls
    assert (first.api, second.api) == ("ollama", "openai")
    assert first.queued_s == 0.0 and second.queued_s > 0.05
    assert models.peak_in_flight(LOCAL) == 1


# --------------------------------------------------------------------------------------------
# Reset and validation
# --------------------------------------------------------------------------------------------


async def test_reset_restores_kinds_limits_and_served_models(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("lm-studio")
    models.max_parallel(1)
    models.served_models = [LOCAL]
    await gpt.models.list()
    models.on(reply=Reply(text="slow", latency_s=0.1))
    await asyncio.gather(chat(gpt), chat(gpt))
    assert models.peak_in_flight() == 1 and models.model_list_calls == 1
    models.reset()
    assert models.kinds == {} and models.parallel_limits == {}
    assert served_models(models) is None
    assert (models.kind_of(LOCAL), models.peak_in_flight(), models.model_list_calls) == (
        "openai",
        0,
        0,
    )
    started = time.monotonic()
    await asyncio.gather(
        *(chat(gpt, "any-model", response_format={"type": "json_object"}) for _ in range(2))
    )
    assert time.monotonic() - started < 0.5
    assert [c.status for c in models.calls] == [200, 200]


def served_models(models: FakeModelServer) -> list[str] | None:
    return models.served_models


def test_behave_as_refuses_an_unknown_kind(models: FakeModelServer) -> None:
    with pytest.raises(ValueError, match="unknown server kind 'tgi'"):
        models.behave_as("tgi")  # type: ignore[arg-type]
    assert models.kinds == {}
