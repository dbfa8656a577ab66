"""The sticky comment, posted once by the App and the Action alike: the advisory rendered
as the repository asks, shorter while the forge refuses it as too long, within
`COMMENT_WAIT_S` of the advisory.

What differs between the delivery paths comes in as ports: `lock` (the App holds a Redis
lock across the look-up and the write; the Action's `concurrency` group serialises them),
`on_shortened` (the App logs each refusal).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext

from bot.council.advisory import Advisory
from bot.forge import Forge, ForgeError, PostedComment
from bot.render import render_comment
from bot.render.checks import Gate
from bot.render.markdown import CommentOptions

__all__ = [
    "COMMENT_MAX_CHARS",
    "COMMENT_MIN_CHARS",
    "COMMENT_WAIT_S",
    "INLINE_WAIT_S",
    "post_advisory",
    "post_sticky",
]

COMMENT_MAX_CHARS = 65_000
COMMENT_MIN_CHARS = 1_000  # a forge refusing less than this is not about length
# The verdict reaches the status within a minute of the advisory: the inline step and the
# comment get this long each before the status is completed without them.
INLINE_WAIT_S = 15.0
COMMENT_WAIT_S = 25.0

Render = Callable[[int], str]  # the comment's body within so many characters
Shortened = Callable[[int, int], None]  # (refused length, next limit)


async def post_sticky(
    forge: Forge,
    pr: int,
    render: Render,
    login: str,
    *,
    lock: AbstractAsyncContextManager[object] | None = None,
    on_shortened: Shortened | None = None,
) -> PostedComment:
    """The sticky comment (updated in place, never a second one), rendered shorter while
    the forge refuses it as too long."""
    limit = COMMENT_MAX_CHARS
    while True:
        body = render(limit)
        try:
            async with lock if lock is not None else nullcontext():
                return await forge.upsert_sticky(pr, body, login)
        except ForgeError as error:
            if not forge.comment_too_long(error) or limit <= COMMENT_MIN_CHARS:
                raise
            limit = max(COMMENT_MIN_CHARS, min(limit, len(body)) // 2)
            if on_shortened is not None:
                on_shortened(len(body), limit)


async def post_advisory(
    forge: Forge,
    pr: int,
    advisory: Advisory,
    options: CommentOptions,
    gate: Gate,
    login: str,
    *,
    transcript_url: str | None = None,
    lock: AbstractAsyncContextManager[object] | None = None,
    on_shortened: Shortened | None = None,
) -> PostedComment:
    """The advisory as the sticky comment, rendered by `bot.render` as the repository asks
    (`options`: its `comment`, `max_findings`, `min_severity`; `gate`: its verdict line),
    linking the transcript page when there is one."""
    shown = options.model_copy(update={"gate": gate})

    def render(limit: int) -> str:
        return render_comment(
            advisory,
            max_chars=limit,
            repo=forge.full_name,
            options=shown,
            transcript_url=transcript_url,
        )

    return await post_sticky(forge, pr, render, login, lock=lock, on_shortened=on_shortened)
