"""OpenAI Chat Completions through the official SDK (AsyncOpenAI), for OpenAI itself and for
OpenAI-compatible endpoints (Ollama's /v1, vLLM, llama.cpp, LM Studio, OpenRouter, Azure).

Structured output is negotiated per endpoint and model (bot.providers.negotiation): strict
`json_schema`, then `json_object` with the schema, then a forced tool call, then free text
with the schema in the prompt (the JSON read out of the answer, one repair re-ask). The first
structured call of an unknown pairing finds the mode, streamed, holding the negotiation lock
only until the server has accepted or refused the request's format (its response began or
its error came back): the calls waiting on the lock then go with the accepted mode while the
first answer is still being written, so a phase's seats never wait on negotiation. A mode
set in the settings, OpenAI's own API and Azure are known (`known_endpoint`): no lock, no
negotiation; a refusal of the format by a known endpoint, never yet accepted, is
negotiated from the next mode. A 200 whose answer ignored the format switches later calls
to the schema in the prompt.

Each call sends only its own phase's schema or tool: OpenAI puts tools and the response
schema ahead of the system prompt in its cached prefix, and the schema changes with the
phase anyway, so the other phases' definitions only add tokens (bench/deliberation.py
measures both ways; `shared_tools=True` sends the whole list).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import openai
import structlog
from pydantic import ValidationError

from bot.providers.adapter import Adapter, RawAnswer
from bot.providers.base import (
    ModelCall,
    OutputT,
    OutputTool,
    ProviderError,
    Usage,
)
from bot.providers.errors import map_sdk_error
from bot.providers.negotiation import (
    IGNORED_TO_GIVE_UP,
    PROCESS_MODES,
    Mode,
    ModeMemory,
    as_mode,
    first_mode,
    known_endpoint,
    memory_key,
    names_format,
    next_mode,
)
from bot.providers.openai_http import CouncilHttpClient, local_timeout
from bot.providers.repetition import LoopWatch
from bot.providers.schema import extract_json, schema_instructions, tool_schema
from bot.settings import StructuredSetting

log = structlog.get_logger(__name__)

REPAIR = (
    "Your answer could not be read as the JSON object asked for ({reason}). Reply with that "
    "JSON object only: no prose, no code fence."
)


@dataclass
class _Opened:
    """A request the server took: its response (begun, when streamed), not yet read."""

    response: Any  # openai's LegacyAPIResponse
    streamed: bool
    sent_chars: int

    async def close(self) -> None:
        await self.response.http_response.aclose()


def openai_client(
    key: str,
    base_url: str | None,
    *,
    max_retries: int,
    timeout_s: float,
    api_version: str | None = None,
    local: bool = False,
) -> openai.AsyncOpenAI:
    """For OpenAI and every compatible endpoint; Azure wants its api-version in the query. A
    `local` server's attempts are bounded by the call's deadline alone, and the SDK never
    sends one of its requests again once the server may have taken it (bot.providers.
    openai_http)."""
    timeout = local_timeout(timeout_s) if local else timeout_s
    return openai.AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout,
        default_query={"api-version": api_version} if api_version else None,
        http_client=CouncilHttpClient(local=local, timeout=timeout),
    )


class OpenAIAdapter(Adapter):
    def __init__(
        self,
        client: openai.AsyncOpenAI,
        secrets: list[str],
        key_env: str | None,
        *,
        structured: StructuredSetting = "auto",
        modes: ModeMemory = PROCESS_MODES,
        shared_tools: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._client = client
        self._secrets = secrets
        self._key_env = key_env
        self._setting = structured
        self._modes = modes
        self._shared_tools = shared_tools
        # The mode in use: set, known from the endpoint, or found (None: not yet).
        self._mode: Mode | None = as_mode(structured)
        # Known from the endpoint and not yet accepted: a refusal of it is negotiated.
        self._presumed = False
        if self._mode is None and structured == "auto" and known_endpoint(self._ref, self._caps):
            self._mode, self._presumed = self._first_mode(), True
        self._start: Mode | None = None  # where negotiation starts after such a refusal
        self._ignored = 0  # answers in a row that were prose though the format was taken
        self._negotiating = asyncio.Lock()

    @property
    def base_url(self) -> str:
        return str(self._client.base_url).rstrip("/")

    @property
    def structured_mode(self) -> Mode:
        """The mode in use: the one that worked, else the one the next call tries first."""
        return self._mode or self._first_mode()

    @property
    def mode_confirmed(self) -> bool:
        """A mode is in use that the settings set or the server took."""
        return self._mode is not None and not self._presumed

    @property
    def _memory_key(self) -> str:
        return memory_key(self.base_url, self._ref.model)

    def _first_mode(self) -> Mode:
        return first_mode(self._setting, self._ref, self._caps)

    async def aclose(self) -> None:
        await self._client.close()

    async def list_models(self) -> list[str] | None:
        try:
            page = await self._client.with_options(max_retries=1).models.list(timeout=15.0)
        except openai.NotFoundError:
            return None  # no model list here (Azure deployments, some proxies)
        except (openai.OpenAIError, ValueError) as err:
            if isinstance(err, openai.APIStatusError) and err.status_code in (405, 501):
                return None
            raise self._error(err) from None
        return [m.id for m in page.data]

    def _error(self, err: Exception) -> ProviderError:
        return map_sdk_error(
            err, ref=self.ref, key_env=self._key_env, secrets=self._secrets, url=self.base_url
        )

    async def _exchange(
        self, request: ModelCall[OutputT], began: asyncio.Event | None
    ) -> RawAnswer:
        if request.output is None:
            return await self._send(request, "text", began)
        while True:
            mode = self._mode
            if mode is None:
                found = await self._negotiate(request)
                if found is None:
                    continue  # found by another call meanwhile, or remembered
                return await self._negotiated(request, *found, began)
            try:
                return await self._structured(request, mode, began)
            except ProviderError as err:
                if not self._step_down(mode, err):
                    raise

    async def _recall(self) -> str | None:
        try:
            return await self._modes.get(self._memory_key)
        except Exception:  # a shared memory that is down only costs a negotiation
            log.warning("structured_mode_recall_failed", model=self.ref, exc_info=True)
            return None

    async def _remember(self, mode: Mode) -> None:
        self._mode = mode
        try:
            await self._modes.set(self._memory_key, mode)
        except Exception:
            log.warning("structured_mode_store_failed", model=self.ref, exc_info=True)

    async def _negotiate(self, request: ModelCall[OutputT]) -> tuple[Mode, _Opened] | None:
        """Under the lock, until the server has accepted or refused each format tried: the
        remembered mode, or the first the server accepts for `request`, remembered, with
        its response begun (None: the mode is known now and `request` was not sent)."""
        async with self._negotiating:  # one call finds the mode; the others wait for it
            if self._mode is not None:
                return None
            if self._start is None:
                remembered = as_mode(await self._recall())
                if remembered is not None:
                    self._mode = remembered
                    return None
            mode = self._start or self._first_mode()
            while True:
                try:
                    opened = await self._open(request, mode, stream=True)
                except ProviderError as err:
                    fallback = next_mode(mode) if names_format(err) else None
                    if fallback is None:
                        raise
                    log.info(
                        "structured_mode_refused",
                        model=self.ref,
                        mode=mode,
                        status=err.status,
                        next=fallback,
                    )
                    mode = fallback
                    continue
                try:
                    await self._remember(mode)
                except BaseException:
                    await opened.close()
                    raise
                return mode, opened

    async def _negotiated(
        self, request: ModelCall[OutputT], mode: Mode, opened: _Opened, began: asyncio.Event | None
    ) -> RawAnswer:
        """The answer of the call that found the mode, read outside the lock."""
        raw = await self._receive(request, mode, opened, began)
        log.debug("structured_mode", model=self.ref, mode=mode)
        return await self._judged(request, mode, raw, began)

    async def _judged(
        self, request: ModelCall[OutputT], mode: Mode, raw: RawAnswer, began: asyncio.Event | None
    ) -> RawAnswer:
        """The answer of a call sent in `mode`. Prose though the format was taken is read as
        any answer (the JSON out of the text, else one re-ask); `IGNORED_TO_GIVE_UP` such
        answers in a row mean the server ignores the format, and the schema goes into the
        prompt from then on."""
        if self._ignored_format(mode, raw):
            self._ignored += 1
            if self._ignored >= IGNORED_TO_GIVE_UP and self._mode == mode:
                log.info(
                    "structured_mode_ignored", model=self.ref, mode=mode, answers=self._ignored
                )
                await self._remember("text")
            return await self._repaired(request, raw, began)
        if mode != "text":
            self._ignored = 0
            return raw
        return await self._repaired(request, raw, began)

    def _step_down(self, mode: Mode, err: ProviderError) -> bool:
        """Whether a call whose `mode` the server refused goes again: the mode known from the
        endpoint, never accepted, refused by naming the format, is negotiated from the next
        one (the first such refusal decides; the calls refused with it go with the result).
        A mode set in the settings, or one the server has taken, stays: the error surfaces."""
        if not names_format(err):
            return False
        if self._mode != mode:
            return True  # changed by another call since this one was sent
        fallback = next_mode(mode)
        if not self._presumed or fallback is None:
            return False
        log.info(
            "structured_mode_refused", model=self.ref, mode=mode, status=err.status, next=fallback
        )
        self._mode, self._start, self._presumed = None, fallback, False
        return True

    def _ignored_format(self, mode: Mode, raw: RawAnswer) -> bool:
        """The server took the request but not its format. A model the table knows is served
        by an API that enforces the format, so a stray prose answer there is the model's (the
        engine re-asks it), never a sign to stop asking natively."""
        if mode == "text" or raw.structured is not None or raw.truncated:
            return False
        return not self._caps.known or self._ref.endpoint is not None

    async def _structured(
        self, request: ModelCall[OutputT], mode: Mode, began: asyncio.Event | None
    ) -> RawAnswer:
        opened = await self._open(request, mode, stream=self._streamed(began))
        if mode == self._mode:
            self._presumed = False  # the server took it
        raw = await self._receive(request, mode, opened, began)
        return await self._judged(request, mode, raw, began)

    async def _repaired(
        self, request: ModelCall[OutputT], raw: RawAnswer, began: asyncio.Event | None
    ) -> RawAnswer:
        """Free text: read the JSON out of it; if that fails, one repair re-ask."""
        reason = _unreadable(request, raw)
        if reason is None:
            return raw
        extra = [
            {"role": "assistant", "content": raw.text or "(no answer)"},
            {"role": "user", "content": REPAIR.format(reason=reason)},
        ]
        again = await self._send(request, "text", began, extra=extra)
        again.usage = raw.usage + again.usage
        again.retries += raw.retries + 1
        again.sent_chars += raw.sent_chars
        return again

    async def _send(
        self,
        request: ModelCall[OutputT],
        mode: Mode,
        began: asyncio.Event | None,
        *,
        extra: list[dict[str, str]] | None = None,
    ) -> RawAnswer:
        """One request (streamed: see `_streamed`)."""
        opened = await self._open(request, mode, stream=self._streamed(began), extra=extra)
        return await self._receive(request, mode, opened, began)

    def _streamed(self, began: asyncio.Event | None) -> bool:
        """Whether a request is streamed: when the caller waits for its response to begin,
        and always to a local server. A local server goes on with a request whose client
        left only when it is not streamed (llama-cpp-python generates a non-streamed answer
        to its end, and serves one request at a time): a streamed one stops at its next
        chunk, so a call past its deadline, or cancelled, frees the server for the next."""
        return began is not None or self._ref.local

    async def _open(
        self,
        request: ModelCall[OutputT],
        mode: Mode,
        *,
        stream: bool,
        extra: list[dict[str, str]] | None = None,
    ) -> _Opened:
        """Send the request (the SDK's retries included); return once its response began
        (streamed) or came back whole. An error status raises ProviderError."""
        body = self._body(request, mode)
        if extra:
            body["messages"].extend(extra)
        headers = {"x-council-label": request.label} if request.label else None
        create = self._client.chat.completions.with_raw_response.create
        try:
            if stream:
                response = await create(
                    **body,
                    stream=True,
                    stream_options={"include_usage": True},
                    extra_headers=headers,
                )
            else:
                response = await create(**body, extra_headers=headers)
        except (openai.OpenAIError, ValueError) as err:
            raise self._error(err) from None
        sent = sum(len(m["content"] or "") for m in body["messages"])
        return _Opened(response, stream, sent)

    async def _receive(
        self,
        request: ModelCall[OutputT],
        mode: Mode,
        opened: _Opened,
        began: asyncio.Event | None,
    ) -> RawAnswer:
        """Read an opened response to its end (`began` set at its first chunk)."""
        try:
            if opened.streamed:
                completion = await _collect(opened.response.parse(), began or asyncio.Event())
            else:
                completion = opened.response.parse().model_dump()
        except (openai.OpenAIError, ValueError) as err:
            raise self._error(err) from None
        finally:
            await opened.close()  # read to the end it is closed already
        raw = _read(completion, mode if request.output is not None else "text", request)
        if opened.streamed and raw.stop_reason is None:
            # Ended without a finish_reason: cut, not finished (llama-cpp-python ends a
            # stream early, with its `[DONE]`, when another request waits for the model).
            log.info("answer_interrupted", model=self.ref, label=request.label)
            raw.truncated, raw.structured = True, None
        raw.retries = opened.response.retries_taken
        raw.sent_chars = opened.sent_chars
        return raw

    def _body(self, request: ModelCall[OutputT], mode: Mode) -> dict[str, Any]:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": b.text} for b in request.system
        ]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        body: dict[str, Any] = {"model": self._ref.model, "messages": messages}
        body[self._caps.max_tokens_param] = min(request.max_tokens, self._caps.max_output_tokens)
        if request.temperature is not None and self._caps.accepts_temperature:
            body["temperature"] = request.temperature
        output = request.output
        if output is None:
            return body
        schema = tool_schema(output.schema, strict=True)  # shared: never changed
        if mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": output.name, "schema": schema, "strict": True},
            }
            if self._shared_tools:
                body["tools"] = [_function(t, strict=True) for t in request.all_tools()]
                body["tool_choice"] = "none"
            return body
        if mode == "tools":
            tools = request.all_tools() if self._shared_tools else (output,)
            body["tools"] = [_function(t, strict=False) for t in tools]
            body["tool_choice"] = {"type": "function", "function": {"name": output.name}}
            return body
        if mode == "json_object":
            # llama-cpp-python enforces `schema` with a grammar; the prompt says what it means.
            body["response_format"] = {"type": "json_object", "schema": schema}
        # Right after the system blocks, not after the seat's own brief: the same for every
        # seat of a phase, so a local server's prompt cache (llama.cpp keeps the longest
        # common prefix of the last prompt) serves it to the next seat instead of reading it
        # again (an assessment's schema is ~1,000 tokens: a minute on a CPU).
        messages.insert(
            len(request.system),
            {"role": "system", "content": schema_instructions(output.name, schema)},
        )
        return body


def _unreadable(request: ModelCall[Any], raw: RawAnswer) -> str | None:
    """Why a free-text answer is not the object asked for; None when it is (or was cut off,
    which the engine re-asks for a shorter answer)."""
    if raw.truncated or raw.refusal is not None or request.output is None:
        return None
    try:
        data = extract_json(raw.text)
    except ValueError:
        return "it contained no JSON object"
    try:
        request.output.schema.model_validate(data)
    except ValidationError as err:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "(root)" for e in err.errors()[:8])
        return f"these fields are missing or wrong: {fields}"
    return None


@lru_cache(maxsize=256)
def _function(tool: OutputTool, *, strict: bool) -> dict[str, Any]:
    """The function tool, built once per process (shared by every body: never changed)."""
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool_schema(tool.schema, strict=True),
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _read(completion: dict[str, Any], mode: Mode, request: ModelCall[Any]) -> RawAnswer:
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    text = message.get("content") or ""
    finish = choice.get("finish_reason")
    looped = completion.get("looped_at")  # read no further: it repeated itself (`_collect`)
    truncated = finish == "length" or looped is not None
    structured: object | None = None
    if mode == "tools":
        wanted = request.output.name if request.output is not None else None
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if function.get("name") == wanted:
                text = function.get("arguments") or ""
                break
    if mode in ("json_schema", "json_object", "tools") and not truncated:
        try:
            # strict=False: control characters inside strings are read as written. A
            # grammar-constrained server (llama.cpp's) lets a model put a raw newline in a
            # string (a `replacement` of code); the JSON is otherwise what was asked for.
            structured = json.loads(text, strict=False)
        except json.JSONDecodeError:
            structured = None
        if not isinstance(structured, dict):
            structured = None
    refusal = message.get("refusal")
    if finish == "content_filter":
        refusal = refusal or "the provider's content filter stopped the answer"
    return RawAnswer(
        text=text,
        structured=structured,
        usage=_usage(completion.get("usage") or {}),
        stop_reason="repetition" if looped is not None else finish,
        truncated=truncated,
        refusal=refusal,
        looped_at=looped,
    )


def _usage(usage: dict[str, Any]) -> Usage:
    details = usage.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0)
    prompt = int(usage.get("prompt_tokens") or 0)
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        cache_read_tokens=cached,
        reasoning_tokens=int(reasoning or 0),
    )


async def _collect(stream: Any, began: asyncio.Event) -> dict[str, Any]:
    """Rebuild a chat.completion object from its chunks (text, refusal and tool calls). An
    answer that repeats itself (bot/providers/repetition.py) is read no further: the caller
    closes the stream, which stops the server generating, and `looped_at` says where."""
    text: list[str] = []
    refusal: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] = {}
    watch = LoopWatch()
    async for chunk in stream:
        began.set()
        data = chunk.model_dump()
        if data.get("usage"):
            usage = data["usage"]
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            refusal.append(delta.get("refusal") or "")
            for part in delta.get("tool_calls") or []:
                call = calls.setdefault(int(part.get("index") or 0), {"name": "", "arguments": ""})
                function = part.get("function") or {}
                call["name"] += function.get("name") or ""
                call["arguments"] += function.get("arguments") or ""
                watch.feed(function.get("arguments") or "")
            watch.feed(text[-1])
            finish = choice.get("finish_reason") or finish
        if watch.looped_at is not None and finish is None:
            break
    message: dict[str, Any] = {"content": "".join(text), "refusal": "".join(refusal) or None}
    if calls:
        message["tool_calls"] = [{"function": calls[i]} for i in sorted(calls)]
    completion: dict[str, Any] = {
        "choices": [{"message": message, "finish_reason": finish}],
        "usage": usage,
    }
    if watch.looped_at is not None and finish is None:
        completion["looped_at"] = watch.looped_at
    return completion
