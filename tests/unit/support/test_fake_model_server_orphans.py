"""A client that hangs up on the fake, as on llama-cpp-python's server (one model, one lock):
a non-streamed request is an orphan that keeps the model until its end, a streamed one frees
it at once; a llama-cpp-python stream begins with its first token and is interrupted when
another request waits. Driven through the real openai SDK over a real socket."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest

from tests.support.model_server import FakeModelServer, Reply, ServerKind

MODEL = "qwen2.5-coder:1.5b"


@pytest.fixture(scope="module")
async def gpt(fake_models: FakeModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(
        base_url=fake_models.openai_url, api_key="test", max_retries=0, timeout=5.0
    )
    yield client
    await client.close()


def ask(**kwargs: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Assess the change."}],
        **kwargs,
    }


async def ended(models: FakeModelServer, index: int) -> None:
    """Until the server has recorded the end of its `index`th call."""
    for _ in range(200):
        if len(models.calls) > index and models.calls[index].done:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"call {index} never ended: {models.calls}")


async def test_a_non_streamed_request_whose_client_left_keeps_the_model_to_its_end(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("llama-cpp-python")
    models.on(reply=Reply(text="slow", latency_s=0.8), times=1)
    models.on(reply=Reply(text="quick"))
    impatient = gpt.with_options(timeout=0.2)
    with pytest.raises(openai.APITimeoutError):
        await impatient.chat.completions.create(**ask())
    answer = await gpt.chat.completions.create(**ask())
    assert answer.choices[0].message.content == "quick"
    orphan, after = models.calls
    assert orphan.status == 499  # its client was gone when it was done
    assert orphan.ended_at - orphan.started_at >= 0.75  # generated to its end all the same
    assert after.queued_s >= 0.4  # the next request waited behind it
    assert abs(after.started_at + after.queued_s - orphan.ended_at) < 0.1
    assert models.peak_in_flight() == 1


async def test_a_streamed_request_whose_client_left_frees_the_model_at_once(
    models: FakeModelServer, gpt: openai.AsyncOpenAI
) -> None:
    models.behave_as("llama-cpp-python")
    models.on(reply=Reply(text="slow " * 40, latency_s=2.0), times=1)
    models.on(reply=Reply(text="quick"))
    stream = await gpt.chat.completions.create(**ask(stream=True))
    async for _ in stream:
        break  # the first chunk, then hang up
    await stream.close()
    left_at = time.monotonic()
    answer = await gpt.chat.completions.create(**ask())
    assert answer.choices[0].message.content == "quick"
    orphan, after = models.calls
    assert orphan.status == 499 and not orphan.interrupted
    assert orphan.ended_at - left_at < 0.3  # it ended when its client left
    assert after.queued_s < 0.3 and after.status == 200


@pytest.mark.parametrize(("kind", "interrupted"), [("llama-cpp-python", True), ("ollama", False)])
async def test_a_llama_cpp_stream_is_interrupted_when_another_request_waits(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, kind: ServerKind, interrupted: bool
) -> None:
    models.behave_as(kind)
    models.on(reply=Reply(text="one two three four five six seven eight", latency_s=0.8), times=1)
    models.on(reply=Reply(text="quick"))
    stream = await gpt.chat.completions.create(**ask(stream=True))
    chunks = [chunk async for chunk in _first_then(stream)]
    waiting = asyncio.ensure_future(gpt.chat.completions.create(**ask()))
    chunks += [chunk async for chunk in stream]
    assert (await waiting).choices[0].message.content == "quick"
    first, second = models.calls
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    if interrupted:  # `[DONE]` at its next chunk: no finish_reason, the text cut
        assert set(finishes) == {None} and len(text) < len("one two three four five six")
        assert first.ended_at - first.started_at < 0.5
        assert second.queued_s < 0.5
    else:  # Ollama's queue: the waiting request is served after the whole answer
        assert finishes[-1] == "stop" and text == "one two three four five six seven eight"
        assert second.started_at + second.queued_s >= first.ended_at - 0.05
    assert (first.status, first.interrupted) == (200, interrupted)


async def _first_then(stream: Any) -> AsyncIterator[Any]:
    """The stream's first chunk, and a moment for the server to send the next."""
    async for chunk in stream:
        yield chunk
        break
    await asyncio.sleep(0.05)


@pytest.mark.parametrize(("kind", "begins_late"), [("llama-cpp-python", True), ("openai", False)])
async def test_a_llama_cpp_stream_begins_with_its_first_token(
    models: FakeModelServer, gpt: openai.AsyncOpenAI, kind: ServerKind, begins_late: bool
) -> None:
    models.behave_as(kind)
    models.on(reply=Reply(text="answer", first_token_s=0.4, latency_s=0.5))
    started = time.monotonic()
    stream = await gpt.chat.completions.create(**ask(stream=True))
    waited = time.monotonic() - started  # until the response (its headers) began
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "answer"
    assert (waited >= 0.35) is begins_late
