"""Links off the repository made inert text.

`defuse_links` (a separate step from `bot.safety.markdown`: it needs the repository, and
runs on the composed comment) guarantees that no link leads off the repository on its
GitHub host: Markdown links `[text](url)` elsewhere become `text (host/path)`, reference
definitions `[ref]: url` become plain text (so `[text][ref]` stays text), and bare URLs and
`<url>` autolinks lose their scheme (`www.` gets a zero-width space), so GitHub's
autolinker finds nothing. Links to `https://github.com/OWNER/REPO/...` stay links. Fenced
code is left verbatim; in inline code the same syntax is broken with invisible zero-width
spaces instead. What replaces a link starts no block (`[## x](u)` leaves no heading:
`bot.safety.blocks`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from bot.safety import MAX_PASSES, ZWSP, neutralize_mentions
from bot.safety.blocks import escape_lead
from bot.safety.fences import FENCE_LIKE, segments
from bot.safety.html import AFTER_LT

__all__ = ["defuse_links"]

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
    return dest.strip().removeprefix("<").removesuffix(">").removeprefix(ZWSP)


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
    out = escape_lead(out, every_line=every_line)
    if not out:  # nothing left: the rest of the line must not become a rule (`- http://`)
        return ZWSP
    if before == "<" and re.match(AFTER_LT, out):
        return ZWSP + out
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
            emit(m.group("www")[:-1] + ZWSP + ".")
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
            emit(ZWSP)
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
        out.append(_CODE_BREAKS.sub(ZWSP, text[start:end]))
        last = end
    out.append(_defuse_prose(text[last:], links))
    # Taking a scheme or a link's brackets off the start of a line can leave a fence there.
    return FENCE_LIKE.sub(lambda m: m.group(1) + "\\", "".join(out))


def _defuse_once(text: str, links: _Links) -> str:
    return "\n".join(
        piece if is_code else _defuse_pieces(piece, links) for is_code, piece in segments(text)
    )


def _break_all(text: str) -> str:
    """Every link syntax outside fenced code broken by zero-width spaces: settles at once."""
    return "\n".join(
        piece if is_code else _CODE_BREAKS.sub(ZWSP, piece) for is_code, piece in segments(text)
    )


def defuse_links(text: str, repo: str | None, *, host: str = "github.com") -> str:
    """Links (Markdown, reference-style, autolinks, bare URLs) that do not point into
    `https://{host}/{repo}` made inert text; `repo` None: every link (see the module
    docstring). Meant for text `sanitize_markdown` already made safe; applying it again
    changes nothing."""
    links = _links(repo, host)
    # What is left once a link is taken apart can form another (`<http://[x]:> //h` leaves
    # a definition), so go on until nothing changes.
    for _ in range(MAX_PASSES):
        out = _defuse_once(text, links)
        if out == text:
            return out
        text = out
    return _break_all(text)
