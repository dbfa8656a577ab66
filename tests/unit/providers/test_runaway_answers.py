"""Runaway answers, bounded and read (issue 23, items 2-3), against the fake model server
through the real SDKs (and httpx for Ollama's native API):

- a list longer than its schema's `maxItems` (a grammar that ignores it) is cut to the bound
  with a note in the answer's record, not re-asked;
- a streamed answer that repeats one finding is read no further: the client hangs up (the
  server stops sending long before the scripted answer ends), the answer is read as far as
  it is whole, the repeats kept once, and kept with a note;
- an answer with several findings alike (one title, other lines) is read to its end;
- an answer cut at max_tokens whose whole part validates is kept with a note, in one call.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from bot.council import prompts
from bot.providers import InvalidOutput, Message, ModelCall, OutputTool, SystemBlock
from bot.providers.base import CallResult, Provider
from bot.providers.salvage import whole_parts
from tests.support.model_server import FakeModelServer, RecordedCall, Reply
from tests.unit.providers.test_negotiation import REF, box
from tests.unit.providers.test_providers import make_settings

ANTHROPIC = "anthropic:claude-sonnet-5-5"
OPENAI = "openai:gpt-5.4"
LOCAL = "qwen2.5-coder:0.5b"
LOOP_REF = REF.replace("qwen2.5-coder:7b", LOCAL)
SCRIPTED_S = 2.0  # the looping answer's scripted time, spread over its chunks


def call(tool: OutputTool) -> ModelCall[Any]:
    return ModelCall(
        system=[SystemBlock(text="You review pull requests.")],
        messages=[Message(role="user", content="Review this change.")],
        output=tool,
        max_tokens=tool.output_tokens(8192),
        deadline_s=20.0,
        label="seat-1/" + tool.name,
    )


def finding(line: int, detail: str = "The import of os is never used in this module.") -> Any:
    return {
        "severity": "minor",
        "path": "app/cache.py",
        "start_line": line,
        "end_line": None,
        "title": "Unused import",
        "detail": detail,
        "suggestion": "Remove the import.",
        "replacement": None,
    }


def assessment(findings: list[Any]) -> dict[str, Any]:
    return {
        "verdict": "CONCERNS",
        "score": 6,
        "summary": "Works, with small problems.",
        "lens_scores": [{"lens": "correctness", "score": 7, "analysis": "Reads well."}],
        "red_flags": [],
        "concerns": ["The cache never expires."],
        "recommendations": [],
        "merge_conditions": [],
        "questions": [],
        "confidence": 70,
        "findings": findings,
    }


async def ended(record: RecordedCall) -> RecordedCall:
    """The call once the server has ended it (it notices a hang-up on its own loop)."""
    for _ in range(100):
        if record.done:
            return record
        await asyncio.sleep(0.02)
    raise AssertionError("the server never ended the call")


# --- lists past their bound ----------------------------------------------------------------


@pytest.mark.parametrize("ref", [ANTHROPIC, OPENAI])
async def test_a_list_past_its_bound_is_cut_with_a_note_not_reasked(
    models: FakeModelServer, ref: str
) -> None:
    from bot.providers import ProviderRegistry

    vote = {
        "vote": "APPROVE",
        "confidence": 0.8,
        "rationale": "Fine.",
        "conditions": [f"Add test {n}" for n in range(1, 10)],
        "suggestions": [],
    }
    models.on(reply=Reply(json=vote))  # a server that ignores maxItems
    registry = ProviderRegistry(make_settings(models, max_retries=0))
    result = await registry.get(ref).call(call(prompts.VOTE_TOOL))
    await registry.aclose()

    assert len(models.calls) == 1  # kept, not re-asked
    assert result.output is not None
    assert result.output.conditions == [f"Add test {n}" for n in range(1, 6)]
    assert result.adjusted == ("conditions: 9 items, more than the maximum 5; the first 5 kept",)
    # The schema sent says the bound (OpenAI: in strict mode; Anthropic: the tool's).
    body = models.calls[0].request.body
    if ref == OPENAI:
        schema = body["response_format"]["json_schema"]["schema"]
        assert body["response_format"]["json_schema"]["strict"] is True
    else:
        schema = next(t["input_schema"] for t in body["tools"] if t["name"] == "submit_vote")
    assert schema["properties"]["conditions"]["maxItems"] == 5


# --- a looping answer, streamed ---------------------------------------------------------------


def looping() -> dict[str, Any]:
    """What a 0.5B model under a grammar wrote: one finding, until the window ran out."""
    return assessment([finding(3)] * 60)


async def streamed(provider: Provider, tool: OutputTool) -> CallResult[Any]:
    return await provider.start(call(tool)).result()


def assert_cut_and_kept(result: CallResult[Any], record: RecordedCall) -> None:
    full = json.dumps(looping())
    assert result.output is not None
    assert result.output.findings == [result.output.findings[0]]  # the repeats kept once
    assert result.output.findings[0].start_line == 3
    assert result.stop_reason == "repetition"
    assert len(result.text) < len(full) // 3  # read no further than the loop
    (note,) = result.adjusted
    assert note.startswith(
        f"the answer repeated itself and was cut after {len(result.text):,} characters; "
        "read as far as it was whole ("
    )
    assert note.endswith("repeated items kept once)")
    # The client hung up: the server ended the call long before its scripted end.
    assert record.ended_at - record.started_at < SCRIPTED_S / 2


async def test_a_looping_stream_is_cut_early_read_as_far_as_whole_and_kept(
    models: FakeModelServer,
) -> None:
    models.behave_as("llama-cpp-python", LOCAL)
    models.on(reply=Reply(json=looping(), latency_s=SCRIPTED_S))
    registry = box(models, structured="json_object")
    started = time.monotonic()
    result = await streamed(registry.get(LOOP_REF), prompts.ASSESS_TOOL)
    assert time.monotonic() - started < SCRIPTED_S / 2
    record = await ended(models.calls[0])
    await registry.aclose()

    assert len(models.calls) == 1
    assert_cut_and_kept(result, record)


async def test_ollamas_native_stream_is_cut_the_same_way(models: FakeModelServer) -> None:
    models.behave_as("ollama", LOCAL)
    models.on(reply=Reply(json=looping(), latency_s=SCRIPTED_S))
    registry = box(models, structured="format")
    result = await registry.get(LOOP_REF).call(call(prompts.ASSESS_TOOL))
    record = await ended(models.calls[0])
    await registry.aclose()

    assert len(models.calls) == 1 and record.request.api == "ollama"
    assert_cut_and_kept(result, record)


async def test_similar_findings_are_read_to_the_end(models: FakeModelServer) -> None:
    alike = [finding(10 * n, f"The import of os on line {10 * n} is never used.") for n in (1, 2)]
    alike += [finding(n) for n in (31, 32, 33, 34)]  # one detail, lines apart
    alike += [{**finding(40), "path": f"app/{name}.py"} for name in ("a", "b", "c")]
    models.behave_as("llama-cpp-python", LOCAL)
    models.on(reply=Reply(json=assessment(alike), latency_s=0.4))
    registry = box(models, structured="json_object")
    result = await streamed(registry.get(LOOP_REF), prompts.ASSESS_TOOL)
    record = await ended(models.calls[0])
    await registry.aclose()

    assert result.output is not None and len(result.output.findings) == len(alike) == 9
    assert result.adjusted == () and result.stop_reason == "stop"
    assert record.status == 200 and record.ended_at - record.started_at >= 0.4


# --- an answer cut at max_tokens --------------------------------------------------------------


def cut_in_third_finding() -> str:
    text = json.dumps(assessment([finding(3), finding(9), finding(12)]))
    return text[: text.rindex('"detail"')]  # the third finding's detail never came


@pytest.mark.parametrize("ref", [ANTHROPIC, OPENAI])
async def test_an_answer_cut_at_max_tokens_keeps_what_is_whole(
    models: FakeModelServer, ref: str
) -> None:
    from bot.providers import ProviderRegistry

    partial = cut_in_third_finding()
    models.on(reply=Reply(text=partial, stop_reason="max_tokens"))
    registry = ProviderRegistry(make_settings(models, max_retries=0))
    result = await registry.get(ref).call(call(prompts.ASSESS_TOOL))
    await registry.aclose()

    assert len(models.calls) == 1  # one call: no re-ask
    assert models.calls[0].request.max_tokens == prompts.ASSESS_TOOL.max_tokens
    assert result.output is not None
    assert [f.start_line for f in result.output.findings] == [3, 9]
    assert result.stop_reason in ("length", "max_tokens")
    (note,) = result.adjusted
    assert note.startswith("the answer was cut off at the max-tokens limit after ")
    assert note.endswith(" characters; read as far as it was whole")


async def test_an_answer_cut_before_its_required_fields_is_still_invalid(
    models: FakeModelServer,
) -> None:
    from bot.providers import ProviderRegistry

    text = json.dumps(assessment([]))
    models.on(reply=Reply(text=text[: text.index('"lens_scores"')], stop_reason="length"))
    registry = ProviderRegistry(make_settings(models, max_retries=0))
    with pytest.raises(InvalidOutput, match="max-tokens") as caught:
        await registry.get(OPENAI).call(call(prompts.ASSESS_TOOL))
    await registry.aclose()
    assert caught.value.truncated  # the engine re-asks it for a shorter answer


# --- reading as far as whole ------------------------------------------------------------------


def test_whole_parts_drop_the_element_under_way_and_close_the_rest() -> None:
    text = '{"a": [{"x": 1, "y": "two"}, {"x": 3, "y": "fo'
    values = [part.value for part in whole_parts(text)]
    assert values == [
        {"a": [{"x": 1, "y": "two"}, {"x": 3}]},
        {"a": [{"x": 1, "y": "two"}]},
        {},
    ]
    # Escaped quotes and brackets inside strings are text; a number under way is dropped.
    assert whole_parts('{"s": "a \\"]}\\" b", "n": 12')[0].value == {"s": 'a "]}" b'}
    repeated = whole_parts('{"l": ["same item", "same item", "other", "same item"')
    assert (repeated[0].value, repeated[0].repeats) == ({"l": ["same item", "other"]}, 2)
    assert whole_parts("no object here") == []
    # Prose before the object (an answer in text mode) is skipped.
    assert whole_parts('Here it is: {"k": 1, "j": [2, 3')[0].value == {"k": 1, "j": [2]}
