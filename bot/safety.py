"""Untrusted text (model output, repository config) made safe to publish on GitHub.

A leaf: standard library only, importing nothing of ours, so every package may use it.

`sanitize_markdown` guarantees, for the text it returns:
- no `@mention` or `@org/team` notifies anyone (a zero-width space follows the `@`; e-mail
  addresses are left alone);
- no image renders and no raw HTML renders: HTML comments are removed, tags GitHub would
  render are removed (their text kept), and every other `<` that could open HTML or an
  e-mail autolink (`<x`, `</`, `<!`, `<?`, `<0@host>`) gets a zero-width space after it,
  so `Vec<T>` still reads as `Vec<T>`;
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

Model text must not pass for the product's own words either:
- `sanitize_inline` (a table cell, a list item) starts no block even at the start of a
  line: a leading `#`, `>`, `|`, `<`, fence or rule (`---`, `===`, `|--|`), also after a
  list marker (`- ## x`), gets a backslash, which renders as nothing;
- `quote_markdown` (prose of several lines) is a block quote, `>` on every line, in which
  no line starts a heading, table, rule, setext underline, fence, HTML block or nested
  quote; emphasis, code spans and lists stay;
- `defuse_links` escapes the same in what replaces a link (`[## x](u)` leaves no heading).

Every function here takes time linear in its input (no pattern reads ahead from each of
many starting points: a megabyte of `<!--`, `![`, `](`, `a://` or backticks is no slower
per byte than prose); tests/unit/safety/test_linear_time.py holds them to it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = [
    "defuse_links",
    "neutralize_mentions",
    "quote_markdown",
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
# What a `<` can open: a tag, a comment, a declaration, a processing instruction, or an
# e-mail autolink (`<0@host>` is a `mailto:` link), whose address may start with any of
# these.
# What may follow a "<" in a tag, a comment, a declaration or an e-mail autolink.
_AFTER_LT = r"[A-Za-z0-9/!?.#$%&'*+=^_`{|}~-]"
# A "<" that opens a tag, a comment or a declaration, or an e-mail autolink ("<0@host>");
# "<=2" or "a < b" stays. Each look-ahead stops at the next "<": linear on the whole.
_HTML_OPEN = re.compile(r"<(?=[A-Za-z/!?]|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@)")
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


def _block_end(lines: list[str], start: int, fence: _Fence) -> tuple[int, bool | None]:
    """Index of the closing line (or len(lines) if unclosed) and whether it closed.

    None instead of a bool when the line at the index is indented less than the opener:
    then the block may end early on GitHub (a list item closing), so it is not trusted as
    code, and neither is any fence between (`_segments` goes on from that line, so every
    line is looked at a bounded number of times).
    """
    for j in range(start + 1, len(lines)):
        if fence.closes(lines[j]):
            return j, True
        if lines[j].strip() and _indent(lines[j]) < fence.indent:
            return j, None
    return len(lines), False


def _segments(text: str) -> list[tuple[bool, str]]:
    """Split into (is_code, text) pieces; code pieces are whole, closed fenced blocks."""
    lines = text.split("\n")
    pieces: list[tuple[bool, str]] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if m is None:
            prose.append(lines[i])
            i += 1
            continue
        fence = _Fence(len(m.group(1)), m.group(2)[0], len(m.group(2)))
        stop, closed = _block_end(lines, i, fence)
        if closed is None:  # not trusted: prose up to the line that cut it short
            prose += lines[i:stop]
            i = stop
            continue
        if prose:
            pieces.append((False, "\n".join(prose)))
            prose = []
        block = lines[i : stop + 1] if closed else [*lines[i:stop], fence.closer()]
        pieces.append((True, "\n".join(block)))
        i = stop + 1
    if prose or not pieces:
        pieces.append((False, "\n".join(prose)))
    return pieces


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
    """One line of safe Markdown for a table cell or a list item: no code is trusted, and
    it starts no block even at the start of a line (`- ## x` is no heading)."""
    return _neutralize_line(" ".join(_sanitize_prose(strip_invisible(text)).split()))


def quote_markdown(text: str) -> str:
    """Untrusted multi-line Markdown as a block quote: every line starts `>`, and inside
    the quote no line starts a block of its own (see `_neutralize_line`), so no heading,
    table, rule, fence, HTML or nested quote of the text can pass for the product's.

    All of it is prose (sanitized as such, fences escaped): a fenced block inside the quote
    would be a block the text opened. Inline emphasis, code spans and lists stay."""
    prose = _sanitize_prose(strip_invisible(text).strip("\n"))
    lines = [_neutralize_line(line.rstrip()) for line in prose.split("\n")]
    return "\n".join(f"> {line}" if line.strip() else ">" for line in lines)


# --- block starts ------------------------------------------------------------------------------

# One list marker (`-`, `+`, `*`, `1.`, `1)` followed by a blank), after indentation: a
# list item's content can start a block again (`- ## x`).
_MARKER = re.compile(r"[ \t]*+(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t]|$)")
# Thematic breaks, setext underlines and table delimiter rows (`---`, `* * *`, `===`,
# `|:--|--|`) are nothing but these characters; the match is the last other character.
_NOT_RULE = re.compile(r"[^-*_=+:| \t][-*_=+:| \t]*+$")
# ATX heading, block quote, HTML block, table row, fence.
_OPENS_BLOCK = re.compile(r"[#>|<]|`{3}|~{3}")
_CONTAINER = re.compile(r"(?:[ \t]*+>)*+[ \t]*+")
_ORDERED = re.compile(r"[0-9]{1,9}(?=[.)](?:[ \t]|$))")


def _neutralize_line(line: str) -> str:
    """`line` unable to start a heading, a quote, a table, a rule, a setext underline, a
    fence or an HTML block, also inside the list items it may open (`1. * * *`): a
    backslash before the character that would (it renders as nothing, wherever the line
    lands). Linear: where the rule characters run to the end is found once."""
    other = _NOT_RULE.search(line)
    rule_from = other.start() + 1 if other else 0  # from here on, only rule characters
    text_end = len(line.rstrip(" \t"))
    at = 0
    while True:
        if at >= rule_from and text_end > at:  # the rest is a rule, underline or delimiter
            at = _after_blanks(line, at)
            return line[:at] + "\\" + line[at:]
        marker = _MARKER.match(line, at)
        if marker is None:
            break
        at = marker.end()
    at = _after_blanks(line, at)
    if _OPENS_BLOCK.match(line, at):
        return line[:at] + "\\" + line[at:]
    return line


def _after_blanks(line: str, at: int) -> int:
    while at < len(line) and line[at] in " \t":
        at += 1
    return at


def _escape_lead(text: str, *, every_line: bool = True) -> str:
    """`text`, which replaces a link and may land at the start of a line, unable to start a
    block there: a list marker is escaped too (`1\\.`, `\\-`), then whatever `_neutralize_line`
    escapes. With `every_line`, every later line of it (a link's text may span lines) gets
    the same after its quote markers."""
    first, newline, tail = text.partition("\n")
    if not every_line:
        return _escape_start(first) + newline + tail
    rest = tail.split("\n") if newline else []
    lines = [_escape_start(first)]
    for line in rest:
        at = _CONTAINER.match(line)
        cut = at.end() if at else 0
        lines.append(line[:cut] + _escape_start(line[cut:]))
    return "\n".join(lines)


def _escape_start(line: str) -> str:
    ordered = _ORDERED.match(line)
    if ordered:
        return line[: ordered.end()] + "\\" + line[ordered.end() :]
    if re.match(r"[-+*](?:[ \t]|$)", line):
        return "\\" + line
    return _neutralize_line(line)


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
# `](`: its destination (up to `_LINK_END`) is looked at by `_Tokens`.
_LINK_OPEN = re.compile(r"\]\(\s*<?\u200b?")
_LINK_END = re.compile(r"[\s)>]")
# GitHub's autolinker takes the letters before `://` as the scheme (`1http://x` links
# `http://x`), so a scheme here starts at the first letter of a run of scheme characters,
# however long it is. Each run is tried once, from its start (possessive: no backtracking),
# and the URL (up to `_URL_END`) is not read here: a run of `a.a.a` or `a://a://` is linear.
_BARE = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<pre>[0-9+.-]*+)(?P<url>[A-Za-z][A-Za-z0-9+.-]*+)://"
    r"|(?P<www>(?<![A-Za-z0-9.-])www\.)",
    re.IGNORECASE,
)
_URL_END = re.compile(r"[\s<]")
_PROTOCOL_RELATIVE = re.compile(r"^(?:" + _SCHEME + r":)?//")
_TICKS = re.compile(r"`+")
_BLANK_LINE = re.compile(r"\n[ \t]*+(?=\n)")
_CODE_BREAKS = re.compile(r"(?<=[A-Za-z0-9+.-])(?=://)|(?<=\bwww)(?=\.)|(?<=\])(?=[(:])", re.I)
# A path that could climb out of the repository once a browser or server normalizes it.
_CLIMBS = re.compile(r"%2[ef]|%5c|/\.{1,2}(?:[/?#]|$)", re.IGNORECASE)
_CLIMBS_AT = re.compile(r"(?=%2[ef]|%5c|/\.{1,2}(?:[/?#]|$))", re.IGNORECASE)
_URL_TAIL = ".,:;!?*_~'\")]>"  # punctuation after a URL that is not part of it
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class _Links:
    """Which destinations may stay links: the repository's pages on its host."""

    prefix: re.Pattern[str] | None
    # The same prefix, matched at the start of a URL only (`_Tokens`).
    head: re.Pattern[str] | None = None

    def allowed(self, url: str) -> bool:
        # Punctuation that ends a sentence is not part of a bare URL for GitHub either.
        url = url.rstrip(_URL_TAIL)
        if self.prefix is None or "\\" in url or _CLIMBS.search(url):
            return False
        return self.prefix.fullmatch(url) is not None


def _links(repo: str | None, host: str) -> _Links:
    if repo is None or not _REPO_NAME.fullmatch(repo):
        return _Links(None)
    # `OWNER/REPO`, then nothing, a path, a query or a fragment; not `OWNER/REPO-x`.
    start = rf"https://{re.escape(host)}/{re.escape(repo)}"
    return _Links(
        re.compile(start + r"(?:[/?#]\S*)?", re.IGNORECASE),
        re.compile(start + r"(?=[/?#]|$)", re.IGNORECASE),
    )


class _Tokens:
    """`_Links.allowed` for the URLs of one text that start at increasing positions and
    end at the first `end` character: in linear time.

    Every URL starting inside one run of non-`end` characters ends where the run ends, so
    the run is read once, from the first URL in it: where it ends, where it ends without
    its trailing punctuation, and the last backslash or climbing step in it. A URL starting
    later in the run is allowed when the repository's prefix matches at its start and
    nothing bad comes at or after it (`_Links.allowed` on that URL, without reading it)."""

    def __init__(self, text: str, end: re.Pattern[str], links: _Links) -> None:
        self.text, self.end, self.links = text, end, links
        self.stop = -1  # where the current run ends
        self.trimmed = -1  # ... without its trailing punctuation
        self.last_bad = -1  # the last backslash or climbing step before `trimmed`

    def token_end(self, start: int) -> int:
        """Where the URL starting at `start` ends."""
        if start >= self.stop:
            m = self.end.search(self.text, start)
            self.stop = m.start() if m else len(self.text)
            trimmed = self.stop
            while trimmed > start and self.text[trimmed - 1] in _URL_TAIL:
                trimmed -= 1
            self.trimmed = trimmed
            climbs = [m.start() for m in _CLIMBS_AT.finditer(self.text, start, trimmed)]
            self.last_bad = max(self.text.rfind("\\", start, trimmed), *climbs, -1)
        return self.stop

    def allowed(self, start: int) -> bool:
        if self.links.head is None:
            return False
        self.token_end(start)
        if self.last_bad >= start:
            return False
        return self.links.head.match(self.text, start, self.trimmed) is not None


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


def _break_link_opens(text: str, links: _Links) -> str:
    """Whatever `](` is left (a link the patterns could not parse) stays text: `]\\(`."""
    tokens = _Tokens(text, _LINK_END, links)
    out: list[str] = []
    last = 0
    for m in _LINK_OPEN.finditer(text):
        if not tokens.allowed(m.end()):
            out += [text[last : m.start() + 1], "\\"]
            last = m.start() + 1
    out.append(text[last:])
    return "".join(out)


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
    text = _break_link_opens(text, links)
    text = _defuse_bare(text, links)
    # Taking syntax out can join what is left into a mention (`@<http://x>`).
    return neutralize_mentions(text)


def _joined(m: re.Match[str], out: str) -> str:
    return _joined_to(m.string[m.start() - 1 : m.start()], out)


def _joined_to(before: str, out: str, *, every_line: bool = True) -> str:
    """`out`, to replace what followed `before`, made unable to start a block should it
    land at the start of a line (`[## x](u)` must not leave a heading), and unable to join
    the character before it into a tag (`<` + `[b]()`) or an image (`!` +
    `<http://[a](b)>`): the text around is not ours to change (the comment's own HTML is
    in it). `every_line`: `out` is all replacement (not text that follows one)."""
    out = _escape_lead(out, every_line=every_line)
    if not out:  # nothing left: the rest of the line must not become a rule (`- http://`)
        return _ZWSP
    if before == "<" and re.match(_AFTER_LT, out):
        return _ZWSP + out
    if before == "!" and out.startswith("["):
        return "\\" + out
    return out


def _defuse_bare(text: str, links: _Links) -> str:
    """Bare URLs lose their scheme (those into the repository stay, up to an `&`: an entity
    such as `&lt;` may end the URL for GitHub, so the rest is text), `www.` gets a
    zero-width space. What is left of a URL after its scheme is text again, read on in the
    same pass: it may hold another scheme (`http://http://x`) or `www.`."""
    tokens = _Tokens(text, _URL_END, links)
    out: list[str] = []
    pos = 0
    rest_at = 0  # where the text read as its own starts (after a scheme taken off)
    before: str | None = None  # the character before a URL whose scheme was taken off

    def emit(piece: str) -> None:
        nonlocal before
        if before is not None and piece:
            # `piece` is what follows a scheme taken off: only its first line is the URL's.
            piece, before = _joined_to(before, piece, every_line=False), None
        out.append(piece)

    while m := _BARE.search(text, pos):
        emit(text[pos : m.start()])
        if m.group("www"):
            emit(m.group("www")[:-1] + _ZWSP + ".")
            pos = m.end()
            continue
        emit(m.group("pre"))
        start = m.start("url")
        if tokens.allowed(start):
            end = tokens.token_end(start)
            amp = text.find("&", start, end)
            pos = end if amp < 0 else amp
            emit(text[start:pos])
            continue
        if start > rest_at or before is None:
            before = text[start - 1 : start] if start > rest_at else ""
        pos = rest_at = m.end()
        if _URL_END.match(text, pos) or pos == len(text):  # nothing after the scheme
            emit(_ZWSP)
    emit(text[pos:])
    return "".join(out)


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Where CommonMark's code spans are: a run of backticks up to the next run of the
    same length, within one paragraph (no blank line between). Found in linear time: the
    first later run of the same length is the only candidate."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text)]
    blanks = [m.start() for m in _BLANK_LINE.finditer(text)]
    following: list[int | None] = [None] * len(runs)
    last: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        following[i] = last.get(length)
        last[length] = i
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        j = following[i]
        if j is not None:
            blank = bisect.bisect_left(blanks, runs[i][1])
            if blank == len(blanks) or blanks[blank] >= runs[j][0]:
                spans.append((runs[i][0], runs[j][1]))
                i = j + 1
                continue
        i += 1
    return spans


def _defuse_pieces(text: str, links: _Links) -> str:
    """Prose is rewritten; inline code only gets invisible breaks (if GitHub sees it as
    code it renders no link anyway, and if not, the breaks still stop one)."""
    out: list[str] = []
    last = 0
    for start, end in _code_spans(text):
        out.append(_defuse_prose(text[last:start], links))
        out.append(_CODE_BREAKS.sub(_ZWSP, text[start:end]))
        last = end
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
