"""A forge call that failed, as the service sees it: what was done, the status, the reason.

Each forge's client raises these (`bot.github.errors` maps githubkit's exceptions onto
them), so the service catches and words failures without knowing which forge it talks
to. Messages never carry a credential: the method, the path (no query, no header) and the
forge's own reason.
"""

from __future__ import annotations

from datetime import timedelta

__all__ = [
    "ForgeAuthError",
    "ForgeError",
    "ForgeNotFound",
    "ForgeRateLimited",
    "ForgeUnavailable",
    "ForgeValidationError",
]


class ForgeError(RuntimeError):
    """A forge call failed. `status` is None when no answer came back."""

    def __init__(
        self,
        reason: str,
        *,
        status: int | None = None,
        method: str = "",
        path: str = "",
        codes: tuple[str, ...] = (),
    ) -> None:
        call = f"{method} {path}".strip()
        where = f"{call} -> {status}" if status is not None else call
        super().__init__(f"{where}: {reason}" if where else reason)
        self.reason = reason
        self.status = status
        self.method = method
        self.path = path
        # The `code` of each entry in the forge's error list (GitHub: "too_large", ...).
        self.codes = codes
        # What we were doing, in words ("create the check run"), set by the forge's client.
        self.action = ""


class ForgeNotFound(ForgeError):
    """404: missing, or not visible to these credentials (forges do not say which)."""


class ForgeValidationError(ForgeError):
    """422 (or a request body the client refused to send): the request itself was wrong."""


class ForgeAuthError(ForgeError):
    """401, or 403 that is not a rate limit: credentials or permissions."""


class ForgeRateLimited(ForgeError):
    """A rate limit that outlasted the retries (or asked for a longer wait than allowed)."""

    def __init__(
        self,
        reason: str,
        *,
        retry_after: timedelta,
        status: int | None = None,
        method: str = "",
        path: str = "",
        codes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(reason, status=status, method=method, path=path, codes=codes)
        self.retry_after = retry_after


class ForgeUnavailable(ForgeError):
    """5xx, a timeout, or no connection."""
