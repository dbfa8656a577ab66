"""Anthropic Messages API through the official SDK (AsyncAnthropic).

Structured output is a forced tool call; every call of a deliberation sends the same tool
list so the cached prefix (tools, then system) stays the same while `tool_choice` picks the
phase's tool.
"""

from __future__ import annotations

import asyncio
import json
from functools import lru_cache
from typing import Any

import anthropic

from bot.providers.adapter import Adapter, RawAnswer
from bot.providers.base import ModelCall, OutputT, OutputTool, ProviderError, Usage
from bot.providers.errors import map_sdk_error
from bot.providers.schema import schema_chars, tool_schema
from bot.tokens import TokenEstimator

_EPHEMERAL = {"type": "ephemeral"}
_MAX_BREAKPOINTS = 4


def anthropic_client(
    key: str, base_url: str | None, *, max_retries: int, timeout_s: float
) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key=key, base_url=base_url, max_retries=max_retries, timeout=timeout_s
    )


class AnthropicAdapter(Adapter):
    def __init__(self, client: anthropic.AsyncAnthropic, secrets: list[str], **kwargs: Any):
        super().__init__(**kwargs)
        self._client = client
        self._secrets = secrets

    @property
    def base_url(self) -> str:
        return str(self._client.base_url).rstrip("/")

    @property
    def structured_mode(self) -> str:
        return "tools"

    async def aclose(self) -> None:
        await self._client.close()

    def _error(self, err: Exception) -> ProviderError:
        return map_sdk_error(
            err,
            ref=self.ref,
            key_env="ANTHROPIC_API_KEY",
            secrets=self._secrets,
            url=self.base_url,
        )

    async def list_models(self) -> list[str] | None:
        try:
            page = await self._client.with_options(max_retries=1).models.list(
                limit=100, timeout=15.0
            )
        except anthropic.NotFoundError:
            return None
        except (anthropic.AnthropicError, ValueError) as err:
            raise self._error(err) from None
        return [m.id for m in page.data]

    async def _exchange(
        self, request: ModelCall[OutputT], began: asyncio.Event | None
    ) -> RawAnswer:
        body = self._body(request)
        headers = {"x-council-label": request.label} if request.label else None
        try:
            if began is None:
                response = await self._client.messages.with_raw_response.create(
                    **body, extra_headers=headers
                )
                message = await response.parse()
                raw = self._read_message(message.model_dump(), request)
                raw.retries = response.retries_taken
            else:
                raw = await self._stream(body, headers, began, request)
        except (anthropic.AnthropicError, ValueError) as err:
            raise self._error(err) from None
        raw.sent_chars = _chars(body, request)
        return raw

    def _body(self, request: ModelCall[OutputT]) -> dict[str, Any]:
        breakpoints = _Breakpoints(self._caps.min_cache_tokens, self._estimator)
        tools = [_tool(t) for t in request.all_tools()]
        for t in request.all_tools():
            breakpoints.add_chars(schema_chars(t.schema, strict=False) + len(t.description))
        system = [
            breakpoints.block({"type": "text", "text": b.text}, b.text, b.cache)
            for b in request.system
        ]
        messages = [
            {
                "role": m.role,
                "content": [
                    breakpoints.block({"type": "text", "text": m.content}, m.content, m.cache)
                ],
            }
            for m in request.messages
        ]
        body: dict[str, Any] = {
            "model": self._ref.model,
            "max_tokens": min(request.max_tokens, self._caps.max_output_tokens),
            "messages": messages,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        if request.output is not None:
            body["tool_choice"] = {"type": "tool", "name": request.output.name}
        if request.temperature is not None and self._caps.accepts_temperature:
            body["extra_body"] = {"temperature": request.temperature}
        return body

    async def _stream(
        self,
        body: dict[str, Any],
        headers: dict[str, str] | None,
        began: asyncio.Event,
        request: ModelCall[OutputT],
    ) -> RawAnswer:
        response = await self._client.messages.with_raw_response.create(
            **body, stream=True, extra_headers=headers
        )
        stream = await response.parse()
        acc = _StreamAccumulator()
        async for event in stream:
            began.set()
            acc.feed(event.model_dump())
        raw = self._read_message(acc.message(), request)
        raw.retries = response.retries_taken
        return raw

    def _read_message(self, message: dict[str, Any], request: ModelCall[OutputT]) -> RawAnswer:
        texts: list[str] = []
        structured: object | None = None
        want = request.output.name if request.output else None
        for block in message.get("content") or []:
            if block.get("type") == "text":
                texts.append(block.get("text") or "")
            elif block.get("type") == "tool_use" and block.get("name") == want:
                structured = block.get("input")
        stop = message.get("stop_reason")
        text = "".join(texts)
        if structured is not None:
            text = json.dumps(structured)
        return RawAnswer(
            text=text,
            structured=structured,
            usage=_usage(message.get("usage") or {}),
            stop_reason=stop,
            truncated=stop == "max_tokens",
            refusal=(text or "refusal") if stop == "refusal" else None,
        )


class _Breakpoints:
    """Places `cache_control` only where the prefix is long enough to be cached at all:
    a breakpoint below the model's minimum cannot hit, so it is not sent."""

    def __init__(self, min_tokens: int, estimator: TokenEstimator) -> None:
        self._min = min_tokens
        self._estimator = estimator
        self._chars = 0
        self._used = 0

    def add_chars(self, chars: int) -> None:
        self._chars += chars

    def block(self, block: dict[str, Any], text: str, cache: bool) -> dict[str, Any]:
        self._chars += len(text)
        long_enough = self._estimator.estimate_chars(self._chars) >= self._min
        if cache and long_enough and self._used < _MAX_BREAKPOINTS:
            self._used += 1
            return {**block, "cache_control": _EPHEMERAL}
        return block


@lru_cache(maxsize=256)
def _tool(tool: OutputTool) -> dict[str, Any]:
    """The tool definition, built once per process (shared by every body: never changed)."""
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool_schema(tool.schema, strict=False),
    }


def _usage(usage: dict[str, Any]) -> Usage:
    return Usage(
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cache_write_tokens=int(usage.get("cache_creation_input_tokens") or 0),
        cache_read_tokens=int(usage.get("cache_read_input_tokens") or 0),
    )


def _chars(body: dict[str, Any], request: ModelCall[Any]) -> int:
    total = sum(len(b["text"]) for b in body.get("system", []))
    total += sum(len(c["text"]) for m in body["messages"] for c in m["content"])
    return total + sum(schema_chars(t.schema, strict=False) for t in request.all_tools())


class _StreamAccumulator:
    """Rebuilds the final message from raw stream events."""

    def __init__(self) -> None:
        self._message: dict[str, Any] = {"content": [], "usage": {}}
        self._partial_json: dict[int, list[str]] = {}

    def feed(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            self._message.update(event["message"])
            self._message["content"] = []
        elif kind == "content_block_start":
            self._message["content"].append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            self._delta(event["index"], event["delta"])
        elif kind == "content_block_stop":
            self._close(event["index"])
        elif kind == "message_delta":
            self._message["stop_reason"] = event["delta"].get("stop_reason")
            usage = {k: v for k, v in (event.get("usage") or {}).items() if v is not None}
            self._message["usage"] = {**self._message.get("usage", {}), **usage}

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self._message["content"][index]
        if delta.get("type") == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
        elif delta.get("type") == "input_json_delta":
            self._partial_json.setdefault(index, []).append(delta.get("partial_json", ""))

    def _close(self, index: int) -> None:
        parts = self._partial_json.pop(index, None)
        if parts is not None:
            text = "".join(parts)
            try:
                self._message["content"][index]["input"] = json.loads(text) if text else {}
            except json.JSONDecodeError:
                self._message["content"][index] = {"type": "text", "text": text}

    def message(self) -> dict[str, Any]:
        return self._message
