"""Secrets out: everything the builder returns passes through one `Redactor` first.

A secret becomes `[REDACTED:<kind>]`. Line structure is always kept (a private key block
loses its content line by line, not its lines), so a redacted diff still parses and its
line numbers still point at the right code.

A leaf (standard library only): the log configuration and the webhook receiver use it too.
"""

from __future__ import annotations

import math
import re
from collections import Counter

# Tokens with a recognisable shape. Order matters only for overlapping shapes.
_TOKEN_PATTERNS: tuple[tuple[str, str], ...] = (
    ("aws-access-key", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}"),
    ("gcp-api-key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("github-token", r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})"),
    ("slack-token", r"(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[0-9]+-[A-Za-z0-9-]{10,})"),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    ("stripe-key", r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{10,}|whsec_[A-Za-z0-9]{20,}"),
    ("jwt", r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    ("azure-storage-key", r"AccountKey=[A-Za-z0-9+/]{80,}={0,2}"),
    ("model-api-key", r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"),
    ("aws-secret-key", r"(?i:aws)[A-Za-z0-9_.-]{0,30}(?i:secret)[A-Za-z0-9_.\"'-]{0,30}"
     r"\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"),
)  # fmt: skip
_TOKENS = re.compile("|".join(f"(?P<g{i}>{p})" for i, (_, p) in enumerate(_TOKEN_PATTERNS)))
# Lowercase substrings at least one of which any token contains: a text with none of them
# skips the regex (a plain substring scan is many times faster than the pattern).
_TOKEN_HINTS = (
    "akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "aiza", "ghp_", "gho_",
    "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "xapp-", "hooks.slack", "_live_", "_test_",
    "whsec_", "eyj", "accountkey=", "sk-", "aws",
)  # fmt: skip
_ASSIGNMENT_HINTS = (
    "passw", "pwd", "secret", "token", "apikey", "api_key", "api-key", "accesskey",
    "access_key", "access-key", "privatekey", "private_key", "private-key", "credential",
)  # fmt: skip
_KINDS = {f"g{i}": kind for i, (kind, _) in enumerate(_TOKEN_PATTERNS)}

# `password = "..."`, `"api_key": "..."`, `TOKEN=...`: the value goes if it looks random.
_ASSIGNMENT = re.compile(
    r"(?i:passw(?:or)?d|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|credentials?)"
    r"[A-Za-z0-9_.\-]*[\"']?\s*(?:=>|:=|(?<![=!<>])=(?!=)|:)\s*"
    r"(?P<q>[\"'`]?)(?P<val>[^\s\"'`,;()\[\]{}<>]{8,})"
)
_BEARER = re.compile(r"(?i:bearer)\s+(?P<val>[A-Za-z0-9_\-.=:/+~]{20,})")
_URL_PASSWORD = re.compile(
    r"(?P<head>[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@'\"]+:)(?P<val>[^/\s@'\"]+)@"
)
# Names, not secrets: snake_case, kebab-case, dotted.names, CONSTANT_CASE, camelCase.
_IDENTIFIER = re.compile(r"[a-z]+(?:[_.-][a-z]+)*|[A-Z]+(?:_[A-Z]+)*|[a-z]+(?:[A-Z][a-z]+)+")
_PLACEHOLDER = re.compile(r"x{4,}|\*{4,}|\$\{|\{\{|%\(|example|changeme|your[_-]|redacted", re.I)

_KEY_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
# Inside a key block: base64 lines and armor headers ("Proc-Type: ...").
_KEY_BODY = re.compile(r"[A-Za-z0-9+/=]*|[A-Za-z-]+:.*")
_LINE_PREFIX = re.compile(r"[+\- ]?\s*")


def entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


class Redactor:
    """Replaces secrets and counts what it replaced, by kind, across every call; `scanned`
    counts the characters it was given (what redaction cost)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.scanned = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def redact(self, text: str) -> str:
        if not text:
            return text
        self.scanned += len(text)
        if "PRIVATE KEY" in text:
            text = self._private_keys(text)
        lowered = text.lower()
        if any(hint in lowered for hint in _TOKEN_HINTS):
            text = _TOKENS.sub(self._token, text)
        if any(hint in lowered for hint in _ASSIGNMENT_HINTS):
            text = _ASSIGNMENT.sub(self._assignment, text)
        if "bearer" in lowered:
            text = _BEARER.sub(self._bearer, text)
        if "://" in text:
            text = _URL_PASSWORD.sub(self._url_password, text)
        return text

    def _token(self, match: re.Match[str]) -> str:
        kind = _KINDS[match.lastgroup or ""]
        self.counts[kind] += 1
        return marker(kind)

    def _assignment(self, match: re.Match[str]) -> str:
        value = match.group("val")
        if not _looks_secret(value, quoted=bool(match.group("q"))):
            return match.group(0)
        self.counts["password-assignment"] += 1
        start = match.start("val") - match.start()
        return match.group(0)[:start] + marker("password-assignment")

    def _bearer(self, match: re.Match[str]) -> str:
        if entropy(match.group("val")) < 3.0:
            return match.group(0)
        self.counts["bearer-token"] += 1
        start = match.start("val") - match.start()
        return match.group(0)[:start] + marker("bearer-token")

    def _url_password(self, match: re.Match[str]) -> str:
        if _PLACEHOLDER.search(match.group("val")):
            return match.group(0)
        self.counts["url-password"] += 1
        return f"{match.group('head')}{marker('url-password')}@"

    def _private_keys(self, text: str) -> str:
        """Blank every line of a private key block, keeping the lines (and a diff prefix)."""
        lines = text.split("\n")
        inside = False
        for i, line in enumerate(lines):
            begin = _KEY_BEGIN.search(line)
            if begin:
                self.counts["private-key"] += 1
                end = _KEY_END.search(line, begin.end())
                tail = line[end.end() :] if end else ""
                lines[i] = line[: begin.start()] + marker("private-key") + tail
                inside = end is None
            elif inside:
                lines[i], inside = _key_body_line(line)
        return "\n".join(lines)


def _key_body_line(line: str) -> tuple[str, bool]:
    """A line inside a key block, redacted, and whether the block goes on after it."""
    prefix = _LINE_PREFIX.match(line)
    head = prefix.group(0) if prefix else ""
    end = _KEY_END.search(line)
    if end:
        return head + marker("private-key") + line[end.end() :], False
    body = line[len(head) :].rstrip("\r")
    if _KEY_BODY.fullmatch(body):
        return head + marker("private-key") if body else line, True
    return line, False


def _looks_secret(value: str, *, quoted: bool) -> bool:
    """A random-looking literal, not a name (`settings.token`) or a placeholder."""
    if value.startswith(("[REDACTED", "$", "%")) or _PLACEHOLDER.search(value):
        return False
    if _IDENTIFIER.fullmatch(value):
        return False
    if entropy(value) < 3.0:
        return False
    if quoted:
        return True
    # Unquoted values are often code (`token = get_token`): demand digits and letters.
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
