"""Calls to a local model server free the server (issue 23): llama-cpp-python's server runs
one request at a time and generates a non-streamed answer to its end even when its client
has left, so a call past its deadline, a retry, or a refused format must never leave the
next request queued behind an orphan. Against the fake's "llama-cpp-python" kind, through the
real openai SDK over a real socket."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from bot.providers import InvalidOutput, Message, ProviderRegistry, ProviderTimeout, ServerError
from bot.providers.openai_adapter import OpenAIAdapter
from tests.support.model_server import FakeModelServer, Fault, RecordedCall, Reply
from tests.unit.providers.test_negotiation import kinds
from tests.unit.providers.test_providers import GOOD, Verdict, make_settings, structured_call

MODEL = "qwen2.5-coder:1.5b"
REF = f"llamacpp:{MODEL}"
# The note first: cut in it, the answer has no whole part that validates.
LONG = {"note": "a long explanation of the verdict " * 12} | {
    k: GOOD[k] for k in GOOD if k != "note"
}


def llamacpp(
    models: FakeModelServer, *, local: bool = True, structured: str = "auto", **settings: Any
) -> OpenAIAdapter:
    """The self-hoster's endpoint (`{"base_url": ..., "local": true}`) at the fake, which
    behaves as llama-cpp-python; `local=False`: the same server as a hosted endpoint."""
    models.behave_as("llama-cpp-python", MODEL)
    endpoint: dict[str, Any] = {"base_url": models.openai_url, "local": local}
    endpoint["structured"] = structured
    if not local:
        endpoint["concurrency"] = 1
    registry = ProviderRegistry(make_settings(models, endpoints={"llamacpp": endpoint}, **settings))
    adapter = registry.get(REF)
    assert isinstance(adapter, OpenAIAdapter)
    return adapter


def seat(n: int, **kwargs: Any) -> Any:
    message = Message(role="user", content=f"Review this change as seat {n}.")
    return structured_call(messages=[message], label=f"seat-{n}/assess", **kwargs)


def served_at(call: RecordedCall) -> float:
    return call.started_at + call.queued_s


@pytest.mark.parametrize("local", [True, False])
async def test_a_call_past_its_deadline_frees_a_local_server_at_once(
    models: FakeModelServer, local: bool
) -> None:
    adapter = llamacpp(models, local=local, max_retries=0)
    models.on(reply=Reply(text="a slow answer " * 20, latency_s=1.5), times=1)
    models.on(reply=Reply(text="The change looks sound."))
    with pytest.raises(ProviderTimeout, match="deadline"):
        await adapter.call(seat(1, output=None, deadline_s=0.3))
    answer = await adapter.call(seat(2, output=None))
    assert answer.text == "The change looks sound."
    orphan, after = models.calls
    assert orphan.status == 499 and after.status == 200
    if local:  # streamed: the server stopped when the deadline closed the stream
        assert orphan.request.stream and after.request.stream
        assert orphan.ended_at - orphan.started_at < 0.8
        assert after.queued_s < 0.3
    else:  # non-streamed: generated to its end, and the next request waited behind it
        assert orphan.ended_at - orphan.started_at >= 1.45
        assert after.queued_s >= 0.9 and abs(served_at(after) - orphan.ended_at) < 0.1
    await adapter.aclose()


async def test_two_seats_negotiate_with_one_refused_request_and_never_overlap(
    models: FakeModelServer,
) -> None:
    """The SDK's two retries of llama-cpp-python's 500 are off (it names the format), and the
    endpoint's one slot holds every request, the negotiation's included."""
    adapter = llamacpp(models)  # the settings' retries: 2
    models.max_parallel(None, MODEL)  # the fake would let them overlap: only ours can hold
    models.on(reply=Reply(json=GOOD, latency_s=0.3))
    results = await asyncio.gather(adapter.call(seat(1)), adapter.start(seat(2)).result())
    assert all(r.output == Verdict.model_validate(GOOD) for r in results)
    assert kinds(models) == [(500, "json_schema"), (200, "json_object"), (200, "json_object")]
    assert all(c.request.stream for c in models.calls)
    assert models.peak_in_flight(MODEL) == 1
    ordered = sorted(models.calls, key=lambda c: c.started_at)
    assert all(b.started_at >= a.ended_at for a, b in itertools.pairwise(ordered))
    await adapter.aclose()


async def test_a_refusal_naming_the_format_is_sent_once_and_a_503_is_still_retried(
    models: FakeModelServer,
) -> None:
    adapter = llamacpp(models, structured="json_schema")  # set: its refusal surfaces
    with pytest.raises(ServerError, match="response_format"):
        await adapter.call(seat(1))
    assert kinds(models) == [(500, "json_schema")]  # not three
    await adapter.aclose()
    models.calls.clear()
    adapter = llamacpp(models, structured="json_object")
    models.on(reply=Fault.server_error(503), times=1)  # an outage: no word of the format
    models.on(reply=Reply(json=GOOD))
    result = await adapter.call(seat(1))
    assert result.output == Verdict.model_validate(GOOD) and result.attempts == 2
    assert kinds(models) == [(503, "json_object"), (200, "json_object")]
    await adapter.aclose()


@pytest.mark.parametrize("local", [True, False])
async def test_a_slow_prompt_is_waited_for_not_sent_again(
    models: FakeModelServer, local: bool
) -> None:
    """Prompt evaluation on a CPU outlasts an HTTP attempt's timeout: a local server's
    request is waited for until the call's deadline, never sent again behind itself; a
    hosted endpoint keeps its per-attempt timeout and the SDK's retries."""
    adapter = llamacpp(
        models, local=local, structured="json_object", request_timeout_s=0.3, call_deadline_s=5.0
    )
    models.on(reply=Reply(json=GOOD, first_token_s=0.8, latency_s=1.0))
    if local:
        result = await adapter.call(seat(1))
        assert result.output == Verdict.model_validate(GOOD) and result.attempts == 1
        assert [c.status for c in models.calls] == [200]
    else:
        with pytest.raises(ProviderTimeout, match="retries exhausted"):
            await adapter.call(seat(1))
        assert [c.attempt_of for c in models.calls] == [1, 2, 3]
    await adapter.aclose()


async def test_an_interrupted_stream_is_read_as_cut_not_as_an_answer(
    models: FakeModelServer,
) -> None:
    """Another worker's request arrives while ours streams: llama-cpp-python ends ours with
    `[DONE]` and no finish_reason. It is a cut answer (re-asked for shorter by the engine),
    never a finished one read for its JSON and repaired."""
    ours = llamacpp(models, structured="json_object")
    other = llamacpp(models, structured="json_object")  # its own slot: another worker's
    models.on(lambda r: r.label == "seat-1/assess", reply=Reply(json=LONG, latency_s=1.0))
    models.on(reply=Reply(json=GOOD))
    started = ours.start(seat(1))
    await started.wait_began()
    theirs = asyncio.ensure_future(other.call(seat(2)))
    with pytest.raises(InvalidOutput) as cut:
        await started.result()
    assert cut.value.truncated
    assert (await theirs).output == Verdict.model_validate(GOOD)
    first = models.calls_labelled("seat-1/assess")
    assert len(first) == 1 and first[0].interrupted  # no repair re-ask
    await ours.aclose()
    await other.aclose()


async def test_the_schema_sits_in_the_prefix_every_seat_of_a_phase_shares(
    models: FakeModelServer,
) -> None:
    """json_object mode tells the model the schema in the prompt. It goes right after the
    system blocks, before each seat's own messages: two seats' prompts are the same up to
    their own brief, so llama.cpp's prompt cache serves the schema to the second seat
    (before, it came last, after the brief, and was read again for every seat)."""
    adapter = llamacpp(models, structured="json_object")
    models.on(reply=Reply(json=GOOD))
    for n in (1, 2):
        result = await adapter.call(seat(n))
        assert result.output == Verdict.model_validate(GOOD)
    first, second = (c.request.body["messages"] for c in models.calls)
    schema_at = next(
        i for i, m in enumerate(first) if "validates against this JSON schema" in m["content"]
    )
    assert first[schema_at]["role"] == "system"
    assert all(m["role"] == "system" for m in first[:schema_at])
    assert first[: schema_at + 1] == second[: schema_at + 1]
    assert first[-1]["content"].endswith("seat 1.") and second[-1]["content"].endswith("seat 2.")
