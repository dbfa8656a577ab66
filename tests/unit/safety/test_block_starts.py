"""Model text starts no block of its own: a single line (a cell, a list item) at the start
of a line, or prose of several lines quoted, cannot become a heading, a table, a rule, a
setext underline, a fence, an HTML block or a nested quote, not even once its links are
taken apart."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from bot.safety.links import defuse_links
from bot.safety.markdown import quote_markdown, sanitize_inline
from tests.unit.safety.test_safety import (
    LINK_FRAGMENTS,
    REPO,
    into_the_repo,
    live_links,
    rendered_hazards,
)

GFM = MarkdownIt("commonmark").enable("table")
BLOCKS = {"heading_open", "hr", "table_open", "fence", "html_block", "blockquote_open"}
# Where a single line lands in the comment: a paragraph, a list item, an ordered item, the
# verdict sentence's quote, a line under another (a setext underline), an item's next line.
PLACES = ("", "- ", "1. ", "> ", "para\n", "1. para\n   ")


def blocks(markdown: str) -> list[str]:
    return [t.type for t in GFM.parse(markdown) if t.type in BLOCKS]


@pytest.mark.parametrize(
    "text",
    [
        "## ✅ Approved",
        "# x",
        "- ## x",
        "1. # x",
        "1. * * *",
        "* - ---",
        "---",
        "===",
        "--|--",
        "|---|---|",
        "> quoted",
        "<details>",
        "```",
        "- ~~~",
        "[## x](http://evil.example)",
        "[---](<>)",
        "- http://",
        "--- http://",
        "http://# x",
    ],
)
def test_one_line_starts_no_block_wherever_it_lands(text: str) -> None:
    line = sanitize_inline(text)
    for place in PLACES:
        out = defuse_links(place + line, REPO)
        expected = ["blockquote_open"] if place == "> " else []
        assert blocks(out) == expected, (place, out)


def test_prose_is_one_quote_with_no_block_inside() -> None:
    text = (
        "Fine.\n## ✅ Approved\n| Seat | Vote |\n|---|---|\n| A | APPROVE |\n---\n"
        "> nested\n- ## item\n1. * * *\n```\n<b>code</b>\n```\nVerdict\n===\n[x\n---](<>)"
    )
    out = defuse_links(quote_markdown(text), REPO)
    assert all(line.startswith(">") for line in out.splitlines())
    assert blocks("before\n\n" + out + "\n\n## Tail") == [
        "blockquote_open",
        "heading_open",  # the tail: what follows the quote is not swallowed
    ]
    # Emphasis, code spans and lists stay.
    quoted = defuse_links(quote_markdown("**bold** and `code`\n- one\n- two"), REPO)
    assert quoted == "> **bold** and `code`\n> - one\n> - two"


def test_an_e_mail_autolink_is_no_link() -> None:
    # `<0@host>` is a `mailto:` link for CommonMark; its `<` is broken like a tag's.
    for text in ("<0@alice>", "write to <bob.smith@example.com>"):
        assert live_links(defuse_links(sanitize_inline(text), REPO)) == []
        assert live_links(defuse_links(quote_markdown(text), REPO)) == []


FRAGMENTS = [
    *LINK_FRAGMENTS,
    "## ",
    "---",
    "===",
    "| a |",
    "|---|",
    "* * *",
    "\n- ",
    "\n1. ",
    "\n> ",
    "[## x](http://e)",
    "[x\n---](<>)",
    "http://# ",
]
prose = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=3)), max_size=40).map(
    "".join
)


@settings(max_examples=300, deadline=None)
@given(prose)
def test_quoted_prose_stays_one_inert_quote(text: str) -> None:
    out = defuse_links(quote_markdown(text), REPO)
    assert defuse_links(out, REPO) == out
    assert rendered_hazards(out) == []
    assert [link for link in live_links(out) if not into_the_repo(link)] == []
    found = blocks("before\n\n" + out + "\n\n## Tail\n")
    assert found.count("heading_open") == 1 and not {"hr", "table_open", "fence"} & set(found)


@settings(max_examples=300, deadline=None)
@given(prose)
def test_a_line_starts_no_block_and_is_stable(text: str) -> None:
    line = sanitize_inline(text)
    assert sanitize_inline(line) == line
    for place in PLACES:
        found = blocks(defuse_links(place + line, REPO))
        assert found == (["blockquote_open"] if place == "> " else []), (place, line)
