"""The project's one token estimator.

A characters-per-token heuristic (tokenizers such as tiktoken download vocabularies at run
time and fail offline), corrected from the usage providers report: every call tells us how
many characters we sent and how many tokens the provider counted, and the ratio follows.
"""

from __future__ import annotations

import math
import threading

# Code and English prose average 3.5-4 characters per token on current tokenizers; start
# a little low so early estimates err on the side of "bigger", which keeps budgets safe.
DEFAULT_CHARS_PER_TOKEN = 3.5
MIN_CHARS_PER_TOKEN = 1.2
MAX_CHARS_PER_TOKEN = 8.0


class TokenEstimator:
    """Estimates tokens from characters; `observe` calibrates it from reported usage."""

    def __init__(
        self,
        chars_per_token: float = DEFAULT_CHARS_PER_TOKEN,
        *,
        smoothing: float = 0.3,
        default_margin: float = 0.15,
    ) -> None:
        self._ratio = chars_per_token
        self._smoothing = smoothing
        # Relative error of recent estimates: how much headroom a budget must keep.
        self._error = default_margin
        self._observations = 0
        self._lock = threading.Lock()

    @property
    def chars_per_token(self) -> float:
        return self._ratio

    @property
    def observations(self) -> int:
        return self._observations

    @property
    def margin(self) -> float:
        """Fraction of a budget to keep free for the estimator's error (5%..30%)."""
        return min(max(self._error * 1.5, 0.05), 0.3)

    def estimate(self, text: str) -> int:
        return self.estimate_chars(len(text))

    def estimate_chars(self, chars: int) -> int:
        if chars <= 0:
            return 0
        return math.ceil(chars / self._ratio)

    def observe(self, chars: int, reported_tokens: int) -> None:
        """Fold one (characters sent, tokens the provider counted) pair into the ratio."""
        if chars < 200 or reported_tokens <= 0:
            return  # tiny calls are dominated by fixed overhead tokens
        observed = min(max(chars / reported_tokens, MIN_CHARS_PER_TOKEN), MAX_CHARS_PER_TOKEN)
        with self._lock:
            predicted = math.ceil(chars / self._ratio)
            error = abs(predicted - reported_tokens) / reported_tokens
            self._error += self._smoothing * (error - self._error)
            self._ratio += self._smoothing * (observed - self._ratio)
            self._observations += 1


_default = TokenEstimator()


def default_estimator() -> TokenEstimator:
    return _default


def estimate_tokens(text: str) -> int:
    return _default.estimate(text)
