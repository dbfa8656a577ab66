"""The project's one token estimator, calibrated per kind of text.

A characters-per-token heuristic (tokenizers such as tiktoken download vocabularies at run
time and fail offline), with one ratio per kind of text, because tokenizers count kinds
differently: code (symbols, short identifiers, indentation) runs about 3.6-4.1 characters a
token, English prose 4.2-4.7, JSON schemas nearer 3, and a diff line's number and mark
(`  86 + `) about 2. Text is split into kinds line by line (`kinds_of`); a line of words with
few symbols is prose, anything else is code.

Every call tells us what we sent (per kind) and how many input tokens the provider counted;
`observe` moves the ratios toward what the provider counts (normalised least mean squares
on the per-kind tokens-per-character, so mixtures that differ from call to call tell the
kinds apart). `margin` is the share of a budget kept free for the estimator's recent error.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping
from functools import lru_cache
from typing import Literal

TextKind = Literal["code", "prose", "data", "gutter"]
KINDS: tuple[TextKind, ...] = ("code", "prose", "data", "gutter")
# Starting ratios, a little under what tokenizers measure, so that before any usage is
# observed an estimate errs on the side of "bigger" (a budget stays safe).
DEFAULT_RATIOS: dict[TextKind, float] = {"code": 3.4, "prose": 4.1, "data": 3.0, "gutter": 2.2}
MIN_CHARS_PER_TOKEN = 1.2
MAX_CHARS_PER_TOKEN = 8.0
DEFAULT_ERROR = 0.02  # the assumed relative error before any usage is observed
MIN_MARGIN, MAX_MARGIN = 0.03, 0.10

_SYMBOLS = re.compile(r"[{}()\[\];=<>&|$@\\^~`*+]")
_LETTERS = re.compile(r"[A-Za-z]")
_GUTTER = re.compile(r"^ *\d+(?: [-+ ] ?|$)")


def line_kind(line: str) -> TextKind:
    """Prose: at least four words, mostly letters, at most one code symbol per 25
    characters; a diff gutter line or anything else is code."""
    stripped = line.strip()
    if len(stripped) < 16 or _GUTTER.match(line):
        return "code"
    if stripped.count(" ") < 3:
        return "code"
    letters = len(_LETTERS.findall(stripped))
    if letters < 0.7 * (len(stripped) - stripped.count(" ")):
        return "code"
    return "prose" if len(_SYMBOLS.findall(stripped)) * 25 <= len(stripped) else "code"


def kinds_of(text: str) -> dict[TextKind, int]:
    """Characters of `text` per kind (each line with its newline); a diff line's number
    and mark (`  86 + `) are a kind of their own: digits and marks cost a token each.

    Every call of a deliberation sends the same system blocks (the whole context) and each
    phase the same transcript, so the counts are cached per text (a fresh dict each time)."""
    return dict(_kinds_of(text))


@lru_cache(maxsize=128)
def _kinds_of(text: str) -> tuple[tuple[TextKind, int], ...]:
    counts: dict[TextKind, int] = dict.fromkeys(KINDS, 0)
    if not text:
        return tuple(counts.items())
    for line in text.split("\n"):
        gutter = _GUTTER.match(line)
        if gutter:
            counts["gutter"] += gutter.end()
            counts["code"] += len(line) - gutter.end() + 1
        else:
            counts[line_kind(line)] += len(line) + 1
    counts["code"] -= 1  # the last line has no newline after it
    if counts["code"] < 0:
        counts["prose"] += counts["code"]
        counts["code"] = 0
    return tuple(counts.items())


class TokenEstimator:
    """Estimates tokens from text; `observe` calibrates it from reported usage."""

    def __init__(
        self,
        chars_per_token: float | Mapping[TextKind, float] | None = None,
        *,
        smoothing: float = 0.3,
        default_margin: float | None = None,
    ) -> None:
        if chars_per_token is None:
            ratios = dict(DEFAULT_RATIOS)
        elif isinstance(chars_per_token, (int, float)):
            ratios = dict.fromkeys(KINDS, float(chars_per_token))
        else:
            ratios = {**DEFAULT_RATIOS, **chars_per_token}
        # Tokens per character, per kind: what the estimate multiplies and `observe` fits.
        self._rate = {k: 1.0 / ratios[k] for k in KINDS}
        self._smoothing = smoothing
        # Relative error of recent estimates: how much headroom a budget must keep.
        self._error = DEFAULT_ERROR if default_margin is None else default_margin / 1.5
        self._observations = 0
        self._lock = threading.Lock()

    @property
    def chars_per_token(self) -> float:
        """The code ratio: what a count of characters of unknown kind is estimated at."""
        return 1.0 / self._rate["code"]

    def ratio(self, kind: TextKind) -> float:
        return 1.0 / self._rate[kind]

    @property
    def observations(self) -> int:
        return self._observations

    @property
    def margin(self) -> float:
        """Fraction of a budget to keep free for the estimator's error (3%..10%)."""
        return min(max(self._error * 1.5, MIN_MARGIN), MAX_MARGIN)

    def estimate(self, text: str) -> int:
        return self.estimate_kinds(kinds_of(text))

    def estimate_kinds(self, chars: Mapping[TextKind, int]) -> int:
        total = sum(self._rate[k] * n for k, n in chars.items() if n > 0)
        return math.ceil(total - 1e-9) if total > 0 else 0

    def estimate_chars(self, chars: int, kind: TextKind = "code") -> int:
        if chars <= 0:
            return 0
        return math.ceil(chars * self._rate[kind] - 1e-9)

    def observe(self, chars: int | Mapping[TextKind, int], reported_tokens: int) -> None:
        """Fold one (characters sent, tokens the provider counted) pair into the ratios;
        `chars` is a count (taken as code) or characters per kind."""
        given: Mapping[TextKind, int] = {"code": chars} if isinstance(chars, int) else chars
        sent = {k: n for k, n in given.items() if n > 0}
        total = sum(sent.values())
        if total < 200 or reported_tokens <= 0:
            return  # tiny calls are dominated by fixed overhead tokens
        with self._lock:
            predicted = sum(self._rate[k] * n for k, n in sent.items())
            self._error += self._smoothing * (
                abs(predicted - reported_tokens) / reported_tokens - self._error
            )
            # Normalised LMS: move each kind's rate in proportion to its share of the text.
            squares = sum(n * n for n in sent.values())
            step = self._smoothing * (reported_tokens - predicted) / squares
            for kind, n in sent.items():
                rate = self._rate[kind] + step * n
                self._rate[kind] = min(max(rate, 1 / MAX_CHARS_PER_TOKEN), 1 / MIN_CHARS_PER_TOKEN)
            self._observations += 1


_default = TokenEstimator()


def default_estimator() -> TokenEstimator:
    return _default
