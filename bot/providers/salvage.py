"""A cut answer read as far as it is whole.

An answer cut off (at the max-tokens limit, or stopped because it repeated itself:
bot/providers/repetition.py) ends inside its JSON object: in a string, a finding, a list.
`whole_parts` reads it the way a person would: every element that was finished is kept, the
one under way is dropped, and the open containers are closed after the last finished
element. Which container to close at is tried from the innermost out (`WholePart`s, the
longest first), so a finding cut in its `detail` is dropped with the rest of it while the
findings before it stay; the caller keeps the first that validates. Identical items of a
list are kept once: a model that looped wrote the same item again and again.

`JsonScan` is the reading itself, fed the text as it grows (the repetition watch runs it
on a stream): it notes where each container's last whole element ends, and counts each
list's whole items by their text.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JsonScan", "WholePart", "cut_note", "whole_parts"]

# In a string only a quote (its end) or a backslash (an escape) matters.
_IN_STRING = re.compile(r'["\\]')
# A list item this long seen this many times over: the answer loops (repetition.py).
REPEATED_ITEM_CHARS = 24
REPEATED_ITEM_COPIES = 3


@dataclass
class _Frame:
    closer: str  # "}" or "]"
    start: int  # its opening bracket
    whole_to: int  # where its last whole element ends (start + 1: none yet)
    expect_key: bool = False  # an object's next string is a key
    item_from: int | None = None  # a list's item under way began here
    seen: Counter[str] = field(default_factory=Counter)  # a list's whole items, by text


class JsonScan:
    """The JSON object that begins at the text's first `{`, read as the text grows: call
    `advance` with the whole text so far (each call's text extends the last's)."""

    def __init__(self) -> None:
        self.pos = 0  # how far the text has been read
        self.start: int | None = None  # the object's `{`
        self.end: int | None = None  # just past its `}`, once it is whole
        self.stack: list[_Frame] = []
        self.broken = False  # not JSON: a closer that closes nothing open
        # A whole list item (of REPEATED_ITEM_CHARS or more) seen REPEATED_ITEM_COPIES times.
        self.repeated = False
        self._string_from: int | None = None
        self._key = False
        self._escape = False
        self._scalar_from: int | None = None

    @property
    def finished(self) -> bool:
        return self.end is not None or self.broken

    def advance(self, text: str) -> None:
        i, n = self.pos, len(text)
        while i < n and not self.finished:
            if self._string_from is not None:
                i = self._in_string(text, i)
            elif self.start is None:
                found = text.find("{", i)
                if found < 0:
                    i = n
                else:
                    self.start = found
                    self.stack.append(_Frame("}", found, found + 1, expect_key=True))
                    i = found + 1
            elif self._scalar_from is not None and text[i] not in " \t\r\n,:}]":
                i += 1
            else:
                if self._scalar_from is not None:
                    self._scalar_from = None
                    self._whole(i, text)
                self._token(text, i)
                i += 1
        self.pos = i

    def _in_string(self, text: str, i: int) -> int:
        """Past the string's end, or the text's; where reading goes on."""
        if self._escape:
            self._escape = False
            return i + 1
        found = _IN_STRING.search(text, i)
        if found is None:
            return len(text)
        at = found.start()
        if text[at] == "\\":
            if at + 1 >= len(text):
                self._escape = True
                return len(text)
            return at + 2
        self._string_from = None
        if self._key:
            self._key = False
        else:
            self._whole(at + 1, text)
        return at + 1

    def _token(self, text: str, i: int) -> None:
        char, top = text[i], self.stack[-1]
        if char == '"':
            self._string_from = i
            self._key = top.closer == "}" and top.expect_key
            if not self._key:
                self._begins(i)
        elif char in "{[":
            self._begins(i)
            closer = "}" if char == "{" else "]"
            self.stack.append(_Frame(closer, i, i + 1, expect_key=char == "{"))
        elif char in "}]":
            if top.closer != char:
                self.broken = True
                return
            self.stack.pop()
            if self.stack:
                self._whole(i + 1, text)
            else:
                self.end = i + 1
        elif char == ":":
            top.expect_key = False
        elif char == ",":
            top.expect_key = top.closer == "}"
        elif not char.isspace():
            self._begins(i)
            self._scalar_from = i

    def _begins(self, i: int) -> None:
        top = self.stack[-1]
        if top.closer == "]":
            top.item_from = i

    def _whole(self, end: int, text: str) -> None:
        """A value of the innermost container ended at `end`."""
        top = self.stack[-1]
        top.whole_to = end
        if top.closer == "]" and top.item_from is not None:
            item = text[top.item_from : end]
            top.seen[item] += 1
            if len(item) >= REPEATED_ITEM_CHARS and top.seen[item] >= REPEATED_ITEM_COPIES:
                self.repeated = True
            top.item_from = None

    def closings(self, text: str) -> list[str]:
        """The object as far as it is whole, closed at each open container from the
        innermost out (the whole object when it ended); [] when there is none."""
        if self.start is None or self.broken:
            return []
        if self.end is not None:
            return [text[self.start : self.end]]
        return [
            text[self.start : self.stack[k].whole_to]
            + "".join(f.closer for f in reversed(self.stack[: k + 1]))
            for k in range(len(self.stack) - 1, -1, -1)
        ]


@dataclass(frozen=True)
class WholePart:
    value: Any
    repeats: int  # identical list items dropped (each list keeps one of each)


def whole_parts(text: str) -> list[WholePart]:
    """The answer's JSON object as far as it is whole, closed at each open container from
    the innermost out (the longest reading first), identical list items kept once. An
    object that ended (a provider that parsed a cut answer as far as it went, Anthropic's
    tool input) is read whole first, then reopened: its last element may be the cut one."""
    scan = JsonScan()
    scan.advance(text)
    candidates = scan.closings(text)
    if scan.start is not None and scan.end is not None:
        reopened = text[scan.start : scan.end].rstrip(" \t\r\n}]")
        again = JsonScan()
        again.advance(reopened)
        candidates += again.closings(reopened)
    parts: list[WholePart] = []
    for candidate in candidates:
        try:
            value = json.loads(candidate, strict=False)
        except json.JSONDecodeError:
            continue
        dropped = [0]
        parts.append(WholePart(_once(value, dropped), dropped[0]))
    return parts


def _once(value: Any, dropped: list[int]) -> Any:
    if isinstance(value, dict):
        return {k: _once(v, dropped) for k, v in value.items()}
    if isinstance(value, list):
        seen: set[str] = set()
        kept = []
        for item in value:
            item = _once(item, dropped)
            key = json.dumps(item, sort_keys=True)
            if key in seen:
                dropped[0] += 1
                continue
            seen.add(key)
            kept.append(item)
        return kept
    return value


def cut_note(chars: int, *, looped: bool, repeats: int) -> str:
    """What the answer's record says of a cut answer kept as far as it was whole."""
    why = "repeated itself and was cut" if looped else "was cut off at the max-tokens limit"
    note = f"the answer {why} after {chars:,} characters; read as far as it was whole"
    if repeats:
        note += f" ({repeats} repeated item{'s' if repeats != 1 else ''} kept once)"
    return note
