"""Preflight: before a council convenes, every seated model has its key and every endpoint
answers. A missing key or an unreachable URL is then one clear error naming the variable or
the address, before any seat is called (`council review` exits 2; the App's check run is
neutral), instead of every seat failing after convening.

An endpoint is asked for its model list where it serves one (which also proves the key),
else for one tiny answer. A local server's list must hold the model (Ollama and llama.cpp
serve what was pulled or loaded, by its exact name). What an endpoint answered is trusted for
`COUNCIL_PREFLIGHT_TTL_S` seconds, per process.

A local server whose speed nobody set (the endpoint's `prompt_tokens_per_s` and
`output_tokens_per_s`, or its `call_deadline_s`) is measured once per process per base URL
and model (bot/providers/speed.py: one short streamed probe, which is also the tiny answer
of a server without a model list), so its calls get deadlines that fit it. A probe that fails
leaves the deadlines as they are, and is tried again after the TTL (one that cannot show a
speed, as an answer not streamed, never).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from bot.providers import speed
from bot.providers.adapter import Adapter
from bot.providers.base import (
    ConfigurationError,
    Message,
    ModelCall,
    ProviderError,
    Unreachable,
)
from bot.providers.refs import ModelRef
from bot.providers.registry import ProviderRegistry
from bot.providers.speed import measure, needs_measuring

__all__ = ["PreflightFailed", "PreflightProblem", "preflight"]

log = structlog.get_logger(__name__)

TINY_CALL_DEADLINE_S = 30.0


@dataclass(frozen=True)
class PreflightProblem:
    model: str
    message: str  # names the variable or the URL; never a secret


class PreflightFailed(ConfigurationError):
    """One or more seated models cannot be called; no seat was."""

    def __init__(self, problems: Sequence[PreflightProblem]) -> None:
        self.problems = list(problems)
        lines = "; ".join(p.message for p in self.problems)
        super().__init__(f"the council did not convene: {lines}")


@dataclass
class _Answer:
    at: float
    served: list[str] | None  # the model list; None where none is served
    problem: str | None


# endpoint key -> what it answered, and when
_ANSWERS: dict[str, _Answer] = {}


def forget() -> None:
    """Forget every endpoint's answer and every measured speed (tests; an operator's
    `models check`)."""
    _ANSWERS.clear()
    speed.forget()


async def preflight(registry: ProviderRegistry, models: Sequence[str]) -> None:
    """Raise PreflightFailed naming what is wrong with any of `models`."""
    refs = list(dict.fromkeys(models))
    problems = await asyncio.gather(*(_check(registry, ref) for ref in refs))
    found = [PreflightProblem(ref, p) for ref, p in zip(refs, problems, strict=True) if p]
    if found:
        raise PreflightFailed(found)


async def _check(registry: ProviderRegistry, ref: str) -> str | None:
    try:
        adapter = registry.get(ref)  # a missing key or an unknown endpoint raises here
    except ProviderError as err:
        return str(err)
    key = f"{ref.partition(':')[0]}|{adapter.base_url}|{adapter.key_id}"
    ttl = registry.settings.preflight_ttl_s
    resolved = registry.resolve(ref)
    answer = _ANSWERS.get(key)
    if answer is None or time.monotonic() - answer.at > ttl:
        answer = await _ask(adapter, resolved, ttl)
        _ANSWERS[key] = answer
    if answer.problem is not None:
        return answer.problem
    if resolved.local and answer.served and not _serves(answer.served, resolved.model):
        listed = ", ".join(answer.served[:10])
        return f"{ref}: {adapter.shown_url} does not serve {resolved.model} (it serves: {listed})"
    if needs_measuring(resolved, adapter.base_url, retry_after_s=ttl):
        try:
            await _measured(adapter, resolved)
        except (ConfigurationError, Unreachable) as err:
            return str(err)
        except ProviderError:
            # Logged and remembered by `_measured` (tried again after the TTL); the server
            # answered, so the review goes on with the configured call deadline.
            return None
    return None


async def _ask(adapter: Adapter, ref: ModelRef, ttl: float) -> _Answer:
    try:
        served = await adapter.list_models()
        if served is None and needs_measuring(ref, adapter.base_url, retry_after_s=ttl):
            await _measured(adapter, ref)  # the probe is the tiny answer
        elif served is None:
            await adapter.call(
                ModelCall(
                    system=[],
                    messages=[Message(role="user", content="Reply with the word ok.")],
                    max_tokens=16,
                    deadline_s=TINY_CALL_DEADLINE_S,
                    label="preflight",
                )
            )
    except (ConfigurationError, Unreachable) as err:
        return _Answer(time.monotonic(), None, str(err))
    except ProviderError:
        # The server answered, if badly (a 5xx, a rate limit): its key and address are not
        # the problem. The deliberation meets what follows and records it per seat. (At
        # time 0 the answer is never trusted: the next preflight asks again.)
        return _Answer(0.0, None, None)
    return _Answer(time.monotonic(), served, None)


async def _measured(adapter: Adapter, ref: ModelRef) -> None:
    """Measure the server's speed for `ref` and remember it. A probe that fails is tried
    again after the TTL; one whose answer cannot show a speed (not streamed), never."""
    try:
        probe = await measure(adapter)
    except ProviderError as err:
        speed.failed(adapter.base_url, ref.model)
        log.warning("speed_probe_failed", model=ref.text, error=str(err))
        raise
    if probe.speed is None:
        speed.failed(adapter.base_url, ref.model, again=False)
        log.warning("speed_not_measured", model=ref.text, reason=probe.problem)
        return
    speed.remember(adapter.base_url, ref.model, probe.speed)
    log.info(
        "speed_measured",
        model=ref.text,
        prompt_tokens_per_s=round(probe.speed.prompt_tokens_per_s, 1),
        output_tokens_per_s=round(probe.speed.output_tokens_per_s, 2),
    )


def _serves(served: Sequence[str], model: str) -> bool:
    names = {s.removesuffix(":latest") for s in served}
    return model.removesuffix(":latest") in names
