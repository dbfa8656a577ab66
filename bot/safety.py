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

`defuse_links` (a separate step: it needs the repository, and runs on the composed comment)
guarantees that no link leads off the repository on its GitHub host: Markdown links
`[text](url)` elsewhere become `text (host/path)`, reference definitions `[ref]: url` become
plain text (so `[text][ref]` stays text), and bare URLs and `<url>` autolinks lose their
scheme (`www.` gets a zero-width space), so GitHub's autolinker finds nothing. Links to
`https://github.com/OWNER/REPO/...` stay links. Fenced code is left verbatim; in inline code
the same syntax is broken with invisible zero-width spaces instead.

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
    "defuse_links",
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


# --- links -------------------------------------------------------------------------------------

_SCHEME = r"[A-Za-z][A-Za-z0-9+.-]{0,31}"
_LINK_TEXT = r"(?:\\.|[^\[\]\\]|\[(?:\\.|[^\[\]\\])*\])*"
_INLINE_LINK = re.compile(
    rf"(?<!\\)\[(?P<text>{_LINK_TEXT})\]\(\s*"
    r"(?P<dest><[^<>\n]*>|(?:\\.|[^\s()\\]|\((?:\\.|[^\s()\\])*\))*)"
    r"(?:\s+(?P<title>\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|\((?:\\.|[^()\\])*\)))?\s*\)"
)
# `[label]: destination`, anywhere: a false match only gains a backslash that renders as
# nothing, while a missed definition would leave `[text][label]` a live link.
_DEFINITION = re.compile(
    r"(?<!\\)\[(?P<label>(?:\\.|[^\[\]\\])+)\]:[ \t]*\n?[ \t]*(?P<dest><[^<>\n]*>|\S*)"
)
_AUTOLINK = re.compile(rf"<\u200b?(?P<url>{_SCHEME}:[^\s<>]*)>")
_LINK_OPEN = re.compile(r"\](?=\(\s*<?\u200b?(?P<dest>[^\s)>]*))")
# GitHub's autolinker takes the letters before `://` as the scheme (`1http://x` links
# `http://x`), so a scheme here starts after anything but a letter, however long it is.
_BARE = re.compile(
    r"(?P<url>(?<![A-Za-z])[A-Za-z][A-Za-z0-9+.-]*://[^\s<]*)|(?P<www>(?<![A-Za-z0-9.-])www\.)",
    re.IGNORECASE,
)
_PROTOCOL_RELATIVE = re.compile(r"^(?:" + _SCHEME + r":)?//")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)\1(?!`)", re.DOTALL)
_CODE_BREAKS = re.compile(r"(?<=[A-Za-z0-9+.-])(?=://)|(?<=\bwww)(?=\.)|(?<=\])(?=[(:])", re.I)
# A path that could climb out of the repository once a browser or server normalizes it.
_CLIMBS = re.compile(r"%2[ef]|%5c|/\.{1,2}(?:[/?#]|$)", re.IGNORECASE)
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class _Links:
    """Which destinations may stay links: the repository's pages on its host."""

    prefix: re.Pattern[str] | None

    def allowed(self, url: str) -> bool:
        # Punctuation that ends a sentence is not part of a bare URL for GitHub either.
        url = url.rstrip(".,:;!?*_~'\")]>")
        if self.prefix is None or "\\" in url or _CLIMBS.search(url):
            return False
        return self.prefix.fullmatch(url) is not None


def _links(repo: str | None, host: str) -> _Links:
    if repo is None or not _REPO_NAME.fullmatch(repo):
        return _Links(None)
    # `OWNER/REPO`, then nothing, a path, a query or a fragment; not `OWNER/REPO-x`.
    prefix = rf"https://{re.escape(host)}/{re.escape(repo)}(?:[/?#]\S*)?"
    return _Links(re.compile(prefix, re.IGNORECASE))


def _shown_url(dest: str) -> str:
    """A destination without its angle brackets (and the zero-width space that
    `sanitize_markdown` puts after a `<`)."""
    return dest.strip().removeprefix("<").removesuffix(">").removeprefix(_ZWSP)


def _shown(dest: str) -> str:
    """Where a link pointed, as text: no angle brackets, no scheme."""
    return _PROTOCOL_RELATIVE.sub("", _shown_url(dest))


def _defuse_inline_links(text: str, links: _Links) -> str:
    def replace(m: re.Match[str]) -> str:
        dest = m.group("dest")
        if links.allowed(_shown_url(dest)):
            return m.group(0)
        label = _defuse_inline_links(m.group("text"), links).strip()
        shown = _shown(dest)
        if not shown or _shown(label) == shown:
            return _joined(m, label or shown)
        return _joined(m, f"{label} ({shown})" if label else shown)

    return _INLINE_LINK.sub(replace, text)


def _defuse_prose(text: str, links: _Links) -> str:
    text = _defuse_inline_links(text, links)
    text = _DEFINITION.sub(
        lambda m: m.group(0) if links.allowed(_shown_url(m.group("dest"))) else "\\" + m.group(0),
        text,
    )
    text = _AUTOLINK.sub(
        lambda m: (
            m.group("url") if links.allowed(m.group("url")) else _joined(m, _shown(m.group("url")))
        ),
        text,
    )
    # Whatever `](` is left (a link the patterns above could not parse) stays text.
    text = _LINK_OPEN.sub(
        lambda m: "]" if links.allowed(m.group("dest")) else "]\\",
        text,
    )
    text = _defuse_bare(text, links)
    # Taking syntax out can join what is left into a mention (`@<http://x>`).
    return neutralize_mentions(text)


def _joined(m: re.Match[str], out: str) -> str:
    """`out`, to replace `m`, made unable to join the character before it into a tag
    (`<` + `[b]()`) or an image (`!` + `<http://[a](b)>`): the text around is not ours to
    change (the comment's own HTML is in it)."""
    before = m.string[m.start() - 1 : m.start()]
    if before == "<" and re.match(r"[A-Za-z/!?]", out):
        return _ZWSP + out
    if before == "!" and out.startswith("["):
        return "\\" + out
    return out


def _defuse_bare(text: str, links: _Links) -> str:
    def replace(m: re.Match[str]) -> str:
        url = m.group("url")
        if url is None:
            return m.group("www")[:-1] + _ZWSP + "."
        if links.allowed(url):
            # After an `&` (an entity, `&lt;`, may end the URL for GitHub) the rest is text.
            kept, amp, rest = url.partition("&")
            return kept + (_defuse_bare(amp + rest, links) if amp else "")
        return _joined(m, _defuse_bare(url.split("://", 1)[1], links))

    return _BARE.sub(replace, text)


def _defuse_pieces(text: str, links: _Links) -> str:
    """Prose is rewritten; inline code only gets invisible breaks (if GitHub sees it as
    code it renders no link anyway, and if not, the breaks still stop one)."""
    out: list[str] = []
    last = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_defuse_prose(text[last : m.start()], links))
        out.append(_CODE_BREAKS.sub(_ZWSP, m.group(0)))
        last = m.end()
    out.append(_defuse_prose(text[last:], links))
    # Taking a scheme or a link's brackets off the start of a line can leave a fence there.
    return _FENCE_LIKE.sub(lambda m: m.group(1) + "\\", "".join(out))


def _defuse_once(text: str, links: _Links) -> str:
    return "\n".join(
        piece if is_code else _defuse_pieces(piece, links) for is_code, piece in _segments(text)
    )


def _break_all(text: str) -> str:
    """Every link syntax outside fenced code broken by zero-width spaces: settles at once."""
    return "\n".join(
        piece if is_code else _CODE_BREAKS.sub(_ZWSP, piece) for is_code, piece in _segments(text)
    )


def defuse_links(text: str, repo: str | None, *, host: str = "github.com") -> str:
    """Links (Markdown, reference-style, autolinks, bare URLs) that do not point into
    `https://{host}/{repo}` made inert text; `repo` None: every link (see the module
    docstring). Meant for text `sanitize_markdown` already made safe; applying it again
    changes nothing."""
    links = _links(repo, host)
    # What is left once a link is taken apart can form another (`<http://[x]:> //h` leaves
    # a definition), so go on until nothing changes.
    for _ in range(_MAX_PASSES):
        out = _defuse_once(text, links)
        if out == text:
            return out
        text = out
    return _break_all(text)
