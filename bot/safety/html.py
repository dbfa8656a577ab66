"""HTML out of untrusted text: comments, the tags GitHub would render and images are
removed (their text kept), and every other `<` that could open HTML or an e-mail autolink
(`<x`, `</`, `<!`, `<?`, `<0@host>`) gets a zero-width space after it, so `Vec<T>` still
reads as `Vec<T>`; and plain text made safe inside an HTML element.
"""

from __future__ import annotations

import re

from bot.safety import ZWSP, neutralize_mentions, strip_invisible

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
_RENDERED = frozenset(_RENDERED_TAGS.replace("h[1-6]", "h1|h2|h3|h4|h5|h6").split("|"))
# Any tag (its name checked against `_RENDERED` afterwards); no `<` inside it, not even
# quoted, so an attempt ends at the next `<` (linear), and a tag kept hides no tag inside.
# A tag with a quoted `<` stays, and renders as text: `_HTML_OPEN` breaks its `<`.
_TAG = re.compile(
    r"</?(?P<name>[A-Za-z][A-Za-z0-9]*+)(?=[\s/>])(?:[^<>\"']|\"[^\"<]*\"|'[^'<]*')*>"
)
# No `[` or `(` inside the brackets: each attempt stops at the next one, so a run of `![`
# costs linear time (an image this misses still loses its `!`, `_BANG_BRACKET`).
_IMAGE = re.compile(r"!\[([^\[\]\n]*)\](?:\([^()\n]*\)|\[[^\[\]\n]*\])?")
# What may follow a "<" in a tag, a comment, a declaration or an e-mail autolink.
AFTER_LT = r"[A-Za-z0-9/!?.#$%&'*+=^_`{|}~-]"
# A "<" that opens a tag, a comment or a declaration, or an e-mail autolink ("<0@host>");
# "<=2" or "a < b" stays. Each look-ahead stops at the next "<": linear on the whole.
_HTML_OPEN = re.compile(r"<(?=[A-Za-z/!?]|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@)")
_BANG_BRACKET = re.compile(r"!(?=\[)")
# Removal rounds before giving up on pathological nesting ("<<<b>b>b>") and escaping all.
_MAX_REMOVALS = 16


def _remove_comments(text: str) -> str:
    """HTML comments removed: `<!--` to the next `-->`, or the short `<!-->` and `<!--->`.

    A scan rather than a lazy regex: once no `-->` follows a `<!--`, none follows any later
    one either, so the input is read once (a lazy `.*?` reads to the end from every `<!--`).
    """
    out: list[str] = []
    pos = 0
    closes = True  # whether a `-->` may still follow
    while (start := text.find("<!--", pos)) >= 0:
        close = text.find("-->", start + 4) if closes else -1
        closes = close >= 0
        if close >= 0:
            end = close + 3
        elif text.startswith(("<!-->", "<!--->"), start):
            end = text.index(">", start + 4) + 1
        else:  # not a comment here (its `<` is defused later); look on from the next `<`
            end = -1
        out.append(text[pos : start if end >= 0 else start + 1])
        pos = end if end >= 0 else start + 1
    out.append(text[pos:])
    return "".join(out)


def _drop_tag(m: re.Match[str]) -> str:
    return "" if m.group("name").lower() in _RENDERED else m.group(0)


def _remove_html(text: str) -> str:
    # Removing one construct can join its neighbours into a new one ("<<b>img>"), so
    # repeat until nothing more is found.
    for _ in range(_MAX_REMOVALS):
        out = _remove_comments(text)
        out = _TAG.sub(_drop_tag, out)
        out = _IMAGE.sub(lambda m: m.group(1), out)
        if out == text:
            return out
        text = out
    # An entity never turns back into a "<", so this settles for good.
    return text.replace("<", "&lt;")


def defuse_html(text: str) -> str:
    """No HTML renders: comments, rendered tags and images removed, and every `<` that
    could open HTML, and every `![`, broken."""
    text = _remove_html(text)
    text = _HTML_OPEN.sub("<" + ZWSP, text)
    return _BANG_BRACKET.sub("!\\\\", text)


def sanitize_html_text(text: str) -> str:
    """One line of plain text safe inside an HTML element such as `<summary>`."""
    one_line = " ".join(strip_invisible(text).split())
    escaped = one_line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return neutralize_mentions(escaped)
