"""Untrusted model Markdown made safe to publish.

`sanitize_markdown` guarantees, for the text it returns:
- no `@mention` or `@org/team` notifies anyone (a zero-width space follows the `@`; e-mail
  addresses are left alone);
- no image renders and no raw HTML renders (`bot.safety.html`);
- no `<!--` survives, not even in code, so the sticky comment's marker (an HTML comment,
  `bot.render.markdown.COMMENT_MARKER`) cannot be forged;
- no bidi override or invisible character survives (they can disguise text);
- every fenced code block is closed, so the text cannot swallow what follows it; only
  fenced blocks are kept verbatim (`bot.safety.fences`);
- applying it again changes nothing.

Model text must not pass for the product's own words either (`bot.safety.blocks`):
- `sanitize_inline` (a table cell, a list item) starts no block even at the start of a
  line: a leading `#`, `>`, `|`, `<`, fence or rule (`---`, `===`, `|--|`), also after a
  list marker (`- ## x`), gets a backslash, which renders as nothing;
- `quote_markdown` (prose of several lines) is a block quote, `>` on every line, in which
  no line starts a heading, table, rule, setext underline, fence, HTML block or nested
  quote; emphasis, code spans and lists stay.
"""

from __future__ import annotations

from bot.safety import MAX_PASSES, ZWSP, neutralize_mentions, strip_invisible
from bot.safety.blocks import neutralize_line
from bot.safety.fences import FENCE_LIKE, segments
from bot.safety.html import defuse_html

__all__ = ["quote_markdown", "sanitize_inline", "sanitize_markdown"]


def _sanitize_prose(text: str) -> str:
    text = defuse_html(text)
    text = FENCE_LIKE.sub(lambda m: m.group(1) + "\\", text)
    return neutralize_mentions(text)


def _sanitize_code(text: str) -> str:
    # Code renders verbatim, so only an HTML comment opener needs breaking: the sticky
    # comment is found by searching the raw body for its marker, an HTML comment.
    return text.replace("<!--", "<" + ZWSP + "!--")


def _pass(text: str) -> str:
    text = strip_invisible(text)
    return "\n".join(
        _sanitize_code(piece) if is_code else _sanitize_prose(piece)
        for is_code, piece in segments(text)
    )


def sanitize_markdown(text: str) -> str:
    """Make untrusted model Markdown safe to publish (see the module docstring)."""
    for _ in range(MAX_PASSES):
        out = _pass(text)
        if out == text:
            return out
        text = out
    # Not settled: treat everything as prose, which settles in one pass.
    return _sanitize_prose(strip_invisible(text))


def sanitize_inline(text: str) -> str:
    """One line of safe Markdown for a table cell or a list item: no code is trusted, and
    it starts no block even at the start of a line (`- ## x` is no heading)."""
    return neutralize_line(" ".join(_sanitize_prose(strip_invisible(text)).split()))


def quote_markdown(text: str) -> str:
    """Untrusted multi-line Markdown as a block quote: every line starts `>`, and inside
    the quote no line starts a block of its own (see `neutralize_line`), so no heading,
    table, rule, fence, HTML or nested quote of the text can pass for the product's.

    All of it is prose (sanitized as such, fences escaped): a fenced block inside the quote
    would be a block the text opened. Inline emphasis, code spans and lists stay."""
    prose = _sanitize_prose(strip_invisible(text).strip("\n"))
    lines = [neutralize_line(line.rstrip()) for line in prose.split("\n")]
    return "\n".join(f"> {line}" if line.strip() else ">" for line in lines)
