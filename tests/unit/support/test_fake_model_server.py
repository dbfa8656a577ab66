"""The fake model server, driven through the real anthropic and openai SDKs over a real port."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid
from collections.abc import AsyncIterator
from enum import Enum
from typing import Annotated, Any, Literal

import anthropic
import httpx
import openai
import pytest
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from tests.support.model_server import (
    FakeModelServer,
    FakeRequest,
    Fault,
    Reply,
    count_tokens,
    minimal_instance,
)

CLAUDE = "claude-sonnet-5-5"
GPT = "gpt-5"
LONG = "The council reads the whole diff before it speaks. " * 120  # about 1530 tokens
SHORT_RULES = "You review code."
VERDICT_TOOL_NAME = "verdict"


class Point(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int
    label: str | None = None


class Verdict(BaseModel):
    """Optional, nested and constrained fields, as the seats' schemas have them."""

    model_config = ConfigDict(extra="forbid")
    verdict: Literal["APPROVE", "REJECT"]
    score: int = Field(ge=1, le=10)
    points: list[Point] = Field(min_length=1)
    best: Point | None = None
    note: str | None = None


GOOD = {"verdict": "APPROVE", "score": 7, "points": [{"x": 1, "label": None}], "note": "ok"}
VERDICT_TOOL: anthropic.types.ToolParam = {
    "name": VERDICT_TOOL_NAME,
    "description": "Give the verdict.",
    "input_schema": Verdict.model_json_schema(),
}
OTHER_TOOL: anthropic.types.ToolParam = {
    "name": "note",
    "description": "Leave a note.",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
}
FORCE_VERDICT: anthropic.types.ToolChoiceToolParam = {"type": "tool", "name": VERDICT_TOOL_NAME}


@pytest.fixture
async def claude(models: FakeModelServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=models.anthropic_url, api_key="test", max_retries=0)
    yield client
    await client.close()


@pytest.fixture
async def gpt(models: FakeModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=models.openai_url, api_key="test", max_retries=0)
    yield client
    await client.close()


def user(text: str) -> Any:
    return [{"role": "user", "content": text}]


def written(message: anthropic.types.Message) -> int:
    """The cache tokens a response wrote; the fake always reports them, never None."""
    tokens = message.usage.cache_creation_input_tokens
    assert tokens is not None
    return tokens


def cached_system(text: str = LONG) -> Any:
    return [
        {"type": "text", "text": SHORT_RULES},
        {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}},
    ]


async def ask_claude(
    client: anthropic.AsyncAnthropic, seat: int, **kwargs: Any
) -> anthropic.types.Message:
    params: dict[str, Any] = {
        "model": CLAUDE,
        "max_tokens": 256,
        "system": cached_system(),
        "messages": user(f"You are seat {seat}. Assess."),
    }
    params.update(kwargs)
    return await client.messages.create(**params)


async def ask(api: str, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI) -> Any:
    """One minimal call on either API; returns the SDK's parsed response."""
    if api == "anthropic":
        return await claude.messages.create(model=CLAUDE, max_tokens=64, messages=user("hi"))
    return await gpt.chat.completions.create(model=GPT, messages=user("hi"))


# --------------------------------------------------------------------------------------------
# Plain, streamed and structured answers parse in the SDKs
# --------------------------------------------------------------------------------------------


async def test_anthropic_plain_answer(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    models.on(reply=Reply(text="The change looks sound."))
    message = await claude.messages.create(
        model=CLAUDE, max_tokens=64, system=SHORT_RULES, messages=user("Review it.")
    )
    assert message.content[0].type == "text"
    assert message.content[0].text == "The change looks sound."
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens == count_tokens(SHORT_RULES) + count_tokens("Review it.")
    assert message.usage.output_tokens == len("The change looks sound.") // 4 + 1
    call = models.calls[-1]
    assert (call.api, call.status, call.model) == ("anthropic", 200, CLAUDE)
    assert call.request.system_text == SHORT_RULES
    assert call.request.last_user_text() == "Review it."
    assert call.usage == message.usage.model_dump(exclude_none=True)


async def test_anthropic_stream_sends_the_real_event_sequence(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    models.on(reply=Reply(text="A streamed answer that spans several deltas.", latency_s=0.1))
    stream = await claude.messages.create(
        model=CLAUDE, max_tokens=64, messages=user("hi"), stream=True
    )
    events = [event async for event in stream]
    kinds = [e.type for e in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert set(kinds[2:-3]) == {"content_block_delta"} and len(kinds) > 6
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta")  # type: ignore[union-attr]
    assert text == "A streamed answer that spans several deltas."


async def test_anthropic_stream_helper_accumulates_text_and_usage(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    models.on(reply=Reply(text="Streamed verdict text."))
    async with claude.messages.stream(
        model=CLAUDE, max_tokens=64, messages=user("hi"), system=cached_system()
    ) as stream:
        message = await stream.get_final_message()
    assert message.content[0].type == "text" and message.content[0].text == "Streamed verdict text."
    assert message.stop_reason == "end_turn"
    assert message.usage.cache_creation_input_tokens == count_tokens(SHORT_RULES + LONG)
    assert message.usage.output_tokens == len("Streamed verdict text.") // 4 + 1


@pytest.mark.parametrize("streamed", [False, True])
async def test_openai_plain_answer(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, streamed: bool
) -> None:
    models.on(reply=Reply(text="Looks fine to me."))
    messages: Any = [{"role": "system", "content": SHORT_RULES}, *user("Review it.")]
    if not streamed:
        completion = await gpt.chat.completions.create(model=GPT, messages=messages)
        assert completion.choices[0].message.content == "Looks fine to me."
        assert completion.choices[0].finish_reason == "stop"
        assert completion.usage is not None
        usage = completion.usage
    else:
        chunks = [
            chunk
            async for chunk in await gpt.chat.completions.create(
                model=GPT, messages=messages, stream=True, stream_options={"include_usage": True}
            )
        ]
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Looks fine to me."
        assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
        assert chunks[-1].usage is not None
        usage = chunks[-1].usage
    assert usage.prompt_tokens == count_tokens(SHORT_RULES) + count_tokens("Review it.")
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert models.calls[-1].request.system_text == SHORT_RULES


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_forced_tool_returns_the_scripted_json(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, streamed: bool
) -> None:
    models.on(lambda r: r.output_name == VERDICT_TOOL_NAME, reply=Reply(json=GOOD))
    params: Any = {
        "model": CLAUDE,
        "max_tokens": 256,
        "messages": user("Assess."),
        "tools": [OTHER_TOOL, VERDICT_TOOL],
        "tool_choice": FORCE_VERDICT,
    }
    if streamed:
        async with claude.messages.stream(**params) as stream:
            message = await stream.get_final_message()
    else:
        message = await claude.messages.create(**params)
    block = message.content[0]
    assert block.type == "tool_use" and block.name == VERDICT_TOOL_NAME
    assert Verdict.model_validate(block.input) == Verdict.model_validate(GOOD)
    assert message.stop_reason == "tool_use"
    request = models.calls[-1].request
    assert request.tool_names == ["note", VERDICT_TOOL_NAME]
    assert request.output_schema == Verdict.model_json_schema()


@pytest.mark.parametrize("streamed", [False, True])
async def test_openai_json_schema_returns_the_scripted_json(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, streamed: bool
) -> None:
    """The SDK's strict schema (optional, nested, $defs) is accepted and parsed."""
    models.on(reply=Reply(json=GOOD))
    if streamed:
        async with gpt.chat.completions.stream(
            model=GPT, messages=user("Assess."), response_format=Verdict
        ) as stream:
            completion = await stream.get_final_completion()
    else:
        completion = await gpt.chat.completions.parse(
            model=GPT, messages=user("Assess."), response_format=Verdict
        )
    assert completion.choices[0].message.parsed == Verdict.model_validate(GOOD)
    request = models.calls[-1].request
    assert request.output_name == "Verdict"
    assert request.body["response_format"]["json_schema"]["strict"] is True


async def test_openai_forced_function_returns_tool_call(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.on(reply=Reply(json={"text": "hello"}))
    tool: Any = {
        "type": "function",
        "function": {"name": "note", "parameters": OTHER_TOOL["input_schema"]},
    }
    completion = await gpt.chat.completions.create(
        model=GPT,
        messages=user("Leave a note."),
        tools=[tool],
        tool_choice={"type": "function", "function": {"name": "note"}},
    )
    calls = completion.choices[0].message.tool_calls
    assert calls is not None and calls[0].function.name == "note"  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"text": "hello"}  # type: ignore[union-attr]


async def test_default_reply_is_a_valid_instance_of_the_schema(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI
) -> None:
    message = await claude.messages.create(
        model=CLAUDE,
        max_tokens=256,
        messages=user("Assess."),
        tools=[VERDICT_TOOL],
        tool_choice=FORCE_VERDICT,
    )
    assert message.content[0].type == "tool_use"
    Verdict.model_validate(message.content[0].input)
    completion = await gpt.chat.completions.parse(
        model=GPT, messages=user("Assess."), response_format=Verdict
    )
    assert isinstance(completion.choices[0].message.parsed, Verdict)
    plain = await ask("anthropic", claude, gpt)
    assert plain.content[0].text == "OK"


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Tree(BaseModel):
    name: str = Field(min_length=3)
    children: list[Tree] = []


@pytest.mark.parametrize(
    "annotation",
    [
        Verdict,
        Tree,
        list[Annotated[int, Field(gt=3, lt=10)]],
        Annotated[list[str], Field(min_length=2)],
        Annotated[float, Field(ge=0.5, le=0.7)],
        Annotated[int, Field(le=-5)],
        tuple[int, str, bool],
        dict[str, int],
        Colour,
        Literal["a", "b"],
        dt.datetime,
        uuid.UUID,
        int | None,
    ],
)
def test_minimal_instance_validates(annotation: Any) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    adapter.validate_python(minimal_instance(adapter.json_schema()))


# --------------------------------------------------------------------------------------------
# Faults give the SDK's matching exception
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_rate_limited_shows_retry_after(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI, api: str
) -> None:
    models.on(reply=Fault.rate_limited(retry_after=2.5))
    error: type[anthropic.RateLimitError | openai.RateLimitError] = (
        anthropic.RateLimitError if api == "anthropic" else openai.RateLimitError
    )
    with pytest.raises(error) as caught:
        await ask(api, claude, gpt)
    assert isinstance(caught.value, error)  # mypy joins the two SDKs' classes to Exception
    assert caught.value.response.status_code == 429
    assert caught.value.response.headers["retry-after"] == "2.5"
    assert models.calls[-1].status == 429


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_server_error(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI, api: str
) -> None:
    models.on(reply=Fault.server_error())
    error: type[anthropic.InternalServerError | openai.InternalServerError] = (
        anthropic.InternalServerError if api == "anthropic" else openai.InternalServerError
    )
    with pytest.raises(error) as caught:
        await ask(api, claude, gpt)
    assert isinstance(caught.value, error)  # mypy joins the two SDKs' classes to Exception
    assert caught.value.status_code == 500


async def test_anthropic_overloaded_and_error_body(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI
) -> None:
    models.on(reply=Fault.overloaded())
    with pytest.raises(anthropic.OverloadedError) as caught:
        await ask("anthropic", claude, gpt)
    assert caught.value.status_code == 529
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"] == {"type": "overloaded_error", "message": "Overloaded"}


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_hang_times_out_the_client_and_is_logged(models: FakeModelServer, api: str) -> None:
    models.on(reply=Fault.hang())
    client: Any
    if api == "anthropic":
        client = anthropic.AsyncAnthropic(
            base_url=models.anthropic_url, api_key="test", max_retries=0, timeout=0.3
        )
        error: type[Exception] = anthropic.APITimeoutError
    else:
        client = openai.AsyncOpenAI(
            base_url=models.openai_url, api_key="test", max_retries=0, timeout=0.3
        )
        error = openai.APITimeoutError
    started = time.monotonic()
    with pytest.raises(error):
        if api == "anthropic":
            await client.messages.create(model=CLAUDE, max_tokens=64, messages=user("hi"))
        else:
            await client.chat.completions.create(model=GPT, messages=user("hi"))
    assert time.monotonic() - started < 1.0
    await client.close()
    call = models.calls[-1]
    for _ in range(40):  # the server notices the disconnect within a poll interval
        if call.done:
            break
        await asyncio.sleep(0.025)
    assert call.status == 499 and call.began_at is None


async def test_reset_releases_a_hanging_call(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI
) -> None:
    models.on(reply=Fault.hang())
    pending = asyncio.ensure_future(ask("anthropic", claude, gpt))
    for _ in range(200):
        if models.calls:
            break
        await asyncio.sleep(0.01)
    models.reset()
    with pytest.raises(anthropic.APIStatusError) as caught:
        await asyncio.wait_for(pending, 2.0)
    assert caught.value.status_code == 503


@pytest.mark.parametrize("api", ["anthropic", "openai"])
@pytest.mark.parametrize("streamed", [False, True])
async def test_malformed_json_fails_to_parse(
    models: FakeModelServer,
    claude: anthropic.AsyncAnthropic,
    gpt: openai.AsyncOpenAI,
    api: str,
    streamed: bool,
) -> None:
    models.on(reply=Fault.malformed_json())
    with pytest.raises(ValueError, match="line 1"):
        if api == "anthropic" and streamed:
            async with claude.messages.stream(
                model=CLAUDE, max_tokens=64, messages=user("hi")
            ) as stream:
                await stream.get_final_message()
        elif api == "anthropic":
            await claude.messages.create(model=CLAUDE, max_tokens=64, messages=user("hi"))
        elif streamed:
            async for _ in await gpt.chat.completions.create(
                model=GPT, messages=user("hi"), stream=True
            ):
                pass
        else:
            await gpt.chat.completions.create(model=GPT, messages=user("hi"))
    assert models.calls[-1].status == 200


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_truncated_tool_answer(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, streamed: bool
) -> None:
    models.on(reply=Reply(json=GOOD, stop_reason="max_tokens"))
    params: Any = {
        "model": CLAUDE,
        "max_tokens": 256,
        "messages": user("Assess."),
        "tools": [VERDICT_TOOL],
        "tool_choice": FORCE_VERDICT,
    }
    if streamed:
        async with claude.messages.stream(**params) as stream:
            message = await stream.get_final_message()
    else:
        message = await claude.messages.create(**params)
    assert message.stop_reason == "max_tokens"
    block = message.content[0]
    assert block.type == "tool_use"
    assert isinstance(block.input, dict) and block.input != GOOD
    with pytest.raises(ValidationError):
        Verdict.model_validate(block.input)


async def test_openai_truncated_answer(models: FakeModelServer, gpt: openai.AsyncOpenAI) -> None:
    models.on(reply=Fault.truncated())
    completion = await gpt.chat.completions.create(
        model=GPT,
        messages=user("Assess."),
        response_format={
            "type": "json_schema",
            "json_schema": {
                "name": "Verdict",
                "strict": True,
                "schema": openai.lib._pydantic.to_strict_json_schema(Verdict),
            },
        },
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "length"
    assert choice.message.content and choice.message.content.startswith("{")
    with pytest.raises(ValueError):
        json.loads(choice.message.content)


async def test_off_topic_answer_is_prose_not_a_tool_call(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI
) -> None:
    models.on(reply=Fault.off_topic())
    message = await claude.messages.create(
        model=CLAUDE,
        max_tokens=256,
        messages=user("Assess."),
        tools=[VERDICT_TOOL],
        tool_choice=FORCE_VERDICT,
    )
    assert [b.type for b in message.content] == ["text"]
    assert message.stop_reason == "end_turn"
    completion = await gpt.chat.completions.create(
        model=GPT,
        messages=user("Assess."),
        response_format={"type": "json_schema", "json_schema": {"name": "v", "schema": {}}},
    )
    assert completion.choices[0].message.content == Fault.off_topic().text


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_bad_request_and_unauthorized(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI, api: str
) -> None:
    sdk: Any = anthropic if api == "anthropic" else openai
    models.on(reply=Fault.bad_request("prompt is too long: 250000 tokens > 200000"), times=1)
    models.on(reply=Fault.unauthorized())
    with pytest.raises(sdk.BadRequestError, match="prompt is too long"):
        await ask(api, claude, gpt)
    with pytest.raises(sdk.AuthenticationError):
        await ask(api, claude, gpt)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_unknown_model_is_a_404_naming_it(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI, api: str
) -> None:
    models.on(reply=Fault.not_found())
    sdk: Any = anthropic if api == "anthropic" else openai
    with pytest.raises(sdk.NotFoundError, match=CLAUDE if api == "anthropic" else GPT):
        await ask(api, claude, gpt)


async def test_ollama_tags_list_the_scripted_models(models: FakeModelServer) -> None:
    async with httpx.AsyncClient() as http:
        assert (await http.get(models.url + "/api/tags")).json() == {"models": []}
        models.ollama_models = ["llama3.1:8b"]
        listed = (await http.get(models.url + "/api/tags")).json()["models"]
    assert [m["name"] for m in listed] == ["llama3.1:8b"]


async def test_missing_credentials_are_refused(models: FakeModelServer) -> None:
    async with httpx.AsyncClient() as http:
        body = {"model": CLAUDE, "max_tokens": 8, "messages": user("hi")}
        answer = await http.post(models.anthropic_url + "/v1/messages", json=body)
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "authentication_error"
        answer = await http.post(models.openai_url + "/chat/completions", json=body)
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "invalid_request_error"
    assert [c.status for c in models.calls] == [401, 401]


# --------------------------------------------------------------------------------------------
# OpenAI strict mode
# --------------------------------------------------------------------------------------------


class WithMap(BaseModel):
    scores: dict[str, int]


OBJECT_WITHOUT_ADDITIONAL = {
    "type": "object",
    "properties": {"a": {"type": "string"}},
    "required": ["a"],
}
OPTIONAL_NOT_REQUIRED = {
    "type": "object",
    "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
    "required": ["a"],
    "additionalProperties": False,
}
ROOT_ARRAY = {"type": "array", "items": {"type": "string"}}
UNSUPPORTED_KEYWORD = {
    "type": "object",
    "properties": {"a": {"allOf": [{"type": "string"}]}},
    "required": ["a"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (openai.lib._pydantic.to_strict_json_schema(WithMap), "'additionalProperties'"),
        (OBJECT_WITHOUT_ADDITIONAL, "'additionalProperties' is required"),
        (OPTIONAL_NOT_REQUIRED, "Missing 'b'"),
        (ROOT_ARRAY, 'type: "object"'),
        (UNSUPPORTED_KEYWORD, "'allOf' is not permitted"),
    ],
)
async def test_strict_schema_the_real_api_refuses_is_a_400(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, schema: dict[str, Any], reason: str
) -> None:
    response_format: Any = {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "strict": True, "schema": schema},
    }
    with pytest.raises(openai.BadRequestError) as caught:
        await gpt.chat.completions.create(
            model=GPT, messages=user("hi"), response_format=response_format
        )
    assert reason in caught.value.message
    assert caught.value.param == "response_format"
    assert caught.value.type == "invalid_request_error"
    # Without `strict` the same schema is only a hint: accepted.
    response_format["json_schema"]["strict"] = False
    await gpt.chat.completions.create(
        model=GPT, messages=user("hi"), response_format=response_format
    )
    assert [c.status for c in models.calls] == [400, 200]


async def test_strict_tool_parameters_follow_the_same_rules(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    tool: Any = {
        "type": "function",
        "function": {"name": "f", "strict": True, "parameters": OBJECT_WITHOUT_ADDITIONAL},
    }
    with pytest.raises(openai.BadRequestError, match="Invalid schema for function 'f'"):
        await gpt.chat.completions.create(model=GPT, messages=user("hi"), tools=[tool])
    tool["function"]["parameters"] = openai.lib._pydantic.to_strict_json_schema(Verdict)
    await gpt.chat.completions.create(model=GPT, messages=user("hi"), tools=[tool])


# --------------------------------------------------------------------------------------------
# Anthropic prompt cache
# --------------------------------------------------------------------------------------------

PREFIX_TOKENS = count_tokens(SHORT_RULES) + count_tokens(LONG)


async def test_sequential_calls_read_the_cached_prefix(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    first = await ask_claude(claude, 1)
    second = await ask_claude(claude, 2)
    tail = count_tokens("You are seat 2. Assess.")
    assert (first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens) == (
        PREFIX_TOKENS,
        0,
    )
    assert (second.usage.cache_creation_input_tokens, second.usage.cache_read_input_tokens) == (
        0,
        PREFIX_TOKENS,
    )
    assert second.usage.input_tokens == tail


async def test_parallel_first_calls_all_pay_the_write(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    models.on(reply=Reply(text="ok", latency_s=0.3), times=3)
    results = await asyncio.gather(*(ask_claude(claude, i) for i in range(3)))
    assert [r.usage.cache_creation_input_tokens for r in results] == [PREFIX_TOKENS] * 3
    assert [r.usage.cache_read_input_tokens for r in results] == [0] * 3
    # Once one of them began, the next call reads.
    later = await ask_claude(claude, 9)
    assert later.usage.cache_read_input_tokens == PREFIX_TOKENS


async def test_a_call_launched_after_the_first_began_streaming_reads(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    models.on(lambda r: r.stream, reply=Reply(text="warming up", latency_s=0.6, first_token_s=0.1))
    stream = await claude.messages.create(
        model=CLAUDE, max_tokens=64, system=cached_system(), messages=user("seat 0"), stream=True
    )
    events = aiter(stream)
    start = await anext(events)
    assert start.type == "message_start"
    assert start.message.usage.cache_creation_input_tokens == PREFIX_TOKENS
    follower = await ask_claude(claude, 1)
    assert not models.calls[0].done  # the first response is still streaming
    assert follower.usage.cache_read_input_tokens == PREFIX_TOKENS
    assert follower.usage.cache_creation_input_tokens == 0
    async for _ in events:
        pass
    warm = models.calls[0]
    assert warm.began_at is not None and warm.began_at - warm.started_at >= 0.1
    assert warm.ended_at - warm.started_at >= 0.6


async def test_changing_the_tool_list_invalidates_the_prefix(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    first = await ask_claude(claude, 1, tools=[VERDICT_TOOL])
    changed = await ask_claude(claude, 2, tools=[VERDICT_TOOL, OTHER_TOOL])
    again = await ask_claude(claude, 3, tools=[VERDICT_TOOL])
    assert written(first) > PREFIX_TOKENS  # tools are in the prefix
    assert changed.usage.cache_read_input_tokens == 0
    assert written(changed) > written(first)
    assert again.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


async def test_tool_choice_invalidates_message_prefixes_only(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}],
        }
    ]
    tools = [VERDICT_TOOL, OTHER_TOOL]
    auto = await ask_claude(claude, 0, tools=tools, messages=messages)
    forced = await ask_claude(claude, 0, tools=tools, messages=messages, tool_choice=FORCE_VERDICT)
    system_level = written(auto) - count_tokens(LONG)
    assert forced.usage.cache_read_input_tokens == system_level
    assert forced.usage.cache_creation_input_tokens == count_tokens(LONG)


async def test_nothing_is_cached_below_the_minimum(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    for _ in range(2):
        short = await ask_claude(claude, 1, system=cached_system("Short rules."))
        assert short.usage.cache_creation_input_tokens == 0
        assert short.usage.cache_read_input_tokens == 0
    models.min_cache_tokens["claude-haiku-9"] = 4096
    for _ in range(2):
        big_minimum = await ask_claude(claude, 1, model="claude-haiku-9")
        assert big_minimum.usage.cache_creation_input_tokens == 0
        assert big_minimum.usage.cache_read_input_tokens == 0
        assert big_minimum.usage.input_tokens > PREFIX_TOKENS


async def test_too_many_breakpoints_is_a_400(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    block = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4"):
        await ask_claude(claude, 1, system=[block] * 5)


async def test_openai_reports_cached_tokens_of_a_repeated_long_prefix(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    async def call(seat: int, system: str = LONG) -> openai.types.CompletionUsage:
        completion = await gpt.chat.completions.create(
            model=GPT,
            messages=[{"role": "system", "content": system}, *user(f"seat {seat}")],
        )
        assert completion.usage is not None
        return completion.usage

    first, second = await call(1), await call(2)
    assert first.prompt_tokens_details and first.prompt_tokens_details.cached_tokens == 0
    assert second.prompt_tokens_details is not None
    assert second.prompt_tokens_details.cached_tokens == count_tokens(LONG) // 128 * 128
    assert second.prompt_tokens == count_tokens(LONG) + count_tokens("seat 2")
    short = [await call(i, "Short rules.") for i in range(2)]
    assert all(
        u.prompt_tokens_details and u.prompt_tokens_details.cached_tokens == 0 for u in short
    )


# --------------------------------------------------------------------------------------------
# Rules, timing and the call log
# --------------------------------------------------------------------------------------------


async def test_rules_apply_in_order_and_are_used_up(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic
) -> None:
    def seat_one(request: FakeRequest) -> bool:
        return "seat 1" in request.last_user_text()

    models.on(seat_one, reply=Reply(text="first"), times=1)
    models.on(seat_one, reply=lambda r: Reply(text=r.last_user_text().upper()))
    models.default(lambda r: Reply(text="fallback"))

    async def text(prompt: str) -> str:
        message = await claude.messages.create(model=CLAUDE, max_tokens=8, messages=user(prompt))
        assert message.content[0].type == "text"
        return message.content[0].text

    assert [await text("seat 1"), await text("seat 1"), await text("seat 2")] == [
        "first",
        "SEAT 1",
        "fallback",
    ]
    models.reset()
    assert await text("seat 1") == "OK" and len(models.calls) == 1


async def test_latency_is_honest_and_concurrent(
    models: FakeModelServer, claude: anthropic.AsyncAnthropic, gpt: openai.AsyncOpenAI
) -> None:
    models.on(reply=Reply(text="slow", latency_s=0.3))
    started = time.monotonic()
    await asyncio.gather(*(ask(api, claude, gpt) for api in ["anthropic", "openai"] * 4))
    elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 0.6  # eight 0.3 s calls overlap; none blocks another
    for call in models.calls:
        assert call.began_at is not None and call.ended_at - call.started_at >= 0.3


async def test_call_log_records_retries_and_labels(models: FakeModelServer) -> None:
    models.on(reply=Fault.rate_limited(retry_after=0.05), times=1)
    client = anthropic.AsyncAnthropic(
        base_url=models.anthropic_url,
        api_key="test",
        max_retries=2,
        default_headers={"x-council-label": "seat-3/assess"},
    )
    await client.messages.create(model=CLAUDE, max_tokens=8, messages=user("hi"))
    await client.messages.create(model=CLAUDE, max_tokens=8, messages=user("other"))
    await client.close()
    log = [(c.status, c.attempt_of, c.label) for c in models.calls]
    assert log == [(429, 1, "seat-3/assess"), (200, 2, "seat-3/assess"), (200, 1, "seat-3/assess")]
    retry = models.calls[1]
    assert retry.started_at - models.calls[0].ended_at >= 0.05  # retry-after was honoured
