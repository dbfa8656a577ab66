"""What the PR says it is: intent words in its title, description and commit subjects.

"fix: ..." in a title, "perf" in a commit subject, "CVE-2024-3094" anywhere: the author's
own words for the kind of change, which the board (bot/council/scoring.py) and the
`strategies` classification (bot/council/protocols/strategies/seating.py) read beside what
the diff shows.
Only words of a fixed vocabulary come out, with where each was found, so nothing of the
PR's prose (untrusted, possibly secret-bearing) travels further.

A description is read without what says nothing of this change: HTML comments, fenced code,
quoted lines, headings, unchecked task-list items (a PR template's "- [ ] Bug fix") and an
issue-closing "Fixes #12" (a feature closes issues too). Commits are read by their subject
(first line), as the title.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from bot.context.models import IntentSource, IntentWord, PullRequestMeta

# intent -> the words that name it (whole words, lowercased). Conventional-commit types
# ("fix", "feat", "perf", "docs", "test", "refactor") and a "(deps)" scope are words too.
INTENTS: dict[str, tuple[str, ...]] = {
    "bug-fix": (
        "fix", "fixes", "fixed", "fixing", "bugfix", "hotfix", "bug", "bugs", "regression",
        "crash", "crashes", "broken", "incorrect", "wrong",
    ),
    "performance": (
        "perf", "performance", "latency", "slow", "slower", "faster", "speed", "speedup",
        "optimize", "optimise", "optimized", "optimization", "optimisation", "throughput",
    ),
    "security": (
        "security", "cve", "vulnerability", "vulnerabilities", "vuln", "xss", "csrf", "ssrf",
        "injection", "exploit", "auth", "authn", "authz", "authentication", "authorization",
        "authorisation", "permission", "permissions", "tenant", "tenants", "privilege",
        "sanitize", "sanitise", "secret", "secrets", "traversal", "rce",
    ),
    "concurrency": (
        "race", "deadlock", "concurrency", "concurrent", "thread-safe", "threadsafe",
        "goroutine", "goroutines", "mutex",
    ),
    "refactor": (
        "refactor", "refactoring", "refactored", "cleanup", "simplify", "restructure", "tidy",
    ),
    "documentation": ("docs", "doc", "documentation", "readme", "typo", "typos", "changelog"),
    "dependencies": (
        "deps", "dep", "bump", "bumps", "upgrade", "dependency", "dependencies", "renovate",
        "dependabot", "lockfile",
    ),
    "testing": ("test", "tests", "testing", "coverage", "flaky"),
    "feature": ("feat", "feature", "add", "adds", "implement", "implements", "introduce"),
}  # fmt: skip
_INTENT_OF = {word: intent for intent, words in INTENTS.items() for word in words}
_CVE = re.compile(r"\bcve-\d{4}-\d{4,}\b")
# Words and hyphenated words; an identifier (`doc_id`, `test_auth`) is code, not intent.
_WORD = re.compile(r"[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*")
# A description's lines that do not describe this change.
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1", re.S | re.M)
_SKIPPED_LINE = re.compile(r"^\s*(?:#|>|[-*+]\s+\[\s\])")
_CLOSING = re.compile(r"\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\s*:?\s+(?:#\d+|https?://\S+)")
# At most this many characters of a description are read (a pasted log is not intent).
MAX_DESCRIPTION_CHARS = 4_000
MAX_WORDS = 12


def intent_words(meta: PullRequestMeta) -> list[IntentWord]:
    """The intent words of the title, the description and each commit's subject: one per
    (intent, word, source), in that order of sources, at most `MAX_WORDS`."""
    found: dict[tuple[str, str, IntentSource], IntentWord] = {}

    def add(text: str, source: IntentSource) -> None:
        for intent, word in words_of(text):
            key = (intent, word, source)
            found.setdefault(key, IntentWord(intent=intent, word=word, source=source))

    if meta.title_authored:
        add(meta.title, "title")
    add(readable_description(meta.body), "description")
    for subject in subjects(meta.commit_messages):
        add(subject, "commit")
    return list(found.values())[:MAX_WORDS]


def words_of(text: str) -> list[tuple[str, str]]:
    """(intent, word) for each intent word of `text`, in order."""
    text = text.lower()
    found = [("security", m.group(0)) for m in _CVE.finditer(text)]
    for match in _WORD.finditer(_CVE.sub(" ", text)):
        word = match.group(0)
        if "_" in word:
            continue
        parts = [word, *word.split("-")] if "-" in word else [word]
        for part in parts:
            intent = _INTENT_OF.get(part)
            if intent is not None:
                found.append((intent, part))
                break
    return found


def readable_description(body: str) -> str:
    """The description without comments, code, quotes, headings, unchecked task items and
    issue-closing references."""
    text = _FENCE.sub("\n", _COMMENT.sub(" ", body[:MAX_DESCRIPTION_CHARS]))
    lines = [line for line in text.splitlines() if not _SKIPPED_LINE.match(line)]
    return _CLOSING.sub(" ", "\n".join(lines).lower())


def subjects(messages: Iterable[str]) -> list[str]:
    """Each commit message's first non-empty line."""
    found = []
    for message in messages:
        first = next((line for line in message.splitlines() if line.strip()), "")
        if first:
            found.append(first)
    return found


def intents(words: Sequence[IntentWord]) -> list[str]:
    """The distinct intents, in order of first mention."""
    return list(dict.fromkeys(w.intent for w in words))
