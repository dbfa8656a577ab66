"""The most one call can cost, known before it is sent: what bounds a budget's reservation.

Input is estimated from the text the adapters send (system blocks, messages, every tool's
schema, and the output schema once more, as OpenAI's `response_format` repeats it), with
the estimator's own error margin and a fixed allowance for the framing a provider adds
(Anthropic's tool-use system prompt is ~350 tokens). Every input token is priced at the
dearest input rate of the model (uncached input or a cache write; a cache read is never
assumed), and output at the `max_tokens` the adapters actually send for the call.

A call reserves this worst case only for a model never seen; otherwise it reserves the
usual size of the model's answers instead of the full `max_tokens` (`bot.council.reserving`),
priced here by `call_cost`.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from bot.providers.base import ModelCall
from bot.providers.capabilities import ModelCapabilities
from bot.tokens import TokenEstimator

__all__ = [
    "CALL_OVERHEAD_TOKENS",
    "call_cost",
    "dearest_input_price",
    "max_output_tokens",
    "worst_case_cost",
    "worst_case_input",
]

CALL_OVERHEAD_TOKENS = 512


@lru_cache(maxsize=256)
def _schema_chars(schema: type[BaseModel]) -> int:
    return len(json.dumps(schema.model_json_schema()))


def _sent_chars(request: ModelCall[Any]) -> int:
    chars = sum(len(b.text) for b in request.system)
    chars += sum(len(m.content) for m in request.messages)
    for tool in request.all_tools():
        chars += len(tool.name) + len(tool.description) + _schema_chars(tool.schema)
    if request.output is not None:
        chars += _schema_chars(request.output.schema)
    return chars


def worst_case_input(request: ModelCall[Any], estimator: TokenEstimator) -> int:
    """Input tokens, rounded up, with the estimator's margin and the framing allowance."""
    estimate = estimator.estimate_chars(_sent_chars(request))
    return math.ceil(estimate * (1 + estimator.margin)) + CALL_OVERHEAD_TOKENS


def max_output_tokens(caps: ModelCapabilities, request: ModelCall[Any]) -> int:
    """The `max_tokens` the adapters send: the call's, clipped to what the model allows."""
    return min(request.max_tokens, caps.max_output_tokens)


def dearest_input_price(caps: ModelCapabilities) -> float:
    """USD per million input tokens: uncached input or a cache write, whichever costs more."""
    return max(caps.input_price, caps.cache_write_price, caps.cache_read_price)


def call_cost(caps: ModelCapabilities, input_tokens: int, output_tokens: int) -> float:
    """USD: `input_tokens` at the dearest input rate and `output_tokens` of answer."""
    return (
        input_tokens * dearest_input_price(caps) + output_tokens * caps.output_price
    ) / 1_000_000


def worst_case_cost(
    caps: ModelCapabilities, request: ModelCall[Any], estimator: TokenEstimator
) -> float:
    """USD: every input token at the dearest input rate, and a full `max_tokens` answer."""
    return call_cost(caps, worst_case_input(request, estimator), max_output_tokens(caps, request))
