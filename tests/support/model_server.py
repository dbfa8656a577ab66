"""A fake Anthropic Messages + OpenAI Chat Completions (+ Ollama) server on a real port.

The real `anthropic` and `openai` SDKs talk to it through `base_url`, so every wire shape here
mirrors the provider's own (responses, SSE streams, error bodies, status codes and headers).
Tests script it per request with rules (answers, latency, faults) and read its call log;
`bench/` reuses it to measure wall time, so all waiting is `asyncio.sleep` on the server's own
event loop (in its own thread): a slow answer never blocks another request.

Token accounting is deterministic: `count_tokens(text) = ceil(len(text) / 4)`. Text blocks
count their text; any other block (tool definitions, tool_use, tool_result, a response_format)
counts its canonical JSON. `Reply(reasoning_tokens=N)` adds hidden reasoning: OpenAI counts it
in `completion_tokens` and reports it in `completion_tokens_details.reasoning_tokens`,
Anthropic in `output_tokens`, Ollama in `eval_count`.

    with run_fake_model_server() as models:
        models.on(lambda r: r.label == "seat-1/assess", reply=Reply(json={...}, latency_s=0.2))
        models.on(reply=Fault.rate_limited(retry_after=0.1), times=1)
        client = anthropic.AsyncAnthropic(base_url=models.anthropic_url, api_key="test")
        ...
        assert [c.status for c in models.calls] == [429, 200]

Server kinds. `models.behave_as(kind, model="*")` makes /v1/chat/completions for that model
("*": every model not named) behave like a server people really run, in its own status
codes and bodies (the SDK exception and message follow from them):

- "openai" (the default): OpenAI itself, strict-mode schema checks included.
- "llama-cpp-python": `response_format` json_schema is a 500 whose body is its pydantic
  validation error (`{"error": {"message": "1 validation error for
  CreateChatCompletionRequest...", "type": "internal_server_error", ...}}`); honours
  `{"type": "json_object", "schema": {...}}` (the content is JSON valid for the schema) and
  plain json_object. An unknown model name is served by its default model (no 404). A
  stream carries no usage chunk, whatever `stream_options` asks; it begins with its first
  token and is interrupted for a waiting request (see "A client that hangs up" below).
- "lm-studio": honours json_schema; json_object (with or without a schema) is a 400 with
  `{"error": "'response_format.type' must be 'json_schema'"}`, a plain string: openai 3.x
  then raises BadRequestError whose `.message` is only "Error code: 400" and whose `.body`
  is that string.
- "ollama": honours json_schema, json_object and tools; untagged names mean `:latest`.
- "no-tools": any non-empty `tools` is a 400 "registry.ollama.ai/library/<model>:<tag> does
  not support tools" (type api_error); json_schema/json_object is a 400 "response_format is
  not supported by this server" (param response_format); plain text works.
- "prose": accepts and ignores response_format and tools, and answers as message text: a
  sentence, the structured answer in a ```json fenced block, a sentence (`in_prose`).
- "llama-server" (llama.cpp's own C++ server): honours json_schema, json_object and tools;
  GET /props says its window (below).
- "vllm": honours json_schema, json_object and tools; GET /v1/models gives each model its
  `max_model_len` (below).

Kinds shape the OpenAI-compatible endpoint only; /v1/messages stays Anthropic's. Faults a
rule scripts keep each API's usual error shape on every kind.

Context windows: `models.context_window(n, model="*", trained=None)` gives a model a window
of `n` tokens on /v1/chat/completions (None: none). A request whose prompt is longer (the
fake's own count, `models.prompt_tokens(request)`, as its usage reports it: messages, tools
and response_format) is a 400 in the kind's shape: llama-cpp-python's own, from its
errors.py (`{"error": {"message":
"This model's maximum context length is N tokens. However, you requested P+M tokens (P in
the messages, M in the completion). Please reduce the length of the messages or completion.",
"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}`,
M the request's max_tokens, "None" when it has none; refused from P >= N on, as it does);
llama-server's (`{"error": {"code": 400, "message": "request (P tokens) exceeds the
available context size (N tokens), try increasing it", "type": "exceed_context_size_error",
"n_prompt_tokens": P, "n_ctx": N}}`); OpenAI's own on every other kind ("...maximum context
length is N tokens. However, your messages resulted in P tokens...", code
context_length_exceeded). A prompt that fits gets at most the window's rest as output,
silently (the answer is cut there: finish_reason "length"). What each server says of its
window: the "llama-server" kind answers GET /props with `{"default_generation_settings":
{"n_ctx": N, ...}, "total_slots": 1, ...}` (N: the window of a model of that kind, else
`LLAMA_SERVER_N_CTX`; a 404 when no model is of that kind); the "ollama" kind answers POST
/api/show `{"model": name}` with `parameters` holding `num_ctx N` when the model has a
window and `model_info["llama.context_length"]` = `trained` (default
`OLLAMA_TRAINED_CONTEXT`; a 404 `{"error": ...}` for a model of another kind or not
served); the "vllm" kind's /v1/models entries carry `max_model_len` (the window, else
`VLLM_MAX_MODEL_LEN`). Ollama's native /api/chat and /v1/messages have no window.

Ollama's native API, POST /api/chat (recorded with api "ollama"; rules, latency, faults and
serving limits apply; no key needed): `{"model", "messages", "format": <schema> | "json",
"stream" (default true), "options": {"num_predict", "temperature", ...}}` in; one JSON object
(`message`, `done`, `done_reason`, durations in ns, `prompt_eval_count`, `eval_count`) or
NDJSON lines (`application/x-ndjson`, the last `done: true` with the counts) out; errors are
`{"error": "<text>"}`. `num_predict` cuts the content (`done_reason: "length"`).

The answer's shape (`FakeRequest.output_name` / `output_schema`) comes from a native schema
(json_schema, a forced tool, Anthropic's output_config) or else is inferred as a model would:
the schema of a json_object response_format, Ollama's `format` schema, and name and schema from
our text mode's instructions, the last ones in the prompt (`bot.providers.schema.
schema_instructions`). A structured answer that travels as text is its JSON (in prose for
"prose"), so `CouncilScript.reply` runs a council on every kind.

Serving limits: `models.max_parallel(limit, model="*")` serves at most `limit` requests of a
model at once; the rest wait FIFO, and their scripted latency starts when their turn comes
(`RecordedCall.queued_s`). llama-cpp-python and Ollama (its /v1 kind and /api/chat) default
to one at a time, everything else is unlimited. A client that leaves while queued leaves the
queue (status 499). `peak_in_flight(model="*")`, `in_flight()` and `queued()` report it.

A client that hangs up while served (status 499), as llama-cpp-python's server (0.3.x) has it,
one model behind one lock: a non-streamed request is generated to its end all the same (no
disconnect check), so it keeps its slot, and the requests queued behind it wait, until its
scripted latency is over (`ended_at` is then); a streamed one ends at the hang-up and frees
its slot (`ended_at` is then). On the "llama-cpp-python" kind a stream's response (its
headers) begins only with its first token (`first_token_s`: its prompt evaluated), and a
stream is interrupted as its `interrupt_requests` (default on) does: after each chunk, if
another request waits for the model's slot, `data: [DONE]` ends it without a finish_reason
(`RecordedCall.interrupted`; status 200).

Model lists: `models.served_models` (None: lists none and serves any model). GET /v1/models
answers in Anthropic's shape when the request has an `anthropic-version` header, else in
OpenAI's; both need a key (401 in the API's own shape). /api/tags lists the same models. With
a list, a chat for any other model is a 404 in the kind's own shape. `model_list_calls`
counts the GETs of /v1/models (they are not in `calls`). `reset()` restores kinds, limits,
peaks and served models with everything else.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import hashlib
import json
import math
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, get_args

import jiter
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from tests.support.serving import ServerThread

# "ollama" is Ollama's native API (POST /api/chat); its /v1 endpoint is "openai".
Api: TypeAlias = Literal["anthropic", "openai", "ollama"]
# How the OpenAI-compatible endpoint (and the limits of a model) behave: see the module doc.
ServerKind: TypeAlias = Literal[
    "openai", "llama-cpp-python", "lm-studio", "ollama", "no-tools", "prose", "llama-server", "vllm"
]
SERVER_KINDS: tuple[ServerKind, ...] = get_args(ServerKind)
ErrorKind: TypeAlias = Literal[
    "rate_limit", "server", "overloaded", "invalid_request", "authentication", "not_found"
]
Json: TypeAlias = dict[str, Any]

LABEL_HEADER = "x-council-label"
OFF_TOPIC_TEXT = "I'd be happy to help! Could you share more details?"
DEFAULT_MIN_CACHE_TOKENS = 1024
# OpenAI caches automatically, in 128-token steps, from 1024 tokens on.
OPENAI_CACHE_STEP = 128
# Anthropic looks for hits at block boundaries up to about 20 blocks before a breakpoint.
ANTHROPIC_CACHE_LOOKBACK = 20
ANTHROPIC_MAX_BREAKPOINTS = 4
STREAM_DELTAS = 8
# JSON Schema keywords OpenAI's strict mode refuses with a 400 ("'<kw>' is not permitted").
STRICT_UNSUPPORTED_KEYWORDS = (
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
    "uniqueItems",
    "minLength",
    "maxLength",
)
STRICT_MAX_DEPTH = 10
_SCHEMA_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# What our provider layer's text mode appends (bot.providers.schema.schema_instructions).
_SCHEMA_INSTRUCTIONS = re.compile(
    r"Answer with one JSON object only, no prose, that validates against this JSON schema "
    r"\(named (?P<name>[^\n]+?)\):\n```json\n(?P<schema>[^\n]+)\n```"
)
# Kinds that serve one request at a time unless `max_parallel` says otherwise.
_SINGLE_SLOT_KINDS: frozenset[ServerKind] = frozenset({"llama-cpp-python", "ollama"})
# While a request waits for a serving slot, how often it checks that its client is still there.
QUEUE_POLL_S = 0.05


# A byte-pair tokenizer's pre-tokenizer (GPT-style): contractions, a word with its leading
# space, up to three digits, a run of punctuation, whitespace.
_PIECES = re.compile(
    r"'(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+"
)


def count_tokens(text: str) -> int:
    """`_count_tokens(text)`, remembered for long texts: every call of a deliberation sends
    the same context, and each request counts its prompt twice (the breakpoint check and
    the cache accounting), so counting it afresh was most of the fake's CPU."""
    if len(text) < _REMEMBER_CHARS:
        return _count_tokens(text)
    return _count_long(text)


# Texts at least this long are counted once per process (the last _REMEMBERED of them).
_REMEMBER_CHARS = 256
_REMEMBERED = 128


def _count_tokens(text: str) -> int:
    """The fake's tokenizer, shaped like the real ones rather than a flat ratio: a word of up
    to 7 letters (with its leading space) is one token and longer words one more per 6
    letters, up to three digits are one token, punctuation runs cost a token per 2.5
    characters, and a whitespace run (indentation) one token per 24 characters. On this
    repository's Python that is 3.8 characters a token, on Go 3.6, on TSX 4.7, on English
    Markdown 4.2-4.4: the spread real tokenizers show between code and prose."""
    tokens = 0
    for match in _PIECES.finditer(text):
        piece = match.group(0)
        word = piece.strip()
        if not word:
            tokens += 1 + len(piece) // 24
        elif word[0].isalpha() or word[0] == "'":
            tokens += 1 + max(len(word) - 7, 0) // 6
        elif word[0].isdigit():
            tokens += 1
        else:
            tokens += math.ceil(len(word) / 2.5)
    return tokens


_count_long = functools.lru_cache(maxsize=_REMEMBERED)(_count_tokens)


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _dict(value: object) -> Json:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _as_blocks(content: object) -> list[Json]:
    """Message/system content as a list of blocks: a plain string is one text block."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in _list(content) if isinstance(b, dict)]


def _content_text(content: object) -> str:
    """The readable text of a content value (string, text parts, tool results)."""
    parts: list[str] = []
    for block in _as_blocks(content):
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool_result":
            parts.append(_content_text(block.get("content")))
    return "\n".join(p for p in parts if p)


def _without_cache_control(block: Json) -> Json:
    return {k: v for k, v in block.items() if k != "cache_control"}


# --------------------------------------------------------------------------------------------
# What a rule sees, what it answers, what the log keeps
# --------------------------------------------------------------------------------------------


@dataclass
class FakeRequest:
    """One model request as a rule sees it."""

    api: Api
    model: str
    body: Json  # the JSON body as received
    headers: dict[str, str]
    stream: bool
    system_text: str
    messages_text: str
    tool_names: list[str]
    # The structured answer asked for: Anthropic forced tool_choice, OpenAI response_format
    # json_schema or forced function; else inferred (schema of a json_object response_format
    # or of Ollama's `format`; name and schema from our text mode's instructions in the last
    # user message).
    output_name: str | None
    output_schema: Json | None
    temperature: float | None
    max_tokens: int | None  # Ollama native: options.num_predict
    # True when the structured answer travels as a tool call (Anthropic forced tool, OpenAI
    # forced function); False when it is message text (OpenAI response_format, Anthropic
    # output_config.format, json_object, text mode, Ollama native, the "prose" kind).
    output_via_tool: bool = False
    # The kind serving an OpenAI-compatible or Ollama native request; None for Anthropic.
    server_kind: ServerKind | None = None
    # The most output the model's window leaves after the prompt (max_tokens included);
    # None: no window (see `FakeModelServer.context_window`).
    output_limit: int | None = None

    @property
    def text(self) -> str:
        return "\n\n".join(p for p in (self.system_text, self.messages_text) if p)

    @property
    def label(self) -> str | None:
        return self.headers.get(LABEL_HEADER)

    def prompt_text(self) -> str:
        """Every message's text, in order (what a model reads)."""
        return "\n\n".join(
            _content_text(m.get("content"))
            for m in _list(self.body.get("messages"))
            if isinstance(m, dict)
        )

    def last_user_text(self) -> str:
        for message in reversed(_list(self.body.get("messages"))):
            if isinstance(message, dict) and message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""


@dataclass(frozen=True)
class Reply:
    """A scripted answer. With neither `json` nor `text`, the default answer's content is used
    (with this reply's timing and stop reason)."""

    json: Json | None = None  # tool_use input (Anthropic) / message content JSON (OpenAI)
    text: str | None = None  # plain text answer (or off-topic prose, or partial JSON)
    latency_s: float = 0.0  # total time from arrival until the response is complete
    # When the response begins (message_start / first chunk; cache writes become readable).
    # Default: latency_s for a non-streamed call, 0 for a streamed one.
    first_token_s: float | None = None
    stop_reason: str | None = None  # Anthropic terms: "max_tokens" -> OpenAI "length"
    output_tokens: int | None = None  # default: len(output text) // 4 + 1
    tool: str | None = None  # call this tool with `json` even when the request forces none
    # Hidden reasoning: OpenAI counts it in completion_tokens (and reports it in
    # completion_tokens_details.reasoning_tokens), Anthropic in output_tokens, Ollama in
    # eval_count; it adds no text.
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class FaultReply:
    """A scripted failure that replaces the response."""

    kind: Literal["error", "hang", "malformed"]
    status: int = 500
    error: ErrorKind = "server"
    message: str = ""
    retry_after: float | None = None
    latency_s: float = 0.0


ReplySpec: TypeAlias = Reply | FaultReply | Callable[[FakeRequest], Reply | FaultReply]


class Fault:
    """Constructors of the faults a provider really produces."""

    @staticmethod
    def rate_limited(retry_after: float = 1.0, *, latency_s: float = 0.0) -> FaultReply:
        return FaultReply(
            "error",
            429,
            "rate_limit",
            "Rate limit exceeded: too many requests. Please retry after the indicated time.",
            retry_after=retry_after,
            latency_s=latency_s,
        )

    @staticmethod
    def server_error(status: int = 500, *, latency_s: float = 0.0) -> FaultReply:
        return FaultReply("error", status, "server", "Internal server error", latency_s=latency_s)

    @staticmethod
    def overloaded(*, latency_s: float = 0.0) -> FaultReply:
        return FaultReply("error", 529, "overloaded", "Overloaded", latency_s=latency_s)

    @staticmethod
    def hang() -> FaultReply:
        return FaultReply("hang", 0)

    @staticmethod
    def malformed_json(*, latency_s: float = 0.0) -> FaultReply:
        return FaultReply("malformed", 200, latency_s=latency_s)

    @staticmethod
    def off_topic(text: str = OFF_TOPIC_TEXT, *, latency_s: float = 0.0) -> Reply:
        return Reply(text=text, latency_s=latency_s)

    @staticmethod
    def truncated(partial: str | None = None, *, latency_s: float = 0.0) -> Reply:
        """Cut off by max_tokens. `partial`: the text sent; default: half the default answer."""
        return Reply(text=partial, stop_reason="max_tokens", latency_s=latency_s)

    @staticmethod
    def bad_request(message: str, *, latency_s: float = 0.0) -> FaultReply:
        return FaultReply("error", 400, "invalid_request", message, latency_s=latency_s)

    @staticmethod
    def not_found(message: str = "", *, latency_s: float = 0.0) -> FaultReply:
        """404 as for an unknown model; the default message names the requested model."""
        return FaultReply("error", 404, "not_found", message, latency_s=latency_s)

    @staticmethod
    def unauthorized(*, latency_s: float = 0.0) -> FaultReply:
        """401 as for a wrong key (a missing key is refused without any rule)."""
        return FaultReply("error", 401, "authentication", "", latency_s=latency_s)


@dataclass
class RecordedCall:
    api: str
    model: str
    request: FakeRequest
    status: int  # 0 while the call is still under way
    started_at: float  # time.monotonic() at arrival
    began_at: float | None  # when the response began (message_start / first chunk)
    ended_at: float  # NaN while the call is still under way
    usage: Json | None  # the usage object as sent
    attempt_of: int  # 1-based count of identical bodies seen so far
    label: str | None  # the request's x-council-label header
    reply: Reply | FaultReply | None = None  # what the rules chose (None: refused before)
    # Time spent waiting for a serving slot (see `max_parallel`); scripted latency starts after.
    queued_s: float = 0.0
    # A stream the server ended early, `[DONE]` without a finish_reason, because another
    # request was waiting for the model (llama-cpp-python's interrupt_requests).
    interrupted: bool = False

    @property
    def done(self) -> bool:
        return not math.isnan(self.ended_at)


@dataclass
class _Rule:
    match: Callable[[FakeRequest], bool] | None
    reply: ReplySpec
    remaining: int | None


# --------------------------------------------------------------------------------------------
# Default answers: a minimal valid instance of a JSON schema
# --------------------------------------------------------------------------------------------

_STRING_FORMATS = {
    "date-time": "1970-01-01T00:00:00Z",
    "date": "1970-01-01",
    "time": "00:00:00Z",
    "email": "a@example.com",
    "uri": "https://example.com",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


def minimal_instance(schema: object, root: object = None, depth: int = 0) -> Any:
    """A small value that validates against `schema` (the subset LLM tool schemas use)."""
    root = schema if root is None else root
    node = _dict(schema)
    if depth > 40:
        return None
    if "$ref" in node:
        return minimal_instance(_resolve_ref(root, node["$ref"]), root, depth + 1)
    if "const" in node:
        return node["const"]
    if _list(node.get("enum")):
        return node["enum"][0]
    for key in ("anyOf", "oneOf"):
        if _list(node.get(key)):
            return minimal_instance(_pick_variant(node[key]), root, depth + 1)
    if _list(node.get("allOf")):
        merged: Json = {}
        for part in node["allOf"]:
            merged.update(_dict(_resolve_ref(root, part["$ref"]) if "$ref" in part else part))
        return minimal_instance(merged, root, depth + 1)
    return _minimal_of_type(node, _schema_type(node), root, depth)


def _schema_type(node: Json) -> str | None:
    declared = node.get("type")
    if isinstance(declared, list):
        non_null = [t for t in declared if t != "null"]
        return non_null[0] if non_null else "null"
    if isinstance(declared, str):
        return declared
    if "properties" in node:
        return "object"
    if "items" in node or "prefixItems" in node:
        return "array"
    return None


def _minimal_of_type(node: Json, kind: str | None, root: object, depth: int) -> Any:
    if kind == "object":
        props = _dict(node.get("properties"))
        return {
            name: minimal_instance(props.get(name, {}), root, depth + 1)
            for name in _list(node.get("required"))
        }
    if kind == "array":
        return _minimal_array(node, root, depth)
    if kind == "string":
        if node.get("format") in _STRING_FORMATS:
            return _STRING_FORMATS[node["format"]]
        return "x" * int(node.get("minLength", 0))
    if kind in ("integer", "number"):
        return _minimal_number(node, integer=kind == "integer")
    if kind == "boolean":
        return False
    return None


def _minimal_array(node: Json, root: object, depth: int) -> list[Any]:
    prefix = [minimal_instance(s, root, depth + 1) for s in _list(node.get("prefixItems"))]
    count = max(int(node.get("minItems", 0)) - len(prefix), 0)
    items = node.get("items")
    rest = [minimal_instance(items, root, depth + 1) if items else None for _ in range(count)]
    return prefix + rest


def _minimal_number(node: Json, *, integer: bool) -> int | float:
    value: float = 0
    low, high = node.get("minimum"), node.get("maximum")
    xlow, xhigh = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if low is not None and value < low:
        value = low
    if xlow is not None and value <= xlow:
        value = math.floor(xlow) + 1 if integer else xlow + 0.5
    if high is not None and value > high:
        value = high
    if xhigh is not None and value >= xhigh:
        value = math.ceil(xhigh) - 1 if integer else xhigh - 0.5
    return math.ceil(value) if integer else value


def _pick_variant(variants: list[Any]) -> Any:
    # Prefer a real value over null so a default answer exercises the caller's parsing.
    for variant in variants:
        if _dict(variant).get("type") != "null":
            return variant
    return variants[0]


def _resolve_ref(root: object, ref: object) -> Any:
    node: Any = root
    if not isinstance(ref, str) or not ref.startswith("#"):
        return {}
    for part in ref.lstrip("#").strip("/").split("/"):
        if not part:
            continue
        node = _dict(node).get(part.replace("~1", "/").replace("~0", "~"), {})
    return node


def default_reply(request: FakeRequest) -> Reply:
    """The fallback: a minimal valid structured answer when one is forced, else "OK"."""
    if request.output_schema is not None:
        value = minimal_instance(request.output_schema)
        if isinstance(value, dict):
            return Reply(json=value)
        return Reply(text=json.dumps(value))
    response_format = _dict(request.body.get("response_format"))
    if request.api == "openai" and response_format.get("type") == "json_object":
        return Reply(json={})
    if request.api == "ollama" and request.body.get("format") == "json":
        return Reply(json={})
    return Reply(text="OK")


def _instructed_output(text: str) -> tuple[str | None, Json | None]:
    """Name and schema from our text mode's instructions (the last ones in `text`)."""
    found = list(_SCHEMA_INSTRUCTIONS.finditer(text))
    if not found:
        return None, None
    name, raw = found[-1].group("name"), found[-1].group("schema")
    try:
        schema = json.loads(raw)
    except ValueError:
        return name, None
    return name, schema if isinstance(schema, dict) else None


def _infer_output(request: FakeRequest) -> None:
    """Without a native schema, read the answer's shape the way a model would: a schema sent
    with json_object, Ollama's `format` (already in output_schema), the prompt's
    instructions."""
    if request.output_name is not None or request.output_via_tool:
        return
    name, instructed = _instructed_output(request.prompt_text())
    if request.output_schema is None:
        response_format = _dict(request.body.get("response_format"))
        sent = response_format.get("schema")
        if response_format.get("type") == "json_object" and isinstance(sent, dict):
            request.output_schema = sent
        else:
            request.output_schema = instructed
    request.output_name = name


# --------------------------------------------------------------------------------------------
# OpenAI strict-mode schema rules
# --------------------------------------------------------------------------------------------


def strict_schema_error(schema: object) -> str | None:
    """Why OpenAI's strict mode would refuse `schema`, in the API's words; None if accepted."""
    root = _dict(schema)
    if root.get("type") != "object" or "anyOf" in root:
        got = root.get("type", "anyOf" if "anyOf" in root else None)
        return f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'."
    return _strict_node_error(root, (), 1)


def _strict_node_error(node: object, path: tuple[str, ...], depth: int) -> str | None:
    if not isinstance(node, dict):
        return None
    if "$ref" in node:
        others = sorted(k for k in node if k != "$ref")
        return f"In context={path}, $ref cannot have keywords {others}." if others else None
    for keyword in STRICT_UNSUPPORTED_KEYWORDS:
        if keyword in node:
            return f"In context={path}, '{keyword}' is not permitted."
    declared = node.get("type")
    is_object = declared == "object" or (isinstance(declared, list) and "object" in declared)
    if is_object or "properties" in node:
        error = _strict_object_error(node, path, depth)
        if error:
            return error
    return _strict_children_error(node, path, depth)


def _strict_object_error(node: Json, path: tuple[str, ...], depth: int) -> str | None:
    if depth > STRICT_MAX_DEPTH:
        return f"In context={path}, schema exceeds the maximum nesting depth of {STRICT_MAX_DEPTH}."
    if node.get("additionalProperties") is not False:
        return (
            f"In context={path}, 'additionalProperties' is required to be supplied and to be false."
        )
    required = _list(node.get("required"))
    missing = [name for name in _dict(node.get("properties")) if name not in required]
    if missing:
        return (
            f"In context={path}, 'required' is required to be supplied and to be an array "
            f"including every key in properties. Missing '{missing[0]}'."
        )
    return None


def _strict_children_error(node: Json, path: tuple[str, ...], depth: int) -> str | None:
    children: list[tuple[tuple[str, ...], object, int]] = []
    for name, sub in _dict(node.get("properties")).items():
        children.append(((*path, "properties", name), sub, depth + 1))
    if isinstance(node.get("items"), dict):
        children.append(((*path, "items"), node["items"], depth + 1))
    for i, sub in enumerate(_list(node.get("anyOf"))):
        children.append(((*path, "anyOf", str(i)), sub, depth))
    for defs in ("$defs", "definitions"):
        for name, sub in _dict(node.get(defs)).items():
            children.append(((*path, defs, name), sub, 1))
    for child_path, sub, child_depth in children:
        error = _strict_node_error(sub, child_path, child_depth)
        if error:
            return error
    return None


# --------------------------------------------------------------------------------------------
# Prompt cache
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Piece:
    """One unit of the prompt in provider order: a tool, a system block, a message block."""

    section: Literal["tools", "system", "messages"]
    material: str  # canonical content: what the cache key is made of
    tokens: int
    breakpoint: bool = False


@dataclass
class _CacheEntry:
    tokens: int
    readable: bool = False  # set when the response that wrote it begins


@dataclass
class _CacheResult:
    total: int  # all input tokens
    read: int = 0
    write: int = 0
    # Entries this request writes; they become readable when its response begins.
    pending: list[_CacheEntry] = field(default_factory=list)


class _PromptCache:
    """Prefix cache shared by all calls of one server; guarded by the server's lock."""

    def __init__(self) -> None:
        self.entries: dict[str, _CacheEntry] = {}

    @staticmethod
    def prefixes(seed: str, pieces: list[_Piece], message_salt: str) -> list[tuple[str, int]]:
        """(key, cumulative tokens) at every piece boundary. Message-level keys include the
        salt (Anthropic: tool_choice), so changing it invalidates only message prefixes."""
        digest = hashlib.sha256(seed.encode())
        total, salted, out = 0, False, []
        for piece in pieces:
            if piece.section == "messages" and not salted:
                digest.update(b"\x00salt\x00" + message_salt.encode())
                salted = True
            digest.update(b"\x00" + piece.material.encode())
            total += piece.tokens
            out.append((digest.hexdigest(), total))
        return out

    def _readable(self, key: str) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry.readable

    def _write(self, key: str, tokens: int) -> _CacheEntry | None:
        entry = self.entries.setdefault(key, _CacheEntry(tokens))
        return None if entry.readable else entry

    def anthropic(self, seed: str, pieces: list[_Piece], salt: str, minimum: int) -> _CacheResult:
        prefixes = self.prefixes(seed, pieces, salt)
        result = _CacheResult(total=prefixes[-1][1] if prefixes else 0)
        breakpoints = [
            i for i, p in enumerate(pieces) if p.breakpoint and prefixes[i][1] >= minimum
        ]
        if not breakpoints:
            return result
        candidates = {
            j
            for bp in breakpoints
            for j in range(max(0, bp - ANTHROPIC_CACHE_LOOKBACK + 1), bp + 1)
            if prefixes[j][1] >= minimum
        }
        result.read = max(
            (prefixes[j][1] for j in candidates if self._readable(prefixes[j][0])), default=0
        )
        last_key, last_tokens = prefixes[breakpoints[-1]]
        if not self._readable(last_key):
            result.write = last_tokens - result.read
        for bp in breakpoints:
            entry = self._write(*prefixes[bp])
            if entry is not None:
                result.pending.append(entry)
        return result

    def openai(self, seed: str, pieces: list[_Piece], minimum: int) -> _CacheResult:
        prefixes = self.prefixes(seed, pieces, "")
        result = _CacheResult(total=prefixes[-1][1] if prefixes else 0)
        if result.total < minimum:
            return result
        hit = max((t for key, t in prefixes if t >= minimum and self._readable(key)), default=0)
        cached = hit // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP
        result.read = cached if cached >= minimum else 0
        for key, tokens in prefixes:
            if tokens >= minimum:
                entry = self._write(key, tokens)
                if entry is not None:
                    result.pending.append(entry)
        return result


# --------------------------------------------------------------------------------------------
# The answer, independent of the wire format
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Answer:
    text: str  # the text content, or the (possibly partial) JSON of the tool input
    tool: str | None  # the tool called with `text` as its input; None for a text answer
    tool_input: Json | None
    stop: str  # in Anthropic terms: end_turn / tool_use / max_tokens / ...
    output_tokens: int  # reasoning tokens included
    reasoning_tokens: int = 0
    elapsed_s: float = 0.0  # scripted time from service start until the response is complete


# Stop reasons are kept in Anthropic's terms; OpenAI's own names are accepted too.
_ANTHROPIC_STOP = {
    "length": "max_tokens",
    "stop": "end_turn",
    "tool_calls": "tool_use",
}


def _partial_object(text: str) -> Json:
    try:
        value = jiter.from_json(text.encode(), partial_mode="trailing-strings")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


PROSE_OPENING = "Here is my review of the change."
PROSE_CLOSING = "Let me know if you would like more detail on any point."


def in_prose(value: object) -> str:
    """How the "prose" kind answers: a sentence, the answer in a ```json block, a sentence."""
    return f"{PROSE_OPENING}\n\n```json\n{json.dumps(value, indent=2)}\n```\n\n{PROSE_CLOSING}"


def _compose(request: FakeRequest, reply: Reply, fallback: Reply) -> _Answer:
    value, text = reply.json, reply.text
    if value is None and text is None:
        value, text = fallback.json, fallback.text
    prose = request.server_kind == "prose"  # ignores tools, wraps a structured answer
    payload = text or ""
    if value is not None:
        payload = in_prose(value) if prose else json.dumps(value)
    truncated = reply.stop_reason in ("max_tokens", "length")
    if truncated and reply.text is None:
        payload = payload[: max(len(payload) // 2, 1)]
    tool = None if prose else reply.tool
    if tool is None and request.output_via_tool and (value is not None or truncated):
        tool = request.output_name
    stop = _ANTHROPIC_STOP.get(reply.stop_reason or "", reply.stop_reason)
    stop = stop or ("tool_use" if tool else "end_turn")
    output_tokens = reply.output_tokens
    if output_tokens is None:
        output_tokens = len(payload) // 4 + 1
    # Ollama's options.num_predict cuts the generation off; so does a window's end.
    limit = request.max_tokens if request.api == "ollama" else request.output_limit
    if tool is None and isinstance(limit, int) and 0 < limit < output_tokens:
        payload, stop, output_tokens, truncated = payload[: limit * 4], "max_tokens", limit, True
    tool_input: Json | None = None
    if tool is not None:
        tool_input = value if value is not None and not truncated else _partial_object(payload)
    first = reply.first_token_s or 0.0
    return _Answer(
        payload,
        tool,
        tool_input,
        stop,
        output_tokens + reply.reasoning_tokens,
        reply.reasoning_tokens,
        max(reply.latency_s, first),
    )


def _chunks(text: str, count: int = STREAM_DELTAS) -> list[str]:
    if not text:
        return []
    size = max(math.ceil(len(text) / count), 1)
    return [text[i : i + size] for i in range(0, len(text), size)]


@dataclass(frozen=True)
class _ApiError:
    status: int
    kind: ErrorKind
    message: str
    param: str | None = None
    retry_after: float | None = None
    body: Json | None = None  # a server's own error body, sent as is instead of the API's shape


@dataclass
class _StreamPlan:
    head: list[str]  # sent when the response begins
    deltas: list[str]  # spread until the response is complete
    tail: list[str]
    usage: Json | None  # the usage the client ends up with


class _Dialect(Protocol):
    api: Api
    stream_media: str

    def describe(self, body: Json, headers: dict[str, str]) -> FakeRequest: ...
    def check(self, body: Json, headers: dict[str, str]) -> _ApiError | None: ...
    def pieces(self, body: Json) -> list[_Piece]: ...
    def account(self, cache: _PromptCache, request: FakeRequest, minimum: int) -> _CacheResult: ...
    def error(self, err: _ApiError) -> Response: ...
    def render(self, request: FakeRequest, answer: _Answer, cache: _CacheResult) -> Json: ...
    def usage(self, answer: _Answer, cache: _CacheResult) -> Json: ...
    def stream(self, request: FakeRequest, answer: _Answer, cache: _CacheResult) -> _StreamPlan: ...
    def malformed(self, stream: bool) -> bytes: ...
    def default_message(self, kind: ErrorKind, model: str) -> str: ...


def _sse(data: Json | str, event: str | None = None) -> str:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"


# --------------------------------------------------------------------------------------------
# Anthropic Messages API
# --------------------------------------------------------------------------------------------

_ANTHROPIC_ERROR_TYPES = {
    "rate_limit": "rate_limit_error",
    "server": "api_error",
    "overloaded": "overloaded_error",
    "invalid_request": "invalid_request_error",
    "authentication": "authentication_error",
    "not_found": "not_found_error",
}


def _anthropic_output(body: Json) -> tuple[str | None, Json | None, bool]:
    """(output name, schema, via tool) of a forced tool or an output_config format."""
    choice = _dict(body.get("tool_choice"))
    if choice.get("type") == "tool":
        name = choice.get("name")
        for tool in _list(body.get("tools")):
            if _dict(tool).get("name") == name:
                return name, _dict(tool.get("input_schema")), True
        return name, None, True
    output_format = _dict(_dict(body.get("output_config")).get("format"))
    if output_format.get("type") == "json_schema":
        return None, _dict(output_format.get("schema")), False
    return None, None, False


def _anthropic_auth(headers: dict[str, str]) -> _ApiError | None:
    # The SDK sends `Authorization: Bearer <key>`; older clients send `x-api-key`.
    if not headers.get("x-api-key") and not _bearer_token(headers):
        return _ApiError(401, "authentication", "x-api-key header is required")
    return None


def _openai_auth(headers: dict[str, str]) -> _ApiError | None:
    if not _bearer_token(headers):
        return _ApiError(
            401,
            "authentication",
            "You didn't provide an API key. You need to provide your API key in an "
            "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        )
    return None


class _Anthropic:
    api: Api = "anthropic"
    stream_media = "text/event-stream"

    def describe(self, body: Json, headers: dict[str, str]) -> FakeRequest:
        name, schema, via_tool = _anthropic_output(body)
        messages = [m for m in _list(body.get("messages")) if isinstance(m, dict)]
        return FakeRequest(
            api="anthropic",
            model=str(body.get("model", "")),
            body=body,
            headers=headers,
            stream=bool(body.get("stream")),
            system_text=_content_text(body.get("system")),
            messages_text="\n\n".join(_content_text(m.get("content")) for m in messages),
            tool_names=[str(_dict(t).get("name")) for t in _list(body.get("tools"))],
            output_name=name,
            output_schema=schema,
            temperature=body.get("temperature"),
            max_tokens=body.get("max_tokens"),
            output_via_tool=via_tool,
        )

    def check(self, body: Json, headers: dict[str, str]) -> _ApiError | None:
        problem = _anthropic_auth(headers)
        if problem is not None:
            return problem
        for required in ("model", "max_tokens", "messages"):
            if required not in body:
                return _ApiError(400, "invalid_request", f"{required}: Field required")
        if not _list(body.get("messages")):
            return _ApiError(400, "invalid_request", "messages: at least one message is required")
        return self._check_tools(body) or self._check_breakpoints(body)

    @staticmethod
    def _check_tools(body: Json) -> _ApiError | None:
        tools = [_dict(t) for t in _list(body.get("tools"))]
        for i, tool in enumerate(tools):
            if "type" not in tool and _dict(tool.get("input_schema")).get("type") != "object":
                return _ApiError(
                    400, "invalid_request", f"tools.{i}.custom.input_schema.type: Field required"
                )
        choice = _dict(body.get("tool_choice"))
        if choice.get("type") == "tool" and choice.get("name") not in {
            t.get("name") for t in tools
        }:
            return _ApiError(
                400,
                "invalid_request",
                f"tool_choice: tool '{choice.get('name')}' was not found in the tools list",
            )
        return None

    def _check_breakpoints(self, body: Json) -> _ApiError | None:
        explicit = {k: v for k, v in body.items() if k != "cache_control"}
        found = sum(p.breakpoint for p in self.pieces(explicit)) + bool(body.get("cache_control"))
        if found > ANTHROPIC_MAX_BREAKPOINTS:
            return _ApiError(
                400,
                "invalid_request",
                f"A maximum of {ANTHROPIC_MAX_BREAKPOINTS} blocks with cache_control may be "
                f"provided. Found {found}.",
            )
        return None

    def pieces(self, body: Json) -> list[_Piece]:
        pieces = [
            _Piece(
                "tools",
                _canonical(_without_cache_control(tool)),
                count_tokens(_canonical(_without_cache_control(tool))),
                bool(tool.get("cache_control")),
            )
            for tool in map(_dict, _list(body.get("tools")))
        ]
        pieces += [_block_piece("system", "system", b) for b in _as_blocks(body.get("system"))]
        for message in map(_dict, _list(body.get("messages"))):
            role = str(message.get("role"))
            pieces += [
                _block_piece("messages", role, b) for b in _as_blocks(message.get("content"))
            ]
        # A top-level cache_control marks the last cacheable block.
        if body.get("cache_control") and pieces:
            last = pieces[-1]
            pieces[-1] = _Piece(last.section, last.material, last.tokens, True)
        return pieces

    def account(self, cache: _PromptCache, request: FakeRequest, minimum: int) -> _CacheResult:
        salt = _canonical(request.body.get("tool_choice"))
        return cache.anthropic(
            f"anthropic\x00{request.model}", self.pieces(request.body), salt, minimum
        )

    def error(self, err: _ApiError) -> Response:
        if err.body is not None:
            return JSONResponse(err.body, status_code=err.status, headers=_error_headers(err))
        body = {
            "type": "error",
            "error": {
                "type": _ANTHROPIC_ERROR_TYPES[err.kind],
                "message": err.message,
            },
            "request_id": _new_id("req_"),
        }
        return JSONResponse(body, status_code=err.status, headers=_error_headers(err))

    def default_message(self, kind: ErrorKind, model: str) -> str:
        return {"authentication": "invalid x-api-key", "not_found": f"model: {model}"}.get(
            kind, "Error"
        )

    def usage(self, answer: _Answer, cache: _CacheResult) -> Json:
        return {
            "input_tokens": cache.total - cache.read - cache.write,
            "output_tokens": answer.output_tokens,
            "cache_creation_input_tokens": cache.write,
            "cache_read_input_tokens": cache.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": cache.write,
                "ephemeral_1h_input_tokens": 0,
            },
            "service_tier": "standard",
        }

    @staticmethod
    def _stop(answer: _Answer) -> str:
        return "refusal" if answer.stop == "content_filter" else answer.stop

    def _message(self, request: FakeRequest, content: list[Json], stop: str | None) -> Json:
        return {
            "id": _new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": request.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
        }

    def render(self, request: FakeRequest, answer: _Answer, cache: _CacheResult) -> Json:
        block: Json = {"type": "text", "text": answer.text}
        if answer.tool is not None:
            block = {
                "type": "tool_use",
                "id": _new_id("toolu_"),
                "name": answer.tool,
                "input": answer.tool_input,
            }
        message = self._message(request, [block], self._stop(answer))
        message["usage"] = self.usage(answer, cache)
        return message

    def stream(self, request: FakeRequest, answer: _Answer, cache: _CacheResult) -> _StreamPlan:
        usage = self.usage(answer, cache)
        start = self._message(request, [], None)
        start["usage"] = {**usage, "output_tokens": 1}
        block: Json = {"type": "text", "text": ""}
        delta_type, delta_key = "text_delta", "text"
        if answer.tool is not None:
            block = {"type": "tool_use", "id": _new_id("toolu_"), "name": answer.tool, "input": {}}
            delta_type, delta_key = "input_json_delta", "partial_json"
        head = [
            _sse({"type": "message_start", "message": start}, "message_start"),
            _sse(
                {"type": "content_block_start", "index": 0, "content_block": block},
                "content_block_start",
            ),
            _sse({"type": "ping"}, "ping"),
        ]
        deltas = [
            _sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": delta_type, delta_key: piece},
                },
                "content_block_delta",
            )
            for piece in _chunks(answer.text)
        ]
        final_usage = {"output_tokens": answer.output_tokens}
        tail = [
            _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self._stop(answer), "stop_sequence": None},
                    "usage": final_usage,
                },
                "message_delta",
            ),
            _sse({"type": "message_stop"}, "message_stop"),
        ]
        return _StreamPlan(head, deltas, tail, usage)

    def malformed(self, stream: bool) -> bytes:
        if stream:
            return b'event: message_start\ndata: {"type": "message_start", "message": {"id": \n\n'
        return b'{"id": "msg_fake", "type": "message", "role": "assistant", "content": [{"ty'


def _block_piece(section: Literal["system", "messages"], role: str, block: Json) -> _Piece:
    bare = _without_cache_control(block)
    text = bare.get("text") if bare.get("type") == "text" else None
    tokens = count_tokens(text if isinstance(text, str) else _canonical(bare))
    return _Piece(section, _canonical([role, bare]), tokens, bool(block.get("cache_control")))


def _bearer_token(headers: dict[str, str]) -> str:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _error_headers(err: _ApiError) -> dict[str, str]:
    if err.retry_after is None:
        return {}
    return {"retry-after": format(err.retry_after, "g")}


# --------------------------------------------------------------------------------------------
# OpenAI Chat Completions API
# --------------------------------------------------------------------------------------------

_OPENAI_ERRORS: dict[str, tuple[str, str | None]] = {
    "rate_limit": ("requests", "rate_limit_exceeded"),
    "server": ("server_error", None),
    "overloaded": ("server_error", None),
    "invalid_request": ("invalid_request_error", None),
    "authentication": ("invalid_request_error", "invalid_api_key"),
    "not_found": ("invalid_request_error", "model_not_found"),
}
_OPENAI_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    # A structured-output refusal ends normally and carries `message.refusal`.
    "refusal": "stop",
}


def _openai_output(body: Json) -> tuple[str | None, Json | None, bool]:
    response_format = _dict(body.get("response_format"))
    if response_format.get("type") == "json_schema":
        spec = _dict(response_format.get("json_schema"))
        return spec.get("name"), _dict(spec.get("schema")), False
    choice = _dict(body.get("tool_choice"))
    if choice.get("type") == "function":
        name = _dict(choice.get("function")).get("name")
        for tool in map(_dict, _list(body.get("tools"))):
            function = _dict(tool.get("function"))
            if function.get("name") == name:
                return name, _dict(function.get("parameters")), True
        return name, None, True
    return None, None, False


class _OpenAI:
    api: Api = "openai"
    stream_media = "text/event-stream"

    def describe(self, body: Json, headers: dict[str, str]) -> FakeRequest:
        name, schema, via_tool = _openai_output(body)
        messages = [m for m in _list(body.get("messages")) if isinstance(m, dict)]
        system = [m for m in messages if m.get("role") in ("system", "developer")]
        others = [m for m in messages if m.get("role") not in ("system", "developer")]
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        return FakeRequest(
            api="openai",
            model=str(body.get("model", "")),
            body=body,
            headers=headers,
            stream=bool(body.get("stream")),
            system_text="\n\n".join(_content_text(m.get("content")) for m in system),
            messages_text="\n\n".join(_content_text(m.get("content")) for m in others),
            tool_names=[
                str(_dict(_dict(t).get("function")).get("name")) for t in _list(body.get("tools"))
            ],
            output_name=name,
            output_schema=schema,
            temperature=body.get("temperature"),
            max_tokens=max_tokens,
            output_via_tool=via_tool,
        )

    def check(self, body: Json, headers: dict[str, str]) -> _ApiError | None:
        return self.check_basic(body, headers) or self.check_strict(body)

    @staticmethod
    def check_basic(body: Json, headers: dict[str, str]) -> _ApiError | None:
        """What every OpenAI-compatible server checks: a key, a model, messages."""
        problem = _openai_auth(headers)
        if problem is not None:
            return problem
        for required in ("model", "messages"):
            if required not in body:
                return _ApiError(
                    400,
                    "invalid_request",
                    f"Missing required parameter: '{required}'.",
                    param=required,
                )
        return None

    def check_strict(self, body: Json) -> _ApiError | None:
        """OpenAI's own rules: schema names, strict mode, tool_choice naming a tool."""
        return self._check_response_format(body) or self._check_tools(body)

    @staticmethod
    def _check_response_format(body: Json) -> _ApiError | None:
        response_format = _dict(body.get("response_format"))
        if response_format.get("type") != "json_schema":
            return None
        spec = _dict(response_format.get("json_schema"))
        name = spec.get("name")
        if not isinstance(name, str) or not _SCHEMA_NAME.match(name):
            return _ApiError(
                400,
                "invalid_request",
                "Invalid 'response_format.json_schema.name': "
                "string does not match pattern '^[a-zA-Z0-9_-]+$'.",
                param="response_format.json_schema.name",
            )
        if spec.get("strict") is True:
            problem = strict_schema_error(spec.get("schema"))
            if problem:
                return _ApiError(
                    400,
                    "invalid_request",
                    f"Invalid schema for response_format '{name}': {problem}",
                    param="response_format",
                )
        return None

    @staticmethod
    def _check_tools(body: Json) -> _ApiError | None:
        names = set()
        for i, tool in enumerate(map(_dict, _list(body.get("tools")))):
            function = _dict(tool.get("function"))
            names.add(function.get("name"))
            if function.get("strict") is True:
                problem = strict_schema_error(function.get("parameters"))
                if problem:
                    return _ApiError(
                        400,
                        "invalid_request",
                        f"Invalid schema for function '{function.get('name')}': {problem}",
                        param=f"tools[{i}].function.parameters",
                    )
        choice = _dict(body.get("tool_choice"))
        wanted = _dict(choice.get("function")).get("name")
        if choice.get("type") == "function" and wanted not in names:
            return _ApiError(
                400,
                "invalid_request",
                f"Invalid value for 'tool_choice': function '{wanted}' not found in 'tools'.",
                param="tool_choice",
            )
        return None

    def pieces(self, body: Json) -> list[_Piece]:
        pieces = [
            _Piece("tools", _canonical(tool), count_tokens(_canonical(tool)))
            for tool in _list(body.get("tools"))
        ]
        if "response_format" in body:
            material = _canonical(body["response_format"])
            pieces.append(_Piece("tools", material, count_tokens(material)))
        for message in map(_dict, _list(body.get("messages"))):
            tokens = count_tokens(_content_text(message.get("content")))
            if message.get("tool_calls"):
                tokens += count_tokens(_canonical(message["tool_calls"]))
            pieces.append(_Piece("messages", _canonical(message), tokens))
        return pieces

    def account(self, cache: _PromptCache, request: FakeRequest, minimum: int) -> _CacheResult:
        return cache.openai(f"openai\x00{request.model}", self.pieces(request.body), minimum)

    def error(self, err: _ApiError) -> Response:
        # OpenAI has no 529; an overloaded engine answers 503.
        status = 503 if err.status == 529 else err.status
        if err.body is not None:
            return JSONResponse(err.body, status_code=status, headers=_error_headers(err))
        error_type, code = _OPENAI_ERRORS[err.kind]
        body = {
            "error": {"message": err.message, "type": error_type, "param": err.param, "code": code}
        }
        return JSONResponse(body, status_code=status, headers=_error_headers(err))

    def default_message(self, kind: ErrorKind, model: str) -> str:
        if kind == "not_found":
            return f"The model `{model}` does not exist or you do not have access to it."
        return "Incorrect API key provided." if kind == "authentication" else "Error"

    def usage(self, answer: _Answer, cache: _CacheResult) -> Json:
        return {
            "prompt_tokens": cache.total,
            "completion_tokens": answer.output_tokens,
            "total_tokens": cache.total + answer.output_tokens,
            "prompt_tokens_details": {"cached_tokens": cache.read, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": answer.reasoning_tokens,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    @staticmethod
    def _finish(request: FakeRequest, answer: _Answer) -> str:
        if answer.stop == "tool_use" and _dict(request.body.get("tool_choice")).get("type"):
            # A named tool_choice ends with "stop" on the real API, not "tool_calls".
            return "stop"
        return _OPENAI_FINISH.get(answer.stop, answer.stop)

    @staticmethod
    def _envelope(request: FakeRequest, obj: str, completion_id: str) -> Json:
        return {
            "id": completion_id,
            "object": obj,
            "created": int(time.time()),
            "model": request.model,
            "system_fingerprint": "fp_fake",
            "service_tier": "default",
        }

    def render(self, request: FakeRequest, answer: _Answer, cache: _CacheResult) -> Json:
        message: Json = {
            "role": "assistant",
            "content": answer.text,
            "refusal": None,
            "annotations": [],
        }
        if answer.stop == "refusal" and answer.tool is None:
            message.update(content=None, refusal=answer.text)
        if answer.tool is not None:
            message["content"] = None
            message["tool_calls"] = [
                {
                    "id": _new_id("call_"),
                    "type": "function",
                    "function": {"name": answer.tool, "arguments": answer.text},
                }
            ]
        body = self._envelope(request, "chat.completion", _new_id("chatcmpl-"))
        body["choices"] = [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": self._finish(request, answer),
            }
        ]
        body["usage"] = self.usage(answer, cache)
        return body

    def stream(self, request: FakeRequest, answer: _Answer, cache: _CacheResult) -> _StreamPlan:
        completion_id = _new_id("chatcmpl-")
        with_usage = bool(_dict(request.body.get("stream_options")).get("include_usage"))

        def chunk(delta: Json, finish: str | None = None) -> str:
            body = self._envelope(request, "chat.completion.chunk", completion_id)
            body["choices"] = [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            ]
            if with_usage:
                body["usage"] = None
            return _sse(body)

        if answer.tool is None:
            first: Json = {"role": "assistant", "content": "", "refusal": None}
            deltas = [chunk({"content": piece}) for piece in _chunks(answer.text)]
        else:
            call = {
                "index": 0,
                "id": _new_id("call_"),
                "type": "function",
                "function": {"name": answer.tool, "arguments": ""},
            }
            first = {"role": "assistant", "content": None, "refusal": None, "tool_calls": [call]}
            deltas = [
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
                for piece in _chunks(answer.text)
            ]
        tail = [chunk({}, self._finish(request, answer))]
        usage = self.usage(answer, cache) if with_usage else None
        if usage is not None:
            last = self._envelope(request, "chat.completion.chunk", completion_id)
            tail.append(_sse({**last, "choices": [], "usage": usage}))
        tail.append(_sse("[DONE]"))
        return _StreamPlan([chunk(first)], deltas, tail, usage)

    def malformed(self, stream: bool) -> bytes:
        if stream:
            return b'data: {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choi\n\n'
        return b'{"id": "chatcmpl-fake", "object": "chat.completion", "choices": [{"ind'


# --------------------------------------------------------------------------------------------
# Server kinds: what the OpenAI-compatible servers people run refuse, in their own words
# --------------------------------------------------------------------------------------------


def _ollama_name(model: str) -> str:
    """Ollama's full model name: an untagged name means `:latest`."""
    return model if ":" in model else model + ":latest"


def _openai_error_body(message: str, kind: str, param: str | None = None) -> Json:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def _kind_refusal(kind: ServerKind, body: Json) -> _ApiError | None:
    """Why a server of `kind` refuses this /v1/chat/completions body; None if it serves it.
    ("openai" follows OpenAI's own rules, checked by the dialect.)"""
    response_format = _dict(body.get("response_format"))
    format_type = response_format.get("type")
    if kind == "llama-cpp-python" and format_type not in (None, "text", "json_object"):
        # Its pydantic request model only knows text and json_object; every exception in its
        # handler becomes a 500.
        message = (
            "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
            f"  Input should be 'text' or 'json_object' [type=literal_error, "
            f"input_value={format_type!r}, input_type={type(format_type).__name__}]"
        )
        return _ApiError(
            500,
            "server",
            message,
            body=_openai_error_body(message, "internal_server_error"),
        )
    if kind == "lm-studio" and format_type not in (None, "text", "json_schema"):
        message = "'response_format.type' must be 'json_schema'"
        # LM Studio's `error` is a plain string, not an object.
        return _ApiError(400, "invalid_request", message, body={"error": message})
    if kind == "no-tools":
        if _list(body.get("tools")):
            model = _ollama_name(str(body.get("model", "")))
            message = f"registry.ollama.ai/library/{model} does not support tools"
            return _ApiError(
                400, "invalid_request", message, body=_openai_error_body(message, "api_error")
            )
        if format_type in ("json_schema", "json_object"):
            message = "response_format is not supported by this server"
            return _ApiError(
                400,
                "invalid_request",
                message,
                param="response_format",
                body=_openai_error_body(message, "invalid_request_error", "response_format"),
            )
    return None


def _not_served(
    api: Api, kind: ServerKind | None, model: str, served: list[str]
) -> _ApiError | None:
    """The 404 for a model the server does not have, in the server's own shape; None when it
    has the model (or, like llama-cpp-python, serves its default model for any name)."""
    if api == "ollama" or kind in ("ollama", "no-tools"):
        if _ollama_name(model) in {_ollama_name(m) for m in served}:
            return None
        message = f'model "{model}" not found, try pulling it first'
        if api == "ollama":
            return _ApiError(404, "not_found", message, body={"error": message})
        return _ApiError(404, "not_found", message, body=_openai_error_body(message, "api_error"))
    if model in served or kind == "llama-cpp-python":
        return None
    if api == "anthropic":
        return _ApiError(404, "not_found", f"model: {model}")
    if kind == "lm-studio":
        message = (
            f'Model "{model}" not found. Please specify a valid model.\n\nYour models:\n\n'
            + "\n".join(served)
        )
        body = {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": "model",
                "code": "model_not_found",
            }
        }
        return _ApiError(404, "not_found", message, param="model", body=body)
    return _ApiError(
        404, "not_found", f"The model `{model}` does not exist or you do not have access to it."
    )


# Who /v1/models says owns a model, as each server fills it in.
_OWNED_BY: dict[ServerKind, str] = {
    "openai": "system",
    "llama-cpp-python": "me",
    "lm-studio": "organization_owner",
    "ollama": "library",
    "no-tools": "library",
    "prose": "organization_owner",
    "llama-server": "llamacpp",
    "vllm": "vllm",
}
MODELS_CREATED = 1735689600  # 2025-01-01T00:00:00Z, the date every listed model carries
MODELS_CREATED_AT = "2025-01-01T00:00:00Z"


def _display_name(model: str) -> str:
    """`claude-sonnet-4-5-20250929` -> `Claude Sonnet 4.5`, as Anthropic lists its models."""
    words = [w for w in model.split("-") if not (w.isdigit() and len(w) == 8)]
    numbers: list[str] = []
    while words and words[-1].isdigit():
        numbers.insert(0, words.pop())
    named = " ".join(w.capitalize() for w in words)
    return f"{named} {'.'.join(numbers)}".strip()


def _anthropic_model_list(models: list[str]) -> Json:
    data = [
        {
            "type": "model",
            "id": name,
            "display_name": _display_name(name),
            "created_at": MODELS_CREATED_AT,
        }
        for name in models
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }


def _openai_model_list(
    models: list[str],
    kind_of: Callable[[str], ServerKind],
    window_of: Callable[[str], int | None] = lambda _: None,
) -> Json:
    data: list[Json] = []
    for name in models:
        entry: Json = {
            "id": name,
            "object": "model",
            "created": MODELS_CREATED,
            "owned_by": _OWNED_BY[kind_of(name)],
        }
        if kind_of(name) == "vllm":
            length = window_of(name) or VLLM_MAX_MODEL_LEN
            entry.update(root=name, parent=None, max_model_len=length)
        data.append(entry)
    return {"object": "list", "data": data}


# --------------------------------------------------------------------------------------------
# Context windows (see `FakeModelServer.context_window`)
# --------------------------------------------------------------------------------------------

# What the servers say of a window where the test set none.
LLAMA_SERVER_N_CTX = 4096
VLLM_MAX_MODEL_LEN = 32_768
OLLAMA_TRAINED_CONTEXT = 131_072


def _too_long(kind: ServerKind | None, window: int, prompt: int, max_tokens: object) -> _ApiError:
    """The refusal of a prompt of `prompt` tokens by a server of `kind` with `window`."""
    if kind == "llama-cpp-python":
        asked = prompt + (max_tokens if isinstance(max_tokens, int) else 0)
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested "
            f"{asked} tokens ({prompt} in the messages, {max_tokens} in the completion). "
            "Please reduce the length of the messages or completion."
        )
        body = _openai_error_body(message, "invalid_request_error", "messages")
        body["error"]["code"] = "context_length_exceeded"
        return _ApiError(400, "invalid_request", message, body=body)
    if kind == "llama-server":
        message = (
            f"request ({prompt} tokens) exceeds the available context size ({window} tokens), "
            "try increasing it"
        )
        error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
        body = {"error": {**error, "n_prompt_tokens": prompt, "n_ctx": window}}
        return _ApiError(400, "invalid_request", message, body=body)
    message = (
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {prompt} tokens. Please reduce the length of the messages."
    )
    body = _openai_error_body(message, "invalid_request_error", "messages")
    body["error"]["code"] = "context_length_exceeded"
    return _ApiError(400, "invalid_request", message, body=body)


def _llama_server_props(n_ctx: int) -> Json:
    """GET /props as llama-server answers it (tools/server/README.md), trimmed."""
    return {
        "default_generation_settings": {
            "id": 0,
            "id_task": -1,
            "n_ctx": n_ctx,
            "speculative": False,
            "is_processing": False,
            "params": {"n_predict": -1, "temperature": 0.8, "top_k": 40, "top_p": 0.95},
        },
        "total_slots": 1,
        "model_path": "models/model.gguf",
        "chat_template": "{{ messages }}",
        "build_info": "b0-fake",
    }


def _ollama_show(name: str, window: int | None, trained: int) -> Json:
    """POST /api/show as Ollama answers it for a llama-architecture model, trimmed."""
    parameters = 'stop                           "<|eot_id|>"'
    if window is not None:
        parameters = f"num_ctx                        {window}\n{parameters}"
    return {
        "modelfile": f"FROM {_ollama_name(name)}\n",
        "parameters": parameters,
        "template": "{{ .Prompt }}",
        "details": {"format": "gguf", "family": "llama", "parameter_size": "8.0B"},
        "model_info": {
            "general.architecture": "llama",
            "general.parameter_count": 8_030_261_248,
            "llama.context_length": trained,
            "llama.embedding_length": 4096,
        },
        "capabilities": ["completion", "tools"],
        "modified_at": MODELS_CREATED_AT,
    }


# --------------------------------------------------------------------------------------------
# Ollama's native chat API (POST /api/chat)
# --------------------------------------------------------------------------------------------


def _rfc3339_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _Ollama:
    """`{"model", "messages", "format", "stream" (default true), "options"}` in; one JSON
    object or NDJSON lines out; errors are `{"error": "<text>"}`. No key is needed."""

    api: Api = "ollama"
    stream_media = "application/x-ndjson"

    def describe(self, body: Json, headers: dict[str, str]) -> FakeRequest:
        messages = [m for m in _list(body.get("messages")) if isinstance(m, dict)]
        system = [m for m in messages if m.get("role") == "system"]
        others = [m for m in messages if m.get("role") != "system"]
        options = _dict(body.get("options"))
        output_format = body.get("format")
        return FakeRequest(
            api="ollama",
            model=str(body.get("model", "")),
            body=body,
            headers=headers,
            stream=body.get("stream", True) is not False,  # absent or null: streamed
            system_text="\n\n".join(_content_text(m.get("content")) for m in system),
            messages_text="\n\n".join(_content_text(m.get("content")) for m in others),
            tool_names=[
                str(_dict(_dict(t).get("function")).get("name")) for t in _list(body.get("tools"))
            ],
            output_name=None,
            output_schema=output_format if isinstance(output_format, dict) else None,
            temperature=options.get("temperature"),
            max_tokens=options.get("num_predict"),
            server_kind="ollama",
        )

    def check(self, body: Json, headers: dict[str, str]) -> _ApiError | None:
        if not body.get("model"):
            return _ApiError(400, "invalid_request", "model is required")
        return None

    def pieces(self, body: Json) -> list[_Piece]:
        pieces = [
            _Piece("tools", _canonical(tool), count_tokens(_canonical(tool)))
            for tool in _list(body.get("tools"))
        ]
        if body.get("format") is not None:
            material = _canonical(body["format"])
            pieces.append(_Piece("tools", material, count_tokens(material)))
        for message in map(_dict, _list(body.get("messages"))):
            tokens = count_tokens(_content_text(message.get("content")))
            pieces.append(_Piece("messages", _canonical(message), tokens))
        return pieces

    def account(self, cache: _PromptCache, request: FakeRequest, minimum: int) -> _CacheResult:
        # Ollama reuses its KV cache but reports nothing about it.
        return _CacheResult(total=sum(p.tokens for p in self.pieces(request.body)))

    def error(self, err: _ApiError) -> Response:
        status = 503 if err.status == 529 else err.status
        body = err.body if err.body is not None else {"error": err.message}
        return JSONResponse(body, status_code=status, headers=_error_headers(err))

    def default_message(self, kind: ErrorKind, model: str) -> str:
        return {
            "not_found": f'model "{model}" not found, try pulling it first',
            "authentication": "unauthorized",
            "overloaded": "server busy, please try again.  maximum pending requests exceeded",
        }.get(kind, "Error")

    def usage(self, answer: _Answer, cache: _CacheResult) -> Json:
        total = max(int(answer.elapsed_s * 1e9), 1_000_000)
        load, prompt = total // 100, total // 5
        return {
            "total_duration": total,
            "load_duration": load,
            "prompt_eval_count": cache.total,
            "prompt_eval_duration": prompt,
            "eval_count": answer.output_tokens,
            "eval_duration": total - load - prompt,
        }

    @staticmethod
    def _done_reason(answer: _Answer) -> str:
        return "length" if answer.stop == "max_tokens" else "stop"

    @staticmethod
    def _message(answer: _Answer, content: str) -> Json:
        message: Json = {"role": "assistant", "content": content}
        if answer.tool is not None:
            message["tool_calls"] = [
                {"function": {"name": answer.tool, "arguments": answer.tool_input or {}}}
            ]
        return message

    def render(self, request: FakeRequest, answer: _Answer, cache: _CacheResult) -> Json:
        content = "" if answer.tool is not None else answer.text
        return {
            "model": request.model,
            "created_at": _rfc3339_now(),
            "message": self._message(answer, content),
            "done": True,
            "done_reason": self._done_reason(answer),
            **self.usage(answer, cache),
        }

    def stream(self, request: FakeRequest, answer: _Answer, cache: _CacheResult) -> _StreamPlan:
        def line(value: Json) -> str:
            return json.dumps(value) + "\n"

        def piece(message: Json) -> str:
            return line(
                {
                    "model": request.model,
                    "created_at": _rfc3339_now(),
                    "message": message,
                    "done": False,
                }
            )

        if answer.tool is not None:
            lines = [piece(self._message(answer, ""))]
        else:
            parts = _chunks(answer.text) or [""]
            lines = [piece({"role": "assistant", "content": part}) for part in parts]
        usage = self.usage(answer, cache)
        last = {
            "model": request.model,
            "created_at": _rfc3339_now(),
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": self._done_reason(answer),
            **usage,
        }
        return _StreamPlan(lines[:1], lines[1:], [line(last)], usage)

    def malformed(self, stream: bool) -> bytes:
        if stream:
            return b'{"model": "fake", "created_at": "2025-01-01T00:00:00Z", "message": {"rol\n'
        return b'{"model": "fake", "created_at": "2025-01-01T00:00:00Z", "message": {"ro'


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


async def _sleep_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > 0:
        await asyncio.sleep(delay)


class _Gate:
    """One model's serving slots: at most its limit served at once, the rest wait FIFO."""

    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.kind: ServerKind | None = None  # of the latest request, for its default limit
        self.waiting: deque[asyncio.Future[None]] = deque()


class _Admission:
    """Every model's serving slots. Used on the server's loop only; `reset` replaces it."""

    def __init__(self) -> None:
        self.gates: dict[str, _Gate] = {}
        self.active = 0
        self.peak = 0

    def gate(self, model: str) -> _Gate:
        return self.gates.setdefault(model, _Gate())

    @staticmethod
    def has_room(gate: _Gate, limit: int | None) -> bool:
        return limit is None or gate.active < limit

    def take(self, gate: _Gate) -> None:
        gate.active += 1
        gate.peak = max(gate.peak, gate.active)
        self.active += 1
        self.peak = max(self.peak, self.active)

    def admit_next(self, gate: _Gate, limit: int | None) -> None:
        while gate.waiting and self.has_room(gate, limit):
            waiter = gate.waiting.popleft()
            if not waiter.done():
                self.take(gate)
                waiter.set_result(None)

    def release(self, gate: _Gate, limit: int | None) -> None:
        gate.active -= 1
        self.active -= 1
        self.admit_next(gate, limit)


class _Slot:
    """A request's place among those being served; `release` is safe to call twice."""

    def __init__(self, release: Callable[[], None]) -> None:
        self._release: Callable[[], None] | None = release

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


class _GuardedStream(StreamingResponse):
    """A streamed response that runs `on_close` however it ends (done, client gone, error)."""

    on_close: Callable[[], None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self.on_close is not None:
                self.on_close()


class FakeModelServer:
    """The scriptable state behind the HTTP app; run it with `run_fake_model_server()`."""

    def __init__(self) -> None:
        self.url = ""
        self.calls: list[RecordedCall] = []
        self.min_cache_tokens: dict[str, int] = {"*": DEFAULT_MIN_CACHE_TOKENS}
        # Server kind by model name ("*": every other model); see `behave_as`.
        self.kinds: dict[str, ServerKind] = {}
        # Serving limit by model name ("*": every other model; None: unlimited); see
        # `max_parallel`.
        self.parallel_limits: dict[str, int | None] = {}
        # The models the server has: None lists none and serves any; a list is what
        # GET /v1/models and /api/tags list, and any other model is a 404.
        self.served_models: list[str] | None = None
        self.model_list_calls = 0  # GET /v1/models requests, either shape (not in `calls`)
        # False: GET /v1/models is a 404, as at an Azure deployment URL or a bare proxy.
        self.lists_models = True
        self._rules: list[_Rule] = []
        self._default: Callable[[FakeRequest], Reply] = default_reply
        self._cache = _PromptCache()
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._openai = _OpenAI()
        self._dialects: dict[Api, _Dialect] = {
            "anthropic": _Anthropic(),
            "openai": self._openai,
            "ollama": _Ollama(),
        }
        self._admission = _Admission()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._release: asyncio.Event | None = None  # set to free every hanging request
        # Served by GET /api/tags (when `served_models` is None), so the fake also passes
        # for a local Ollama.
        self.ollama_models: list[str] = []
        # Context windows and the models' own (trained) lengths by model name ("*": every
        # other model); see `context_window`.
        self.windows: dict[str, int | None] = {}
        self.trained: dict[str, int] = {}
        self.app = self._build_app()

    # -- scripting ---------------------------------------------------------------------------

    @property
    def anthropic_url(self) -> str:
        return self.url

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def on(
        self,
        match: Callable[[FakeRequest], bool] | None = None,
        *,
        reply: ReplySpec,
        times: int | None = None,
    ) -> None:
        """Add a rule. Rules are tried in the order added; one with `times` is used up after
        that many matches; a request no rule matches gets the default reply."""
        with self._lock:
            self._rules.append(_Rule(match, reply, times))

    def default(self, reply_factory: Callable[[FakeRequest], Reply]) -> None:
        with self._lock:
            self._default = reply_factory

    def behave_as(self, kind: ServerKind, model: str = "*") -> None:
        """Serve /v1/chat/completions for `model` ("*": every model not named) as a server
        of `kind` does; see the module doc."""
        if kind not in SERVER_KINDS:
            raise ValueError(f"unknown server kind {kind!r}; one of {', '.join(SERVER_KINDS)}")
        with self._lock:
            self.kinds[model] = kind

    def context_window(
        self, n: int | None, model: str = "*", *, trained: int | None = None
    ) -> None:
        """Give `model` ("*": every model not named) a window of `n` tokens (None: none),
        and, for Ollama's /api/show, its own context length `trained`; see the module doc."""
        if n is not None and n < 1:
            raise ValueError("a window is at least 1 token (None: no window)")
        with self._lock:
            self.windows[model] = n
            if trained is not None:
                self.trained[model] = trained

    def window_of(self, model: str) -> int | None:
        """The window `model` has (None: none)."""
        return self.windows.get(model, self.windows.get("*"))

    def prompt_tokens(self, request: FakeRequest) -> int:
        """The prompt of an OpenAI-compatible request as the fake counts it against a window
        (and in its usage): its messages, tools and response_format."""
        return sum(piece.tokens for piece in self._openai.pieces(request.body))

    def kind_of(self, model: str) -> ServerKind:
        """The kind serving `model` on the OpenAI-compatible endpoint."""
        return self.kinds.get(model, self.kinds.get("*", "openai"))

    def max_parallel(self, limit: int | None, model: str = "*") -> None:
        """Serve at most `limit` requests for `model` at once (None: no limit; "*": the
        default for every model not named); the others wait, first in first out, before
        their scripted latency starts. Without a setting, llama-cpp-python and Ollama
        (its /v1 kind and /api/chat) serve one at a time, everything else is unlimited."""
        if limit is not None and limit < 1:
            raise ValueError("a serving limit is at least 1 (None: unlimited)")
        with self._lock:
            self.parallel_limits[model] = limit
        self._on_loop(self._admit_waiting)  # a higher limit lets queued requests in

    def peak_in_flight(self, model: str = "*") -> int:
        """The most requests ever served at once (queued ones excluded) for `model`, or
        across all models for "*", since the last reset."""
        admission = self._admission
        if model == "*":
            return admission.peak
        gate = admission.gates.get(model)
        return gate.peak if gate is not None else 0

    def in_flight(self, model: str = "*") -> int:
        """Requests being served now (holding a slot)."""
        admission = self._admission
        if model == "*":
            return admission.active
        gate = admission.gates.get(model)
        return gate.active if gate is not None else 0

    def queued(self, model: str = "*") -> int:
        """Requests waiting for a slot now."""
        gates = list(self._admission.gates.items())
        return sum(len(g.waiting) for name, g in gates if model in ("*", name))

    def reset(self) -> None:
        """Forget rules, calls, retries and the cache; restore the default reply, cache
        minimums, kinds, serving limits (and peaks) and served models; release hanging
        requests."""
        with self._lock:
            self._rules.clear()
            self.calls.clear()
            self._attempts.clear()
            self._cache = _PromptCache()
            self._default = default_reply
            self.min_cache_tokens = {"*": DEFAULT_MIN_CACHE_TOKENS}
            self.kinds.clear()
            self.parallel_limits.clear()
            self.served_models = None
            self.model_list_calls = 0
            self.lists_models = True
            self._admission = _Admission()
            self.ollama_models = []
            self.windows.clear()
            self.trained.clear()
        self._release_hangs()

    @property
    def list_calls(self) -> int:
        """Alias of `model_list_calls`."""
        return self.model_list_calls

    def count_tokens(self, text: str) -> int:
        return count_tokens(text)

    def calls_labelled(self, label: str) -> list[RecordedCall]:
        return [c for c in list(self.calls) if c.label == label]

    def _min_cache(self, model: str) -> int:
        return self.min_cache_tokens.get(model, self.min_cache_tokens.get("*", 1024))

    def _limit(self, model: str, kind: ServerKind | None) -> int | None:
        limits = self.parallel_limits
        for key in (model, "*"):
            if key in limits:
                return limits[key]
        return 1 if kind in _SINGLE_SLOT_KINDS else None

    def _choose(self, request: FakeRequest) -> Reply | FaultReply:
        with self._lock:
            spec: ReplySpec | None = None
            for rule in self._rules:
                if rule.remaining == 0 or (rule.match is not None and not rule.match(request)):
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                spec = rule.reply
                break
            fallback = self._default
        if spec is None:
            return fallback(request)
        return spec(request) if callable(spec) else spec

    # -- lifecycle ---------------------------------------------------------------------------

    def _on_loop(self, callback: Callable[[], None]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(callback)

    def _release_hangs(self) -> None:
        def release() -> None:
            if self._release is not None:
                self._release.set()
            self._release = asyncio.Event()

        self._on_loop(release)

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._release = asyncio.Event()

    # -- HTTP --------------------------------------------------------------------------------

    def _build_app(self) -> FastAPI:
        app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)

        @app.post("/v1/messages")
        async def messages(request: Request) -> Response:
            return await self._handle("anthropic", request)

        @app.post("/v1/messages/count_tokens")
        async def count(request: Request) -> Response:
            body = _dict(json.loads(await request.body() or b"{}"))
            pieces = self._dialects["anthropic"].pieces(body)
            return JSONResponse({"input_tokens": sum(p.tokens for p in pieces)})

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Response:
            return await self._handle("openai", request)

        @app.get("/v1/models")
        async def list_models(request: Request) -> Response:
            return self._list_models({k.lower(): v for k, v in request.headers.items()})

        @app.post("/api/chat")
        async def ollama_chat(request: Request) -> Response:
            return await self._handle("ollama", request)

        @app.get("/api/tags")
        async def ollama_tags() -> Response:
            names = self.served_models if self.served_models is not None else self.ollama_models
            return JSONResponse({"models": [_ollama_model(name) for name in names]})

        @app.get("/props")
        async def props() -> Response:
            with self._lock:
                named = [m for m, kind in self.kinds.items() if kind == "llama-server"]
            if not named:
                error = {"code": 404, "message": "File Not Found", "type": "not_found_error"}
                return JSONResponse({"error": error}, status_code=404)
            return JSONResponse(_llama_server_props(self.window_of(named[0]) or LLAMA_SERVER_N_CTX))

        @app.post("/api/show")
        async def ollama_show(request: Request) -> Response:
            body = _dict(json.loads(await request.body() or b"{}"))
            name = str(body.get("model") or body.get("name") or "")
            served = self.served_models
            known = served is None or _ollama_name(name) in {_ollama_name(m) for m in served}
            if self.kind_of(name) != "ollama" or not known:
                return JSONResponse({"error": f"model '{name}' not found"}, status_code=404)
            trained = self.trained.get(name, self.trained.get("*", OLLAMA_TRAINED_CONTEXT))
            return JSONResponse(_ollama_show(name, self.window_of(name), trained))

        @app.get("/health")
        async def health() -> Response:
            return JSONResponse({"ok": True})

        return app

    def _list_models(self, headers: dict[str, str]) -> Response:
        """GET /v1/models: Anthropic's shape when the request has Anthropic's headers."""
        with self._lock:
            self.model_list_calls += 1
            served = list(self.served_models or [])
            lists = self.lists_models
        if not lists:  # Azure's answer for a path it does not serve
            body = {"error": {"code": "404", "message": "Resource not found"}}
            return JSONResponse(body, status_code=404)
        if "anthropic-version" in headers:
            problem = _anthropic_auth(headers)
            if problem is not None:
                return self._dialects["anthropic"].error(problem)
            return JSONResponse(_anthropic_model_list(served), headers=_id_header("anthropic"))
        problem = _openai_auth(headers)
        if problem is not None:
            return self._openai.error(problem)
        listed = _openai_model_list(served, self.kind_of, self.window_of)
        return JSONResponse(listed, headers=_id_header("openai"))

    def _record(self, api: Api, request: FakeRequest, raw: bytes, started: float) -> RecordedCall:
        key = hashlib.sha256(api.encode() + b"\x00" + raw).hexdigest()
        with self._lock:
            self._attempts[key] = self._attempts.get(key, 0) + 1
            call = RecordedCall(
                api=api,
                model=request.model,
                request=request,
                status=0,
                started_at=started,
                began_at=None,
                ended_at=math.nan,
                usage=None,
                attempt_of=self._attempts[key],
                label=request.label,
            )
            self.calls.append(call)
        return call

    def _refusal(self, dialect: _Dialect, request: FakeRequest, body: Json) -> _ApiError | None:
        """Why the server refuses the request before serving it (in its own shape)."""
        headers, kind = request.headers, request.server_kind
        if isinstance(dialect, _OpenAI):
            problem = dialect.check_basic(body, headers)
        else:
            problem = dialect.check(body, headers)
        served = self.served_models
        if problem is None and served is not None:
            problem = _not_served(dialect.api, kind, request.model, list(served))
        if problem is None and isinstance(dialect, _OpenAI):
            problem = dialect.check_strict(body) if kind == "openai" else None
            problem = problem or (_kind_refusal(kind, body) if kind else None)
            problem = problem or self._window_refusal(request, body)
        return problem

    def _window_refusal(self, request: FakeRequest, body: Json) -> _ApiError | None:
        """A prompt longer than the model's window is refused; one that fits may answer
        with what the window leaves (`FakeRequest.output_limit`)."""
        window = self.window_of(request.model)
        if window is None:
            return None
        prompt = self.prompt_tokens(request)
        kind = request.server_kind
        if prompt >= window if kind == "llama-cpp-python" else prompt > window:
            return _too_long(kind, window, prompt, body.get("max_tokens"))
        asked = request.max_tokens
        room = window - prompt
        request.output_limit = min(asked, room) if isinstance(asked, int) and asked > 0 else room
        return None

    async def _handle(self, api: Api, http: Request) -> Response:
        started = time.monotonic()
        dialect = self._dialects[api]
        raw = await http.body()
        headers = {k.lower(): v for k, v in http.headers.items()}
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        request = dialect.describe(_dict(body), headers)
        if api == "openai":
            request.server_kind = self.kind_of(request.model)
            if request.server_kind == "prose":  # it never calls a tool
                request.output_via_tool = False
        _infer_output(request)
        call = self._record(api, request, raw, started)
        problem = self._refusal(dialect, request, _dict(body))
        if body is None or not isinstance(body, dict):
            problem = problem or _ApiError(
                400, "invalid_request", "The request body is not valid JSON."
            )
        if problem is not None:
            return self._finish_error(call, dialect, problem)
        slot = await self._admit(call, http)
        if slot is None:
            return Response(status_code=499)
        try:
            response = await self._serve(call, dialect, http)
        except BaseException:
            slot.release()
            raise
        if isinstance(response, _GuardedStream):

            def close() -> None:
                slot.release()
                if not call.done:  # its client left before the end
                    call.status, call.ended_at = 499, time.monotonic()

            response.on_close = close
        else:
            slot.release()
        return response

    async def _admit(self, call: RecordedCall, http: Request) -> _Slot | None:
        """Wait (FIFO) for a serving slot for the call's model; None if the client left."""
        admission, request = self._admission, call.request
        gate = admission.gate(request.model)
        gate.kind = request.server_kind

        def limit() -> int | None:
            return self._limit(request.model, request.server_kind)

        slot = _Slot(lambda: admission.release(gate, limit()))
        if not gate.waiting and admission.has_room(gate, limit()):
            admission.take(gate)
            return slot
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        gate.waiting.append(waiter)
        try:
            while not waiter.done():
                await asyncio.wait({waiter}, timeout=QUEUE_POLL_S)
                if not waiter.done() and await http.is_disconnected():
                    gate.waiting.remove(waiter)
                    waiter.cancel()
                    call.queued_s = time.monotonic() - call.started_at
                    call.status, call.ended_at = 499, time.monotonic()  # gave up in the queue
                    return None
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                slot.release()  # admitted just as the server stopped
            else:
                with contextlib.suppress(ValueError):
                    gate.waiting.remove(waiter)
            raise
        call.queued_s = time.monotonic() - call.started_at
        if await http.is_disconnected():  # it left just as its turn came
            slot.release()
            call.status, call.ended_at = 499, time.monotonic()
            return None
        return slot

    def _admit_waiting(self) -> None:
        admission = self._admission
        for model, gate in list(admission.gates.items()):
            admission.admit_next(gate, self._limit(model, gate.kind))

    async def _serve(self, call: RecordedCall, dialect: _Dialect, http: Request) -> Response:
        reply = self._choose(call.request)
        call.reply = reply
        if isinstance(reply, FaultReply):
            return await self._fault(call, dialect, reply, http)
        return await self._answer(call, dialect, reply, http)

    def _finish_error(self, call: RecordedCall, dialect: _Dialect, err: _ApiError) -> Response:
        call.status = 503 if dialect.api != "anthropic" and err.status == 529 else err.status
        call.ended_at = time.monotonic()
        return dialect.error(err)

    async def _fault(
        self, call: RecordedCall, dialect: _Dialect, fault: FaultReply, http: Request
    ) -> Response:
        await _sleep_until(call.started_at + call.queued_s + fault.latency_s)
        if fault.kind == "hang":
            return await self._hang(call, dialect, http)
        if fault.kind == "malformed":
            call.status = 200
            call.ended_at = time.monotonic()
            media = dialect.stream_media if call.request.stream else "application/json"
            return Response(dialect.malformed(call.request.stream), media_type=media)
        message = fault.message or dialect.default_message(fault.error, call.model)
        err = _ApiError(fault.status, fault.error, message, retry_after=fault.retry_after)
        return self._finish_error(call, dialect, err)

    async def _hang(self, call: RecordedCall, dialect: _Dialect, http: Request) -> Response:
        release = self._release
        assert release is not None, "the server is not running"
        while not release.is_set():
            if await http.is_disconnected():
                call.status = 499  # the client gave up
                call.ended_at = time.monotonic()
                return Response(status_code=499)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(release.wait(), 0.05)
        return self._finish_error(
            call, dialect, _ApiError(503, "overloaded", "The fake server released a hanging call.")
        )

    def _begin(self, call: RecordedCall, pending: list[_CacheEntry]) -> None:
        with self._lock:
            for entry in pending:
                entry.readable = True
            call.began_at = time.monotonic()

    async def _answer(
        self, call: RecordedCall, dialect: _Dialect, reply: Reply, http: Request
    ) -> Response:
        request = call.request
        answer = _compose(request, reply, self._default_content(request, reply))
        with self._lock:
            cache = dialect.account(self._cache, request, self._min_cache(request.model))
        default_first = 0.0 if request.stream else reply.latency_s
        first = reply.first_token_s if reply.first_token_s is not None else default_first
        served_at = call.started_at + call.queued_s  # scripted time starts with service
        begin_at = served_at + first
        end_at = served_at + max(reply.latency_s, first)
        llama = request.api == "openai" and self.kind_of(request.model) == "llama-cpp-python"
        if request.stream:
            plan = dialect.stream(request, answer, cache)
            if plan.usage is not None and llama:
                # llama-cpp-python's server sends no usage chunk, whatever stream_options say.
                tail = [t for t in plan.tail if '"usage": {' not in t and '"usage":{' not in t]
                plan = _StreamPlan(plan.head, plan.deltas, tail, None)
            call.status, call.usage = 200, plan.usage
            if llama:  # its response begins with the first token, whoever is still there
                await _sleep_until(begin_at)
            sse = dialect.stream_media == "text/event-stream"
            waiting = functools.partial(self._someone_waits, request.model) if llama else None
            return _GuardedStream(
                self._stream(call, plan, (begin_at, end_at), cache.pending, waiting),
                media_type=dialect.stream_media,
                headers={"cache-control": "no-cache"} if sse else None,
            )
        body = dialect.render(request, answer, cache)
        await _sleep_until(begin_at)
        self._begin(call, cache.pending)
        await _sleep_until(end_at)  # to its end, whether its client is still there or not
        if await http.is_disconnected():  # an orphan: it held its slot all the same
            call.status, call.ended_at = 499, time.monotonic()
            return Response(status_code=499)
        usage = body["usage"] if "usage" in body else dialect.usage(answer, cache)
        call.status, call.usage, call.ended_at = 200, usage, time.monotonic()
        return JSONResponse(body, headers=_id_header(dialect.api))

    def _someone_waits(self, model: str) -> bool:
        """Another request waits for a serving slot of `model`."""
        gate = self._admission.gates.get(model)
        return gate is not None and any(not w.done() for w in gate.waiting)

    def _default_content(self, request: FakeRequest, reply: Reply) -> Reply:
        if reply.json is not None or reply.text is not None:
            return reply
        with self._lock:
            factory = self._default
        return factory(request)

    async def _stream(
        self,
        call: RecordedCall,
        plan: _StreamPlan,
        times: tuple[float, float],
        pending: list[_CacheEntry],
        waiting: Callable[[], bool] | None = None,
    ) -> AsyncIterator[bytes]:
        """The stream's chunks from `times[0]` (the first) to `times[1]` (the tail). With
        `waiting` (llama-cpp-python), checked after each chunk as its server does, it ends
        early, `[DONE]` without a finish_reason, when another request waits."""
        begin_at, end_at = times
        count = max(len(plan.deltas), 1)
        try:
            for i, part in enumerate(["".join(plan.head), *plan.deltas]):
                await _sleep_until(begin_at + (end_at - begin_at) * i / count)
                if i == 0:
                    self._begin(call, pending)
                yield part.encode()
                if waiting is not None and waiting():
                    call.interrupted, call.ended_at = True, time.monotonic()
                    yield _sse("[DONE]").encode()
                    return
            await _sleep_until(end_at)
            call.ended_at = time.monotonic()  # all sent but the tail: complete
            yield "".join(plan.tail).encode()
        finally:
            if not call.done:  # its client left before the end
                call.status, call.ended_at = 499, time.monotonic()


def _ollama_model(name: str) -> Json:
    return {
        "name": name,
        "model": name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": 4_920_753_328,
        "digest": hashlib.sha256(name.encode()).hexdigest(),
        "details": {"format": "gguf", "family": "llama", "parameter_size": "8.0B"},
    }


def _id_header(api: Api) -> dict[str, str]:
    if api == "anthropic":
        return {"request-id": _new_id("req_")}
    if api == "ollama":
        return {}
    return {"x-request-id": _new_id("req_")}


# --------------------------------------------------------------------------------------------
# Running it
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def run_fake_model_server() -> Iterator[FakeModelServer]:
    """A running fake on a free port; stops cleanly (hanging requests are released)."""
    fake = FakeModelServer()
    runner = ServerThread(
        fake.app,
        name="fake model server",
        probe_path="/health",
        on_loop=fake._attach,
        on_stop=fake._release_hangs,
    )
    runner.start()
    fake.url = f"http://127.0.0.1:{runner.port}"
    try:
        yield fake
    finally:
        runner.stop()
