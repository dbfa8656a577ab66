"""A finding's fingerprint: the same issue keeps the same one from review to review.

Made of the file, the title normalised (case, punctuation and spacing do not count) and the
anchored code line's text, stripped: a push that moves the line keeps the fingerprint, a
push that changes the line (usually, fixes it) does not. A file-wide finding has no line.
What a re-review compares (fixed, still open, new) and what inline comments never post
twice.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["fingerprint", "normalised_title"]

_WORD = re.compile(r"[a-z0-9]+")


def normalised_title(title: str) -> str:
    """ "Unbounded retry loop!" and "unbounded  retry-loop" are one title."""
    return " ".join(_WORD.findall(title.lower()))


def fingerprint(path: str, title: str, code_line: str | None) -> str:
    """16 hex digits for (path, normalised title, anchored line's text stripped)."""
    line = " ".join((code_line or "").split())
    key = "\0".join((path, normalised_title(title), line))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
