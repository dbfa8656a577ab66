"""A model's context window, as its server says it, for a model the capability table does
not know (a self-hoster's server runs whatever window it was started with).

Before a review packs its context, `discover` asks the server of each seated model, where
the server says it:

- llama.cpp's own server (`llama-server`): GET `<root>/props` ->
  `default_generation_settings.n_ctx` (the window of one slot);
- Ollama: POST `<root>/api/show` `{"model": name}` -> the `num_ctx` of `parameters` when the
  Modelfile sets one, else `OLLAMA_DEFAULT_WINDOW`; never more than
  `model_info["<arch>.context_length"]` (the model's own length, which Ollama caps it to);
- vLLM: GET `<base URL>/models` -> the model's `max_model_len`.

The endpoint's `context_window` setting always wins (nothing is asked), and a model the
table knows keeps the table's window. A server that answers none of these gets
`LOCAL_CONTEXT_WINDOW` when it is local (an endpoint marked `local`, Ollama, or an address
on this machine), else the table's default for an unknown model. Asking takes at most
`DISCOVERY_TIMEOUT_S` and never fails a review; what a server said is kept per (base URL,
model) in the process for `DISCOVERY_TTL_S`.

A server that refused a prompt as longer than its window, naming the window
(bot/council/fitting.py), is believed over everything: `learn` keeps that window per model
reference for the process, so the calls after it fit before they are sent.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from bot.providers.base import ProviderError
from bot.providers.capabilities import LOCAL_CONTEXT_WINDOW
from bot.providers.refs import ModelRef
from bot.providers.registry import KEYLESS, ProviderRegistry, ollama_root

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DISCOVERY_TIMEOUT_S",
    "DISCOVERY_TTL_S",
    "LOCAL_CONTEXT_WINDOW",
    "OLLAMA_DEFAULT_WINDOW",
    "Window",
    "discover",
    "forget",
    "learn",
    "remembered",
    "scaled",
    "window_of",
]

# Seconds one model's server has to say its window (its three questions asked at once).
DISCOVERY_TIMEOUT_S = 2.0
# How long what a server said (or that it said nothing) is trusted in the process.
DISCOVERY_TTL_S = 600.0
# Ollama's own default where the Modelfile sets no num_ctx: it depends on the GPU's memory
# (ollama/ollama docs/context-length.mdx: "< 24 GiB VRAM: 4k context, 24-48 GiB VRAM: 32k
# context, >= 48 GiB VRAM: 256k context", and OLLAMA_CONTEXT_LENGTH overrides it); nothing
# Ollama answers says which, so the smallest is assumed.
OLLAMA_DEFAULT_WINDOW = 4096
# A refusal's count of the prompt against ours: kept within these bounds.
_SCALE_BOUNDS = (0.8, 4.0)
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Window:
    """A model's window in tokens, and who said it. `said`: the server, the operator or
    the capability table said it (False: a default nobody said). `scale`: the server's
    tokens per estimated token, from a refusal's own count of the prompt (1.0: not said)."""

    tokens: int
    source: str  # "setting", "table", "llama-server", "ollama", "vllm", "refusal", "default"
    said: bool = True
    scale: float = 1.0


# (base URL, model) -> when asked, and the window the server said (None: it said nothing)
_DISCOVERED: dict[tuple[str, str], tuple[float, Window | None]] = {}
# model reference -> the window its server (or its setting) said, as last discovered
_BY_REF: dict[str, Window] = {}
# model reference -> the window a refusal named
_LEARNED: dict[str, Window] = {}


def forget() -> None:
    """Forget every window discovered or learned (tests)."""
    _DISCOVERED.clear()
    _BY_REF.clear()
    _LEARNED.clear()


def learn(model: str, tokens: int, scale: float = 1.0) -> Window:
    """Keep the window a server's refusal named for the model reference `model`, with the
    ratio of the server's count of the refused prompt to our estimate of it."""
    window = scaled(Window(tokens, "refusal"), scale)
    _LEARNED[model] = window
    return window


def scaled(window: Window, scale: float) -> Window:
    """`window` with the server's tokens per estimated token (kept within bounds)."""
    low, high = _SCALE_BOUNDS
    return replace(window, scale=min(max(scale, low), high))


def remembered(model: str) -> Window | None:
    """The window said for the reference `model` in this process: a refusal's, else the
    setting's or the server's as `discover` found it; None when nobody said one."""
    return _LEARNED.get(model) or _BY_REF.get(model)


def window_of(registry: ProviderRegistry, model: str) -> Window:
    """The window a review plans for: a refusal's, the setting's, the server's (as
    `discover` found it), the table's, else a default (`LOCAL_CONTEXT_WINDOW` for a local
    server). Raises ProviderError for a reference that does not resolve."""
    found = _LEARNED.get(model)
    if found is not None:
        return found
    ref = registry.resolve(model)
    if ref.endpoint is not None and ref.endpoint.context_window is not None:
        return Window(ref.endpoint.context_window, "setting")
    found = _BY_REF.get(model)
    if found is not None:
        return found
    caps = registry.capabilities_of(model)
    if caps.known:
        return Window(caps.context_window, "table")
    if _local(ref):
        return Window(LOCAL_CONTEXT_WINDOW, "default", said=False)
    return Window(caps.context_window, "default", said=False)


async def discover(registry: ProviderRegistry, models: Sequence[str]) -> None:
    """Ask the server of each of `models` the table does not know for its window (at most
    `DISCOVERY_TIMEOUT_S` each, all at once); `window_of` and `remembered` then say it.
    Never raises: a reference that does not resolve is left to whoever resolves it next."""
    assert registry.table is not None
    refs: list[ModelRef] = []
    for text in dict.fromkeys(models):
        try:
            ref = registry.resolve(text)
        except ProviderError:
            continue
        # Asked as for a local server: the table warns of an unknown price once, elsewhere.
        known = registry.table.lookup(ref.family, ref.model, local=True).known
        if ref.endpoint is not None and ref.endpoint.context_window is not None:
            _BY_REF[text] = Window(ref.endpoint.context_window, "setting")
        elif not known and not ref.is_builtin and ref.base_url:
            refs.append(ref)
    if not refs:
        return
    import httpx  # only a review with a model to ask about pays for it

    async with httpx.AsyncClient(timeout=DISCOVERY_TIMEOUT_S) as client:
        await asyncio.gather(*(_discover_one(client, ref) for ref in refs))


async def _discover_one(client: httpx.AsyncClient, ref: ModelRef) -> None:
    assert ref.base_url is not None
    key = (ref.base_url, ref.model)
    cached = _DISCOVERED.get(key)
    if cached is None or time.monotonic() - cached[0] > DISCOVERY_TTL_S:
        try:
            async with asyncio.timeout(DISCOVERY_TIMEOUT_S):
                found = await _ask(client, ref)
        except TimeoutError:
            found = None
        cached = (time.monotonic(), found)
        _DISCOVERED[key] = cached
    if cached[1] is not None:
        _BY_REF[ref.text] = cached[1]
    else:
        _BY_REF.pop(ref.text, None)


async def _ask(client: httpx.AsyncClient, ref: ModelRef) -> Window | None:
    """The three questions at once; the first server kind that answered says it."""
    assert ref.base_url is not None
    base = ref.base_url.rstrip("/")
    root = ollama_root(base)
    headers = {"Authorization": f"Bearer {_key(ref)}"}
    props, show, listed = await asyncio.gather(
        _json(client, "GET", f"{root}/props", headers),
        _json(client, "POST", f"{root}/api/show", headers, {"model": ref.model}),
        _json(client, "GET", f"{base}/models", headers),
    )
    return _llama_server(props) or _ollama(show) or _vllm(listed, ref.model)


async def _json(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any] | None = None,
) -> Any:
    """The answer's JSON, or None for any failure (nothing a server answers fails a review)."""
    import httpx

    try:
        response = await client.request(method, url, headers=headers, json=body)
        if response.status_code != 200:
            return None
        return response.json()
    except (httpx.HTTPError, ValueError):
        return None


def _llama_server(answer: Any) -> Window | None:
    settings = answer.get("default_generation_settings") if isinstance(answer, dict) else None
    n_ctx = _count(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return Window(n_ctx, "llama-server") if n_ctx else None


def _ollama(answer: Any) -> Window | None:
    if not isinstance(answer, dict) or not isinstance(answer.get("model_info"), dict):
        return None
    info: dict[str, Any] = answer["model_info"]
    parameters = answer.get("parameters")
    found = _NUM_CTX.search(parameters) if isinstance(parameters, str) else None
    tokens = int(found.group(1)) if found else OLLAMA_DEFAULT_WINDOW
    own = _count(info.get(f"{info.get('general.architecture')}.context_length"))
    if own:
        tokens = min(tokens, own)
    return Window(tokens, "ollama") if tokens > 0 else None


def _vllm(answer: Any, model: str) -> Window | None:
    data = answer.get("data") if isinstance(answer, dict) else None
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            length = _count(entry.get("max_model_len"))
            return Window(length, "vllm") if length else None
    return None


def _count(value: object) -> int | None:
    """A positive whole number of tokens, or None."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _key(ref: ModelRef) -> str:
    """The key the endpoint's calls send (the same address is asked), or none."""
    value = os.environ.get(ref.api_key_env, "") if ref.api_key_env else ""
    return value.strip() or KEYLESS


def _local(ref: ModelRef) -> bool:
    """A server on the operator's machines: marked so, Ollama, or an address of this one."""
    if ref.local:
        return True
    host = urlsplit(ref.base_url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
