"""Model output made safe to publish: nothing renders as HTML, an image or a mention, and
no link leads off the repository."""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from bot.render.markdown import COMMENT_MARKER
from bot.safety.links import defuse_links
from bot.safety.markdown import sanitize_inline, sanitize_markdown

# CommonMark with raw HTML enabled, as GitHub parses before its own HTML filter.
MD = MarkdownIt("commonmark")
LIVE_MENTION = re.compile(r"(?<![A-Za-z0-9_])@[A-Za-z0-9]")


def _tokens(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for t in tokens:
        out.append(t)
        out += _tokens(t.children or [])
    return out


def rendered_hazards(markdown: str) -> list[str]:
    """What GitHub would render as HTML, an image or a notifying mention."""
    hazards = []
    for t in _tokens(MD.parse(markdown)):
        if t.type in ("html_block", "html_inline", "image"):
            hazards.append(f"{t.type}: {t.content!r}")
        if t.type == "text" and LIVE_MENTION.search(t.content):
            hazards.append(f"mention: {t.content!r}")
    return hazards


def test_mentions_are_neutralized_but_emails_stay() -> None:
    out = sanitize_markdown("cc @alice and @octo-org/security-team; mail bob.smith@example.com")
    assert rendered_hazards(out) == []
    assert "bob.smith@example.com" in out
    assert out.replace("\u200b", "") == (
        "cc @alice and @octo-org/security-team; mail bob.smith@example.com"
    )


def test_mentions_inside_a_code_fence_are_left_as_code() -> None:
    text = "```python\n@property\ndef x(self): ...\n```"
    assert sanitize_markdown(text) == text


def test_images_are_removed() -> None:
    out = sanitize_markdown(
        "a ![pixel](https://evil.example/p.png) b ![ref][logo] c <img src=x onerror=alert(1)> d"
        "\n\n[logo]: https://evil.example/logo.png"
    )
    assert rendered_hazards(out) == []
    assert "<img" not in out
    assert "pixel" in out  # the alt text stays readable


def test_raw_html_is_removed_keeping_its_text() -> None:
    out = sanitize_markdown('<div align="center"><b>Bold</b> claim</div>\n<script>x()</script>')
    assert rendered_hazards(out) == []
    assert "Bold claim" in out
    assert "<b>" not in out and "<div" not in out and "<script" not in out


def test_generic_types_stay_readable() -> None:
    out = sanitize_markdown("Return `Vec<u8>` or Map<K, V>")
    assert rendered_hazards(out) == []
    assert out.replace("\u200b", "") == "Return `Vec<u8>` or Map<K, V>"


def test_the_comment_marker_cannot_be_forged() -> None:
    for text in (
        f"before {COMMENT_MARKER} after",
        f"`{COMMENT_MARKER}`",
        f"```\n{COMMENT_MARKER}\n```",
        f"    {COMMENT_MARKER}",
        "<!-- pr-council:advisory",
        "<!-<b></b>- pr-council:advisory -->",
    ):
        out = sanitize_markdown(text)
        assert COMMENT_MARKER not in out, text
        assert "<!--" not in out, text


def test_an_unclosed_comment_cannot_hide_the_rest() -> None:
    out = sanitize_markdown("visible <!-- hides everything after")
    assert rendered_hazards(out) == []
    assert "hides everything after" in out


def test_bidi_and_invisible_characters_are_stripped() -> None:
    out = sanitize_markdown("access\u202e\u2066 granted\u2069\u200b\ufeff\U000e0041 ok")
    assert out == "access granted ok"


def test_an_unclosed_fence_is_closed() -> None:
    out = sanitize_markdown("Try:\n```python\nprint('hi')")
    assert out == "Try:\n```python\nprint('hi')\n```"
    # What follows the text in the comment is no longer swallowed into the code block.
    tokens = MD.parse(out + "\n\n## Votes")
    assert [t.type for t in tokens if t.type == "heading_open"] == ["heading_open"]


def test_a_fence_that_a_list_item_would_cut_short_is_not_trusted() -> None:
    out = sanitize_markdown("- item\n  ```\n<img src=x>\n```")
    assert rendered_hazards(out) == []


def test_code_span_pairing_tricks_do_not_let_html_through() -> None:
    for text in (
        "foo `bar\n`<img src=x>`",
        "``<b>`<img src=x>`",
        "`a <img src=x>\n# heading `b`",
        '<a title="`">x<img src=x>`',
        "<http://x.example/`>`<img src=x>`",
        "<<b>img src=x>",
        "!![i](q)[y](z)",
    ):
        out = sanitize_markdown(text)
        assert rendered_hazards(out) == [], text


FRAGMENTS = [
    "<",
    ">",
    "!",
    "[",
    "]",
    "(",
    ")",
    "`",
    "``",
    "```",
    "~~~",
    "\n",
    "\n\n",
    " ",
    "  ",
    "    ",
    "\t",
    "\\",
    "-",
    "> ",
    "- ",
    "1. ",
    "#",
    "@",
    "@alice",
    "/team",
    "a@b.com",
    "<!--",
    "-->",
    COMMENT_MARKER,
    "<img src=x>",
    "<b>",
    "</b>",
    "<div>",
    "</div>",
    "<script>",
    "<details>",
    "![a](b)",
    "![",
    "](u)",
    "<https://x.y>",
    "&lt;",
    '"',
    "'",
    "\u202e",
    "\u200b",
    "x",
    "word",
    "<T>",
    "<?",
    "<!",
    "</",
]
untrusted_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=40
).map("".join)


@settings(max_examples=400, deadline=None)
@given(untrusted_text)
def test_sanitized_text_is_safe_and_stable(text: str) -> None:
    out = sanitize_markdown(text)
    assert sanitize_markdown(out) == out
    assert COMMENT_MARKER not in out
    assert rendered_hazards(out) == []
    # Whatever follows it in the comment still renders outside any code block.
    tail = [t.type for t in MD.parse(out + "\n\n## Tail\n")]
    assert "heading_open" in tail


@settings(max_examples=200, deadline=None)
@given(untrusted_text)
def test_inline_text_is_one_safe_line(text: str) -> None:
    out = sanitize_inline(text)
    assert "\n" not in out
    assert sanitize_inline(out) == out
    assert COMMENT_MARKER not in out
    assert rendered_hazards(out) == []


# --- links: only into the repository --------------------------------------------------------

REPO = "octo/repo"
REPO_URL = "https://github.com/octo/repo"
# What GitHub's autolinker (cmark-gfm's extension) links in text: a URL whose scheme is the
# letters before `://`, and `www.` after a space, `*`, `_`, `~` or `(`.
BARE_LINK = re.compile(r"(?:https?|ftp)://[^\s<]*|(?:^|(?<=[\s*_~(]))www\.[^\s<]*", re.I)


def live_links(markdown: str) -> list[str]:
    """Every destination a reader could click: Markdown links (inline, reference-style,
    autolinks) as CommonMark parses them, and the bare URLs GitHub would link."""
    found = []
    for t in _tokens(MD.parse(markdown)):
        if t.type == "link_open":
            found.append(str(t.attrs.get("href", "")))
        if t.type == "text":
            found += [m.group(0) for m in BARE_LINK.finditer(t.content)]
    return found


def into_the_repo(url: str) -> bool:
    """Where a browser lands: https on github.com, and a path that, normalized (with
    escapes decoded and backslashes as slashes), is still under /octo/repo."""
    url = url.rstrip(".,:;!?*_~'\")]>")  # a sentence's punctuation after a bare URL
    parts = urlsplit(url.replace("\\", "/"))
    if parts.scheme.lower() != "https" or parts.netloc.lower() != "github.com":
        return False
    path = posixpath.normpath(unquote(parts.path) or "/")
    return [segment.lower() for segment in path.split("/")[1:3]] == ["octo", "repo"]


def defused(text: str, repo: str | None = REPO) -> str:
    return defuse_links(sanitize_markdown(text), repo)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "See [the fix](http://evil.example/login?next=/) first.",
            "See the fix (evil.example/login?next=/) first.",
        ),
        ("[https://evil.example/a](https://evil.example/a)", "evil.example/a"),
        ('[x](<https://evil.example/a b> "title")', "x (evil.example/a b)"),
        ("[x](//evil.example/p)", "x (evil.example/p)"),
        ("Mail <http://x.example/a>.", "Mail x.example/a."),
        ("Go to https://evil.example/b now", "Go to evil.example/b now"),
        ("Or (www.evil.example/c)", "Or (www\u200b.evil.example/c)"),
        ("1234http://evil.example/d", "1234evil.example/d"),
        (
            "Read [the docs][1].\n\n[1]: https://evil.example/ref 'Docs'",
            "Read [the docs][1].\n\n\\[1]: evil.example/ref 'Docs'",
        ),
        (
            "[a [b](http://evil.example) c](https://github.com/octo/repo)",
            "[a [b]\\(evil.example) c](https://github.com/octo/repo)",
        ),
        ("| [x](http://e.example/y\\|z) |", "| x (e.example/y\\|z) |"),
        ("`curl https://api.example/v1`", "`curl https\u200b://api.example/v1`"),
        ("```\ncurl https://api.example/v1\n```", "```\ncurl https://api.example/v1\n```"),
    ],
)
def test_links_off_the_repository_are_shown_as_text(text: str, shown: str) -> None:
    out = defused(text)
    assert out == shown
    assert [link for link in live_links(out) if not into_the_repo(link)] == []
    assert defuse_links(out, REPO) == out


@pytest.mark.parametrize(
    "text",
    [
        "[the file](https://github.com/octo/repo/blob/main/app.py#L3)",
        "[issue](https://GitHub.com/Octo/Repo/issues/4 'the bug')",
        "See https://github.com/octo/repo/pull/5.",
        "<https://github.com/octo/repo/commit/abc>",
        "[ref][r]\n\n[r]: https://github.com/octo/repo/wiki",
    ],
)
def test_links_into_the_repository_stay_links(text: str) -> None:
    out = defused(text)
    links = live_links(out)
    assert links and all(into_the_repo(link) for link in links), out


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/octo/repo-evil/x",
        "https://github.com/octo/repo.evil/x",
        "https://github.com/octo/repo/../../evil/x",
        "https://github.com/octo/repo/%2e%2e/%2e%2e/evil",
        "https://github.com/octo/repo\\..\\evil",
        "http://github.com/octo/repo/x",
        "https://github.com.evil.example/octo/repo/x",
        "https://github.com/other/repo",
    ],
)
def test_look_alikes_of_the_repository_are_not_into_it(url: str) -> None:
    for text in (f"[x]({url})", url, f"<{url}>", f"[x][r]\n\n[r]: {url}"):
        out = defused(text)
        assert [link for link in live_links(out) if not into_the_repo(link)] == [], out
        assert live_links(out) == [], out


def test_without_a_repository_every_link_is_text() -> None:
    out = defused("[the file](https://github.com/octo/repo/blob/main/a.py) and " + REPO_URL, None)
    assert out == "the file (github.com/octo/repo/blob/main/a.py) and github.com/octo/repo"
    assert live_links(out) == []


LINK_FRAGMENTS = [
    *FRAGMENTS,
    "http://",
    "https://",
    "HTTPS://",
    "//",
    "www.",
    "evil.example",
    "/x",
    "1",
    ":",
    "]: ",
    "](",
    "][",
    "[r]",
    "<http://e.example>",
    REPO_URL,
    REPO_URL + "/",
    "..",
    "%2e",
    "%2F",
    "\\",
]
linky_text = st.lists(
    st.one_of(st.sampled_from(LINK_FRAGMENTS), st.text(max_size=3)), max_size=40
).map("".join)


@settings(max_examples=500, deadline=None)
@given(linky_text)
def test_no_link_leaves_the_repository_and_defusing_is_stable(text: str) -> None:
    out = defused(text)
    assert [link for link in live_links(out) if not into_the_repo(link)] == []
    assert defuse_links(out, REPO) == out
    assert rendered_hazards(out) == []
    # Taking links apart opened no code block that would swallow what follows.
    assert "heading_open" in [t.type for t in MD.parse(out + "\n\n## Tail\n")]
