"""Untrusted text (model output, repository config) made safe to publish on GitHub.

A leaf: standard library only, importing nothing of ours, so every package may use it.

`sanitize_markdown` guarantees, for the text it returns:
- no `@mention` or `@org/team` notifies anyone (a zero-width space follows the `@`; e-mail
  addresses are left alone);
- no image renders and no raw HTML renders: HTML comments are removed, tags GitHub would
  render are removed (their text kept), and every other `<` that could open HTML (`<x`, `</`,
  `<!`, `<?`) gets a zero-width space after it, so `Vec<T>` still reads as `Vec<T>`;
- no `<!--` survives, not even in code, so the sticky comment's marker (an HTML comment,
  `bot.render.markdown.COMMENT_MARKER`) cannot be forged;
- no bidi override or invisible character survives (they can disguise text);
- every fenced code block is closed, so the text cannot swallow what follows it;
- applying it again changes nothing.

Code is kept verbatim only in fenced blocks whose every line is indented at least as much
as the opening fence: GitHub then sees the same block whatever container the text lands
in. Everything else, inline code included, is treated as prose: pairing of inline code
spans depends on block structure this module does not parse, and guessing it wrong would
let HTML through. The cost is cosmetic (`<b>` inside an inline code span disappears).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "neutralize_mentions",
    "sanitize_html_text",
    "sanitize_inline",
    "sanitize_markdown",
    "strip_invisible",
]

_ZWSP = "\u200b"
# Bidi embeddings/overrides/isolates, zero-width and other invisible formatting characters,
# Unicode tag characters (used to smuggle invisible text), C0/C1 controls except \t and \n.
# U+200D (zero-width joiner) is kept: emoji sequences need it and it cannot hide a mention.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200e\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0e\ufeff\uffa0\ufff9-\ufffb"
    "\U000e0000-\U000e007f\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)
# Tags GitHub renders (its sanitizer's allowlist and then some): removed, text kept.
_RENDERED_TAGS = (
    "a|abbr|address|article|aside|audio|b|bdi|bdo|big|blink|blockquote|body|br|button|"
    "caption|center|cite|code|col|colgroup|dd|del|details|dfn|dialog|div|dl|dt|em|embed|"
    "fieldset|figcaption|figure|font|footer|form|frame|frameset|h[1-6]|head|header|hr|html|"
    "i|iframe|img|input|ins|kbd|label|legend|li|link|main|mark|marquee|math|meta|meter|nav|"
    "noscript|object|ol|optgroup|option|output|p|param|picture|pre|progress|q|rp|rt|ruby|"
    "s|samp|script|section|select|small|source|span|strike|strong|style|sub|summary|sup|svg|"
    "table|tbody|td|template|textarea|tfoot|th|thead|time|title|tr|track|tt|u|ul|var|video|wbr"
)
_HTML_COMMENT = re.compile(r"<!--.*?-->|<!-{2,3}>", re.DOTALL)
_TAG = re.compile(
    rf"</?(?:{_RENDERED_TAGS})(?=[\s/>])(?:[^<>\"']|\"[^\"]*\"|'[^']*')*>", re.IGNORECASE
)
_IMAGE = re.compile(r"!\[([^\]\n]*)\](?:\([^)\n]*\)|\[[^\]\n]*\])?")
_HTML_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
_BANG_BRACKET = re.compile(r"!(?=\[)")
_MENTION = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9])")
_FENCE_LIKE = re.compile(r"^([ \t]*(?:>[ \t]*)*)(?=`{3}|~{3})", re.MULTILINE)
_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}(?=[^`]*$)|~{3,})")
_MAX_PASSES = 4
# Removal rounds before giving up on pathological nesting ("<<<b>b>b>") and escaping all.
_MAX_REMOVALS = 16


def strip_invisible(text: str) -> str:
    """Normalize newlines and drop bidi controls, zero-width and other invisible characters."""
    return _INVISIBLE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def neutralize_mentions(text: str) -> str:
    """`@name` -> `@\u200bname` (renders the same, notifies nobody); e-mail addresses stay."""
    return _MENTION.sub("@" + _ZWSP, text)


def _indent(line: str) -> int:
    """Leading indentation in columns, tabs to the next multiple of 4 (as CommonMark)."""
    col = 0
    for ch in line:
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
    return col


@dataclass(frozen=True)
class _Fence:
    indent: int
    char: str
    length: int

    def closes(self, line: str) -> bool:
        # CommonMark measures a closer's indent from the container; accepting up to the
        # opener's indent + 3 closes no later than GitHub would (closing early is safe).
        rest = line.strip(" \t")
        return (
            _indent(line) <= self.indent + 3
            and len(rest) >= self.length
            and rest == self.char * len(rest)
        )

    def closer(self) -> str:
        return " " * self.indent + self.char * self.length


def _block_end(lines: list[str], start: int, fence: _Fence) -> tuple[int, bool] | None:
    """Index of the closing line (or len(lines) if unclosed) and whether it closed.

    None when a content line is indented less than the opener: then the block may end
    early on GitHub (a list item closing), so it is not trusted as code.
    """
    for j in range(start + 1, len(lines)):
        if fence.closes(lines[j]):
            return j, True
        if lines[j].strip() and _indent(lines[j]) < fence.indent:
            return None
    return len(lines), False


def _segments(text: str) -> list[tuple[bool, str]]:
    """Split into (is_code, text) pieces; code pieces are whole, closed fenced blocks."""
    lines = text.split("\n")
    pieces: list[tuple[bool, str]] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        end = None
        if m:
            fence = _Fence(len(m.group(1)), m.group(2)[0], len(m.group(2)))
            end = _block_end(lines, i, fence)
        if m is None or end is None:
            prose.append(lines[i])
            i += 1
            continue
        if prose:
            pieces.append((False, "\n".join(prose)))
            prose = []
        stop, closed = end
        block = lines[i : stop + 1] if closed else [*lines[i:stop], fence.closer()]
        pieces.append((True, "\n".join(block)))
        i = stop + 1
    if prose or not pieces:
        pieces.append((False, "\n".join(prose)))
    return pieces


def _remove_html(text: str) -> str:
    # Removing one construct can join its neighbours into a new one ("<<b>img>"), so
    # repeat until nothing more is found.
    for _ in range(_MAX_REMOVALS):
        out = _HTML_COMMENT.sub("", text)
        out = _TAG.sub("", out)
        out = _IMAGE.sub(lambda m: m.group(1), out)
        if out == text:
            return out
        text = out
    # An entity never turns back into a "<", so this settles for good.
    return text.replace("<", "&lt;")


def _sanitize_prose(text: str) -> str:
    text = _remove_html(text)
    text = _HTML_OPEN.sub("<" + _ZWSP, text)
    text = _BANG_BRACKET.sub("!\\\\", text)
    text = _FENCE_LIKE.sub(lambda m: m.group(1) + "\\", text)
    return neutralize_mentions(text)


def _sanitize_code(text: str) -> str:
    # Code renders verbatim, so only an HTML comment opener needs breaking: the sticky
    # comment is found by searching the raw body for its marker, an HTML comment.
    return text.replace("<!--", "<" + _ZWSP + "!--")


def _pass(text: str) -> str:
    text = strip_invisible(text)
    return "\n".join(
        _sanitize_code(piece) if is_code else _sanitize_prose(piece)
        for is_code, piece in _segments(text)
    )


def sanitize_markdown(text: str) -> str:
    """Make untrusted model Markdown safe to publish (see the module docstring)."""
    for _ in range(_MAX_PASSES):
        out = _pass(text)
        if out == text:
            return out
        text = out
    # Not settled: treat everything as prose, which settles in one pass.
    return _sanitize_prose(strip_invisible(text))


def sanitize_inline(text: str) -> str:
    """One line of safe Markdown for a table cell or a list item: no code is trusted."""
    return " ".join(_sanitize_prose(strip_invisible(text)).split())


def sanitize_html_text(text: str) -> str:
    """One line of plain text safe inside an HTML element such as `<summary>`."""
    one_line = " ".join(strip_invisible(text).split())
    escaped = one_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return neutralize_mentions(escaped)
