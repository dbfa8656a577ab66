"""OpenAI Chat Completions through the official SDK (AsyncOpenAI), for OpenAI itself and for
OpenAI-compatible endpoints (Ollama, vLLM, OpenRouter, Azure OpenAI, LM Studio).

Structured output uses `response_format: json_schema` in strict mode where the model has it;
otherwise the schema goes into the prompt and the JSON is read out of the text. OpenAI
caches long prompt prefixes by itself, so the same tool list is still sent on every call.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import openai

from bot.providers.adapter import Adapter, RawAnswer
from bot.providers.base import ModelCall, OutputT, Usage
from bot.providers.capabilities import StructuredMode
from bot.providers.errors import map_sdk_error
from bot.providers.schema import schema_instructions, strict_schema


def openai_client(
    key: str,
    base_url: str | None,
    *,
    max_retries: int,
    timeout_s: float,
    api_version: str | None = None,
) -> openai.AsyncOpenAI:
    """For OpenAI and every compatible endpoint; Azure wants its api-version in the query."""
    return openai.AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout_s,
        default_query={"api-version": api_version} if api_version else None,
    )


class OpenAIAdapter(Adapter):
    def __init__(
        self, client: openai.AsyncOpenAI, secrets: list[str], key_env: str | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._client = client
        self._secrets = secrets
        self._key_env = key_env

    @property
    def structured_mode(self) -> StructuredMode:
        if not self._ref.json_schema:
            return "text"
        if self._caps.known:
            return self._caps.structured
        return "json_schema"

    async def aclose(self) -> None:
        await self._client.close()

    async def _exchange(
        self, request: ModelCall[OutputT], began: asyncio.Event | None
    ) -> RawAnswer:
        body = self._body(request)
        headers = {"x-council-label": request.label} if request.label else None
        create = self._client.chat.completions.with_raw_response.create
        try:
            if began is None:
                response = await create(**body, extra_headers=headers)
                completion = response.parse().model_dump()
            else:
                response = await create(
                    **body,
                    stream=True,
                    stream_options={"include_usage": True},
                    extra_headers=headers,
                )
                completion = await _collect(response.parse(), began)
        except (openai.OpenAIError, ValueError) as err:
            raise map_sdk_error(
                err, ref=self.ref, key_env=self._key_env, secrets=self._secrets
            ) from None
        raw = self._read(completion, native=request.output is not None)
        raw.retries = response.retries_taken
        raw.sent_chars = sum(len(m["content"]) for m in body["messages"])
        return raw

    def _body(self, request: ModelCall[OutputT]) -> dict[str, Any]:
        mode = self.structured_mode
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": b.text} for b in request.system
        ]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        body: dict[str, Any] = {"model": self._ref.model, "messages": messages}
        body[self._caps.max_tokens_param] = min(request.max_tokens, self._caps.max_output_tokens)
        if request.temperature is not None and self._caps.accepts_temperature:
            body["temperature"] = request.temperature
        if request.output is None:
            return body
        schema = strict_schema(request.output.schema)
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.output.name, "schema": schema, "strict": True},
            }
            body["tools"] = [
                _function(t.name, t.description, strict_schema(t.schema))
                for t in request.all_tools()
            ]
            body["tool_choice"] = "none"
            return body
        if mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        messages.append(
            {"role": "user", "content": schema_instructions(request.output.name, schema)}
        )
        return body

    def _read(self, completion: dict[str, Any], *, native: bool) -> RawAnswer:
        choice = (completion.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        text = message.get("content") or ""
        finish = choice.get("finish_reason")
        structured: object | None = None
        if native and self.structured_mode == "json_schema" and finish != "length":
            try:
                structured = json.loads(text)
            except json.JSONDecodeError:
                structured = None
        refusal = message.get("refusal")
        if finish == "content_filter":
            refusal = refusal or "the provider's content filter stopped the answer"
        return RawAnswer(
            text=text,
            structured=structured,
            usage=_usage(completion.get("usage") or {}),
            stop_reason=finish,
            truncated=finish == "length",
            refusal=refusal,
        )


def _function(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": schema,
            "strict": True,
        },
    }


def _usage(usage: dict[str, Any]) -> Usage:
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0)
    prompt = int(usage.get("prompt_tokens") or 0)
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cache_read_tokens=cached,
    )


async def _collect(stream: Any, began: asyncio.Event) -> dict[str, Any]:
    """Rebuild a chat.completion object from its chunks."""
    text: list[str] = []
    refusal: list[str] = []
    finish: str | None = None
    usage: dict[str, Any] = {}
    async for chunk in stream:
        began.set()
        data = chunk.model_dump()
        if data.get("usage"):
            usage = data["usage"]
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            refusal.append(delta.get("refusal") or "")
            finish = choice.get("finish_reason") or finish
    message = {"content": "".join(text), "refusal": "".join(refusal) or None}
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}
