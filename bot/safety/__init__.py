"""Untrusted text (model output, repository config) made safe to publish on GitHub.

A leaf package: standard library only, importing nothing of ours but its own modules, so
every package may use it. Each module owns one concern:

- here: invisible characters and `@mentions`, which every other step takes out again;
- `bot.safety.fences`: which fenced code blocks are trusted as code;
- `bot.safety.html`: HTML comments, tags and images removed, what could open HTML broken;
- `bot.safety.blocks`: a line unable to start a block of its own;
- `bot.safety.markdown`: model Markdown, a line of it, or a block quote of it made safe;
- `bot.safety.links`: links off the repository made inert text.

Every function here takes time linear in its input (no pattern reads ahead from each of
many starting points: a megabyte of `<!--`, `![`, `](`, `a://` or backticks is no slower
per byte than prose); tests/unit/safety/test_linear_time.py holds them to it.
"""

from __future__ import annotations

import re

__all__ = ["MAX_PASSES", "ZWSP", "neutralize_mentions", "strip_invisible"]

# Breaks syntax invisibly: renders as nothing, but no parser reads across it.
ZWSP = "\u200b"
# How often a rewrite runs again before it settles the text some blunter way.
MAX_PASSES = 4
# Bidi embeddings/overrides/isolates, zero-width and other invisible formatting characters,
# Unicode tag characters (used to smuggle invisible text), C0/C1 controls except \t and \n.
# U+200D (zero-width joiner) is kept: emoji sequences need it and it cannot hide a mention.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200e\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0e\ufeff\uffa0\ufff9-\ufffb"
    "\U000e0000-\U000e007f\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)
_MENTION = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9])")


def strip_invisible(text: str) -> str:
    """Normalize newlines and drop bidi controls, zero-width and other invisible characters."""
    return _INVISIBLE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def neutralize_mentions(text: str) -> str:
    """`@name` -> `@\u200bname` (renders the same, notifies nobody); e-mail addresses stay."""
    return _MENTION.sub("@" + ZWSP, text)
