"""How fast a local model server is, and the deadline a call to it gets.

A model server on a small CPU (llama-cpp-python on two cores) evaluates a prompt at 30-100
tokens a second and writes 4-7: one seat's call (a 5,000-token prompt, a 1,000-token answer)
takes three to six minutes, past the 300 s COUNCIL_CALL_DEADLINE_S. So a call to a local
endpoint whose speed is known gets a deadline from it (`EndpointConfig.speed_deadline_s`:
margin x (prompt estimate / prompt speed + the call's max_tokens / output speed) + overhead),
where that is longer than the deadline it would get otherwise; the endpoint's
`call_deadline_s`, where set, wins over everything. Hosted endpoints keep COUNCIL_CALL_DEADLINE_S.

The speed is the endpoint's setting (`prompt_tokens_per_s`, `output_tokens_per_s`), else what
`measure` found in this process: one short streamed probe (a prompt of a few hundred tokens
whose beginning is unique to the run, so no prompt cache serves it; a few dozen tokens of
answer). Prompt speed: the prompt's tokens over the time to the first streamed chunk; output
speed: the tokens after the first over the time from the first chunk to the last (the
server's usage when it sends one, else the estimator's count).
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from bot.providers.base import Message, ModelCall, Provider
from bot.providers.refs import ModelRef
from bot.settings import EndpointConfig

__all__ = [
    "PROBE_LABEL",
    "Deadline",
    "Probe",
    "Speed",
    "deadline_for",
    "failed",
    "forget",
    "measure",
    "needs_measuring",
    "probe_call",
    "rate",
    "remember",
    "speed_of",
]

PROBE_LABEL = "speed-probe"
PROBE_OUTPUT_TOKENS = 32
PROBE_DEADLINE_S = 180.0
# Shorter than this between the first chunk and the last, the answer came in one piece (a
# server that does not stream): no output speed can be read from it.
MIN_GENERATION_S = 0.05

# Prose, so the estimator counts it about as a tokenizer does when the server sends no usage.
_PASSAGE = (
    "A pull request changes a program that other people rely on. Before it is merged, "
    "reviewers read the change and ask what it does, whether it does it correctly, and "
    "what else it touches. They look at the tests that come with it, at the names it "
    "introduces, at the errors it may raise and at the ways it may be misused. A careful "
    "review also asks what the change leaves out: a case nobody handled, a message that "
    "says too little, a limit that nobody set. "
)
_ASK = (
    "Explain at length, in plain prose, why careful review of every change matters to a "
    "team that maintains software for years. Keep writing until you are stopped."
)

Source = Literal["measured", "endpoint"]


@dataclass(frozen=True)
class Speed:
    prompt_tokens_per_s: float
    output_tokens_per_s: float
    source: Source

    def describe(self) -> str:
        """ "60 prompt tokens/s, 5 output tokens/s"."""
        return (
            f"{rate(self.prompt_tokens_per_s)} prompt tokens/s, "
            f"{rate(self.output_tokens_per_s)} output tokens/s"
        )


def rate(value: float) -> str:
    """Tokens per second as messages show them: 62.3, 5.1, 412."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


@dataclass(frozen=True)
class Deadline:
    seconds: float
    # Where it came from, as a timeout message names it: "the 300 s call deadline
    # (COUNCIL_CALL_DEADLINE_S)".
    described: str


# (base URL, model) -> the speed measured in this process
_MEASURED: dict[tuple[str, str], Speed] = {}
# (base URL, model) -> when a probe failed: not probed again before the preflight's TTL.
_FAILED: dict[tuple[str, str], float] = {}


def remember(base_url: str, model: str, speed: Speed) -> None:
    _MEASURED[(base_url, model)] = speed
    _FAILED.pop((base_url, model), None)


def forget() -> None:
    """Forget every measurement (tests; the preflight's `forget`)."""
    _MEASURED.clear()
    _FAILED.clear()


def speed_of(ref: ModelRef, base_url: str) -> Speed | None:
    """The endpoint's speed: its setting, else (a local server) what was measured here."""
    endpoint = ref.endpoint
    if endpoint is not None and endpoint.prompt_tokens_per_s and endpoint.output_tokens_per_s:
        return Speed(endpoint.prompt_tokens_per_s, endpoint.output_tokens_per_s, "endpoint")
    return _MEASURED.get((base_url, ref.model)) if ref.local else None


def needs_measuring(ref: ModelRef, base_url: str, *, retry_after_s: float) -> bool:
    """A local server whose deadline would follow a speed nobody knows yet (a probe that
    failed is tried again `retry_after_s` later)."""
    if not ref.local or speed_of(ref, base_url) is not None:
        return False
    if ref.endpoint is not None and ref.endpoint.call_deadline_s is not None:
        return False
    failed = _FAILED.get((base_url, ref.model))
    return failed is None or time.monotonic() - failed > retry_after_s


def deadline_for(
    ref: ModelRef,
    base_url: str,
    *,
    requested_s: float | None,
    default_s: float,
    prompt_tokens: int,
    output_tokens: int,
) -> Deadline:
    """The deadline of one call: the endpoint's `call_deadline_s`; else the longer of the
    call's own (`requested_s`, else COUNCIL_CALL_DEADLINE_S `default_s`) and the one its
    speed gives for `prompt_tokens` in and `output_tokens` (its max_tokens) out."""
    endpoint = ref.endpoint
    if endpoint is not None and endpoint.call_deadline_s is not None:
        seconds = endpoint.call_deadline_s
        return Deadline(
            seconds, f"the {seconds:g} s deadline set by the endpoint's call_deadline_s"
        )
    if requested_s is None or requested_s == default_s:
        own = Deadline(default_s, f"the {default_s:g} s call deadline (COUNCIL_CALL_DEADLINE_S)")
    else:
        own = Deadline(requested_s, f"the {requested_s:g} s deadline this call was given")
    speed = speed_of(ref, base_url)
    if speed is None:
        return own
    seconds = EndpointConfig.speed_deadline_s(
        speed.prompt_tokens_per_s, speed.output_tokens_per_s, prompt_tokens, output_tokens
    )
    if seconds <= own.seconds:
        return own
    whose = "measured speed" if speed.source == "measured" else "speed setting"
    return Deadline(
        seconds, f"the {seconds:g} s deadline from the endpoint's {whose}: {speed.describe()}"
    )


@dataclass(frozen=True)
class Probe:
    """What one probe saw. `speed` is None when it could not be read (`problem` says why)."""

    prompt_tokens: int
    output_tokens: int
    first_chunk_s: float  # from the request sent (its slot taken) to the first chunk
    generation_s: float  # from the first chunk to the last
    usage_estimated: bool  # the server sent no usage: the estimator counted the tokens
    speed: Speed | None
    problem: str | None = None


def probe_call(*, max_tokens: int = PROBE_OUTPUT_TOKENS) -> ModelCall[Any]:
    """A prompt of a few hundred tokens, unique from its first characters on."""
    nonce = uuid.uuid4().hex
    passage = "".join(f"Note {i} of run {nonce}. {_PASSAGE}" for i in range(1, 4))
    return ModelCall(
        system=[],
        messages=[Message(role="user", content=f"Run {nonce}.\n\n{passage}\n\n{_ASK}")],
        max_tokens=max_tokens,
        deadline_s=PROBE_DEADLINE_S,
        label=PROBE_LABEL,
    )


async def measure(provider: Provider, *, max_tokens: int = PROBE_OUTPUT_TOKENS) -> Probe:
    """One streamed probe call and the speeds it shows. Raises ProviderError when the call
    fails."""
    started = provider.start(probe_call(max_tokens=max_tokens))
    try:
        await started.wait_began()
        began_at = time.monotonic()
        result = await started.task
    finally:
        if not started.task.done():
            started.task.cancel()
    done = time.monotonic()
    latency_s = result.latency_ms / 1000
    generation_s = min(done - began_at, latency_s)
    first_chunk_s = max(latency_s - generation_s, 1e-3)
    prompt_tokens = result.usage.total_input_tokens
    output_tokens = result.usage.output_tokens
    problem = None
    if generation_s < MIN_GENERATION_S:
        problem = "the server sent its answer in one piece (not streamed)"
    elif output_tokens < 2 or prompt_tokens < 1:
        problem = f"the answer was too short to time ({output_tokens} tokens)"
    speed = None
    if problem is None:
        speed = Speed(prompt_tokens / first_chunk_s, (output_tokens - 1) / generation_s, "measured")
    return Probe(
        prompt_tokens,
        output_tokens,
        round(first_chunk_s, 3),
        round(generation_s, 3),
        result.usage_estimated,
        speed,
        problem,
    )


def failed(base_url: str, model: str, *, again: bool = True) -> None:
    """A probe of this server and model failed: not tried again before the retry time, or
    never in this process (`again=False`: an answer that cannot show a speed, as one that
    is not streamed)."""
    _FAILED[(base_url, model)] = time.monotonic() if again else math.inf
