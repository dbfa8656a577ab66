"""Noticing a streamed answer that repeats itself, so the adapter can stop reading it.

A small model under a JSON grammar can fall into a loop: one finding written again and
again, a sentence repeated inside a string, or blank lines without end, until its window
runs out (Qwen2.5-Coder 0.5B wrote 5,368 tokens of one finding in 640 s). `LoopWatch` is fed
the answer as it arrives and says when it loops:

- the same span of text repeated back to back: the text's tail is one span written
  `SPAN_COPIES` times or more, over `SPAN_CHARS` characters at least (a span of a few
  characters must run on for that long: `"\\n\\n\\n..."`); or
- the same list item over and over: a whole item of a list (salvage.py's `JsonScan`), of
  24 characters or more, seen 3 times in that list (salvage.py `REPEATED_ITEM_*`).

Both ask for text repeated exactly, character for character: a real answer with findings
alike (one title on several lines, one kind of issue in several files) differs in a line
number, a path or a word, and is never cut. Closing the stream stops the server
generating; the answer is then read as far as it is whole (bot/providers/salvage.py).
"""

from __future__ import annotations

from bot.providers.salvage import JsonScan

__all__ = ["SPAN_CHARS", "SPAN_COPIES", "LoopWatch", "repeats_itself"]

# The tail repeats one span at least this many times ...
SPAN_COPIES = 3
# ... over at least this many characters (the three copies of a long span cover more).
SPAN_CHARS = 512
# The longest span looked for: an item of an answer is rarely longer.
MAX_SPAN = 4096
# The tail's last characters, looked for earlier in the text to find a span's length.
_PROBE = 16
# The text is looked at again once this much more has arrived.
CHECK_EVERY = 192


class LoopWatch:
    """Fed an answer's text as it streams in; `feed` is True once it loops."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._chars = 0
        self._checked = 0
        self._scan = JsonScan()
        # How many characters had arrived when the loop was seen; None: no loop.
        self.looped_at: int | None = None

    def feed(self, piece: str) -> bool:
        if self.looped_at is not None or not piece:
            return self.looped_at is not None
        self._parts.append(piece)
        self._chars += len(piece)
        if self._chars - self._checked < CHECK_EVERY:
            return False
        text = "".join(self._parts)
        self._parts, self._checked = [text], self._chars
        self._scan.advance(text)
        if self._scan.repeated or repeats_itself(text):
            self.looped_at = len(text)
        return self.looped_at is not None


def repeats_itself(text: str) -> bool:
    """Whether `text` ends in one span repeated back to back `SPAN_COPIES` times or more,
    over `SPAN_CHARS` characters at least."""
    n = len(text)
    if n < SPAN_CHARS:
        return False
    probe = text[n - _PROBE :]
    lowest = max(0, n - _PROBE - MAX_SPAN)
    end = n - 1  # the probe seen again ending before the text does: a span of 1 or more
    for _ in range(64):
        at = text.rfind(probe, lowest, end)
        if at < 0:
            return False
        span = n - _PROBE - at
        cover = max(SPAN_COPIES * span, SPAN_CHARS)
        if cover <= n and text[n - cover : n - span] == text[n - cover + span :]:
            return True
        end = at + _PROBE - 1
    return False
