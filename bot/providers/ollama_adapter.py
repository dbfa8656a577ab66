"""Ollama's native chat API (`POST /api/chat`), for an endpoint set to `structured: format`.

Ollama's OpenAI-compatible `/v1` takes `json_schema` since 0.5 and is what `auto` uses; its
native API constrains the answer with `format: <JSON schema>` on older servers too. There is
no official SDK for it in our tree, so this talks to it with httpx (which both SDKs use).

Every answer is streamed (NDJSON lines, the last `done: true` with the counts): its response
begins at the first line, and an answer that repeats itself (bot/providers/repetition.py) is
read no further - leaving the stream stops Ollama generating - and read as far as it is whole.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from bot.providers.adapter import Adapter, RawAnswer
from bot.providers.base import (
    BadRequest,
    ConfigurationError,
    ContextTooLong,
    ModelCall,
    OutputT,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    ServerError,
    Unreachable,
    Usage,
)
from bot.providers.errors import scrub
from bot.providers.repetition import LoopWatch
from bot.providers.schema import schema_instructions, tool_schema

_RETRY_STATUSES = (429, 500, 502, 503, 504)


class OllamaAdapter(Adapter):
    def __init__(
        self,
        root: str,
        secrets: list[str],
        *,
        max_retries: int,
        timeout_s: float,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._root = root.rstrip("/")
        self._secrets = secrets
        self._max_retries = max_retries
        self._client = httpx.AsyncClient(base_url=self._root, timeout=timeout_s)

    @property
    def base_url(self) -> str:
        return self._root

    @property
    def structured_mode(self) -> str:
        return "format"

    async def aclose(self) -> None:
        await self._client.aclose()

    async def list_models(self) -> list[str] | None:
        try:
            response = await self._client.get("/api/tags", timeout=15.0)
        except httpx.HTTPError as err:
            raise Unreachable(
                f"{self.ref}: cannot reach the provider at {self.shown_url} "
                f"({scrub(str(err), self._secrets)[:200]})"
            ) from None
        if response.status_code != 200:
            raise self._status_error(response)
        try:
            models = response.json().get("models") or []
        except (ValueError, AttributeError):
            return None
        return [str(m.get("name")) for m in models if isinstance(m, dict) and m.get("name")]

    def _body(self, request: ModelCall[OutputT]) -> dict[str, Any]:
        messages = [{"role": "system", "content": b.text} for b in request.system]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        options: dict[str, Any] = {
            "num_predict": min(request.max_tokens, self._caps.max_output_tokens)
        }
        if request.temperature is not None and self._caps.accepts_temperature:
            options["temperature"] = request.temperature
        body: dict[str, Any] = {
            "model": self._ref.model,
            "messages": messages,
            "stream": True,
            "options": options,
        }
        if request.output is not None:
            schema = tool_schema(request.output.schema, strict=True)  # shared: never changed
            body["format"] = schema
            # After the system blocks, the same for every seat of a phase (the prompt cache:
            # bot/providers/openai_adapter.py `_body`).
            messages.insert(
                len(request.system),
                {"role": "system", "content": schema_instructions(request.output.name, schema)},
            )
        return body

    async def _exchange(
        self, request: ModelCall[OutputT], began: asyncio.Event | None
    ) -> RawAnswer:
        body = self._body(request)
        headers = {"x-council-label": request.label} if request.label else {}
        retries = 0
        while True:
            try:
                async with self._client.stream(
                    "POST", "/api/chat", json=body, headers=headers
                ) as response:
                    if response.status_code == 200:
                        raw = await self._streamed(response, began or asyncio.Event())
                        if request.output is None:
                            raw.structured = None  # a plain answer, whatever it looks like
                        raw.retries = retries
                        raw.sent_chars = sum(len(m["content"]) for m in body["messages"])
                        return raw
                    await response.aread()
                    error = self._status_error(response)
                    if response.status_code not in _RETRY_STATUSES:
                        raise error
            except httpx.TimeoutException:
                error = ProviderTimeout(f"{self.ref}: request to {self.shown_url} timed out")
            except httpx.HTTPError as err:
                error = Unreachable(
                    f"{self.ref}: cannot reach the provider at {self.shown_url} "
                    f"({scrub(str(err), self._secrets)[:200]})"
                )
            if retries >= self._max_retries:
                raise error
            retries += 1
            await asyncio.sleep(min(0.5 * 2 ** (retries - 1), 8.0))

    async def _streamed(self, response: httpx.Response, began: asyncio.Event) -> RawAnswer:
        """The answer's lines read to the last (`done`), or until it repeats itself."""
        parts: list[str] = []
        last: dict[str, Any] = {}
        watch = LoopWatch()
        async for line in response.aiter_lines():
            if not line.strip():
                continue
            began.set()
            try:
                data = json.loads(line)
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise ServerError(f"{self.ref}: the provider sent a malformed response")
            if data.get("error"):
                detail = scrub(str(data["error"]), self._secrets)[:500]
                raise ServerError(f"{self.ref}: provider error: {detail}")
            piece = str((data.get("message") or {}).get("content") or "")
            parts.append(piece)
            if data.get("done"):
                last = data
                break
            if watch.feed(piece):
                break
        return _read({**last, "content": "".join(parts)}, watch.looped_at)

    def _status_error(self, response: httpx.Response) -> ProviderError:
        try:
            payload = response.json()
        except ValueError:
            payload = {}
        detail = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(detail, dict):
            detail = detail.get("message")
        message = scrub(str(detail or response.text), self._secrets)[:500]
        status = response.status_code
        error: ProviderError
        if status == 404:
            error = ConfigurationError(
                f"{self.ref}: unknown model or endpoint at {self.shown_url}: {message}"
            )
        elif status == 429:
            error = RateLimited(f"{self.ref}: rate limited: {message}")
        elif status >= 500:
            error = ServerError(f"{self.ref}: provider error {status}: {message}")
        elif "context" in message.lower():
            error = ContextTooLong(f"{self.ref}: the prompt is longer than the model's context")
        else:
            error = BadRequest(f"{self.ref}: request rejected ({status}): {message}")
        error.status = status
        error.model = self.ref
        return error


def _read(data: dict[str, Any], looped_at: int | None) -> RawAnswer:
    """The answer from its last line (`data`, {} when none came) and its whole `content`.
    Without a last line it was cut: at a loop (`looped_at`), or by the server."""
    text = str(data.get("content") or "")
    stop = data.get("done_reason") if data.get("done") else None
    truncated = stop == "length" or not data.get("done")
    parsed: object | None = None
    if not truncated:
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            parsed = None
    return RawAnswer(
        text=text,
        structured=parsed,
        usage=Usage(
            input_tokens=int(data.get("prompt_eval_count") or 0),
            output_tokens=int(data.get("eval_count") or 0),
        ),
        stop_reason="repetition" if looped_at is not None else (str(stop) if stop else None),
        truncated=truncated,
        looped_at=looped_at,
    )
