"""The comment's "Full transcript" line and the URL it points at (COUNCIL_PUBLIC_URL)."""

from __future__ import annotations

import pytest

from bot.queue.links import transcript_url
from bot.render import render_comment
from bot.settings import Settings
from tests.unit.render.test_render import advisory

URL = "https://council.example.com/deliberations/0b9c2f4e-1"


def test_the_comment_ends_with_the_transcript_link() -> None:
    plain = render_comment(advisory())
    linked = render_comment(advisory(), transcript_url=URL)
    assert linked == plain + f"\n[Full transcript]({URL})\n"


def test_the_link_counts_toward_the_length_cap() -> None:
    for cap in (1_000, 3_000):
        linked = render_comment(advisory(), max_chars=cap, transcript_url=URL)
        assert len(linked) <= cap and linked.endswith(f"[Full transcript]({URL})\n")


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "https://x.example/a b", "https://x.example/a)(", ""]
)
def test_anything_but_a_plain_http_url_is_left_out(url: str) -> None:
    assert render_comment(advisory(), transcript_url=url) == render_comment(advisory())


def test_the_url_is_the_public_url_s_transcript_page() -> None:
    settings = Settings(_env_file=None, public_url="https://council.example.com/")
    assert transcript_url(settings, "a/b c") == (
        "https://council.example.com/deliberations/a%2Fb%20c"
    )
    assert transcript_url(Settings(_env_file=None), "x") is None
