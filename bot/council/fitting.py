"""A call made to fit its model's window: whole context sections cut from the end, and an
output limit within what the window leaves after the prompt.

The context every seat reads is the cached system block `bot.council.prompts.render_context`
built: the pull request's title, its sections in rank order (the automated signals, the diff
first, the least needed last), then "## Not included ...". When a model's window is said
(`bot.providers.window`: its server, its endpoint's setting, the capability table, or a
refusal naming it) and the estimated prompt leaves no room for an answer, whole sections
are cut from the end - never the first diff section, nor what comes before it - until it
does, and one line of the "Not included" list says how many the window left out. Later
calls of the model keep at most the sections its deepest cut kept, so the context it reads
stays the same from call to call (and a local server's prompt cache keeps it).

The output limit a call asks for is clipped to what the window leaves after its prompt, but
never below `FLOOR_OUTPUT_TOKENS` (bot.council.reserving: the room a structured answer
needs; a call that asks for less keeps what it asked). A prompt that leaves less than that
is cut further, or does not fit.

A refusal of a prompt as too long (`ContextTooLong`) names the window and its count of the
prompt where the server says them: `refit` believes the window (and remembers it for the
process, `bot.providers.window.learn`), scales our estimate to the server's count, and cuts
the context again for the one retry the caller makes.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from bot.context.prose import CONTEXT_HEADING, NOT_INCLUDED_HEADING
from bot.council.reserving import FLOOR_OUTPUT_TOKENS
from bot.providers import ContextTooLong, ModelCall, SystemBlock
from bot.providers.errors import scrub
from bot.providers.window import Window, learn, scaled
from bot.tokens import TokenEstimator

__all__ = ["ContextFitter", "Cut", "Fitted", "cut_note", "parse_context"]

# A section's fenced block (bot.context.prose.fence_untrusted) and the heading before it.
_OPEN = re.compile(r'<untrusted-([a-z0-9-]+) note="[^"\n]*">\n(`{3,})\n')
_HEADING = re.compile(r"\n\n## [^\n]*\n")
_BACKTICKS = re.compile(r"`+")
# Estimated tokens of the line a cut adds to the "Not included" list.
_LINE_TOKENS = 40
# The share of a window kept free for what the estimate misses (a cut prompt's mix of text
# differs from the refused one's, whose count scaled the estimate).
_SLACK = 0.03


@dataclass(frozen=True)
class ContextParts:
    """A rendered context taken apart: its head (heading and title), its sections as
    rendered (each with the blank line before it) and their kinds, and its tail (the
    "Not included" list, or nothing)."""

    head: str
    sections: tuple[str, ...]
    kinds: tuple[str, ...]
    tail: str

    @property
    def least(self) -> int:
        """Sections no cut removes: up to the first diff section (or the first section)."""
        if "diff" in self.kinds:
            return self.kinds.index("diff") + 1
        return min(len(self.sections), 1)

    def text(self, kept: int, window: int) -> str:
        """The context with its first `kept` sections, the others said left out."""
        body = self.head + "".join(self.sections[:kept])
        left = len(self.sections) - kept
        if left <= 0:
            return body + self.tail
        tail = self.tail or f"\n\n{NOT_INCLUDED_HEADING}"
        sections = "section" if left == 1 else "sections"
        return (
            f"{body}{tail}\n- {left} more {sections} of the context: left out to fit the "
            f"model's window of {window:,} tokens"
        )


def parse_context(text: str) -> ContextParts | None:
    """`text` taken apart as `render_context` put it together; None when it is not one
    (each section must be one heading line and one well-formed fenced block, so a cut can
    never open a fence)."""
    if not text.startswith(CONTEXT_HEADING):
        return None
    title = _block(text, len(CONTEXT_HEADING))
    if title is None or title[0] != "title":
        return None
    at = title[1]
    head, sections, kinds = text[:at], [], []
    while (heading := _HEADING.match(text, at)) is not None:
        found = _block(text, heading.end())
        if found is None:
            break
        sections.append(text[at : found[1]])
        kinds.append(found[0])
        at = found[1]
    tail = text[at:]
    if tail and not tail.startswith(f"\n\n{NOT_INCLUDED_HEADING}\n"):
        return None
    return ContextParts(head, tuple(sections), tuple(kinds), tail)


def _block(text: str, start: int) -> tuple[str, int] | None:
    """The fenced block opening at `start`: its label and where it ends."""
    opened = _OPEN.match(text, start)
    if opened is None:
        return None
    name, fence = opened.group(1), opened.group(2)
    close = f"{fence}\n</untrusted-{name}>"
    end = text.find(close, opened.end())
    if end < 0:
        return None
    body = text[opened.end() : end]
    if body and not body.endswith("\n"):
        return None
    if any(len(run) >= len(fence) for run in _BACKTICKS.findall(body)):
        return None
    return name, end + len(close)


@dataclass(frozen=True)
class Cut:
    """A model's context cut for its window: the window, and the context's estimated
    tokens before and after."""

    window: int
    before: int
    after: int


def cut_note(model: str, cut: Cut) -> str:
    """What the advisory says of a model's cut context."""
    return (
        f"{scrub(model)}'s window is {cut.window:,} tokens: the context was cut from "
        f"{cut.before:,} to {cut.after:,} tokens for it"
    )


@dataclass(frozen=True)
class Fitted:
    """The request as it fits (as far as it can), whether it fits, and the cut made."""

    request: ModelCall[Any]
    fits: bool
    cut: Cut | None = None


class ContextFitter:
    """Fits one deliberation's calls to their models' windows, and remembers each model's
    deepest cut (what the advisory says)."""

    def __init__(self, estimator: TokenEstimator) -> None:
        self._estimator = estimator
        self._parsed: dict[str, ContextParts | None] = {}
        self._kept: dict[str, int] = {}  # model -> sections its calls keep at most
        self._cuts: dict[str, Cut] = {}  # model -> its deepest cut

    def notes(self) -> list[str]:
        return [cut_note(model, cut) for model, cut in self._cuts.items()]

    def cut_of(self, model: str) -> Cut | None:
        return self._cuts.get(model)

    def recorded(self, model: str, cut: Cut) -> None:
        """A cut a replayed step made (the ledger kept it)."""
        known = self._cuts.get(model)
        if known is None or cut.after < known.after:
            self._cuts[model] = cut

    def fit(self, model: str, request: ModelCall[Any], window: Window) -> Fitted:
        """`request` cut to leave room for an answer in `window`, its output limit within
        what the window leaves; `fits` False when even the least context leaves no room."""
        room = min(request.max_tokens, FLOOR_OUTPUT_TOKENS)
        factor = window.scale * (1 + self._estimator.margin)
        allowed = math.floor((_usable(window) - room) / factor)  # estimated prompt tokens
        located = self._context(request)
        if located is None:
            prompt = self.estimate(request)
            return Fitted(_clipped(request, window, math.ceil(prompt * factor)), prompt <= allowed)
        index, parts = located
        rest = self.estimate(request, skip=index)
        sizes = [self._estimator.estimate(section) for section in parts.sections]
        fixed = rest + self._estimator.estimate(parts.head + parts.tail) + _LINE_TOKENS
        whole = len(parts.sections)
        kept = min(whole, self._kept.get(model, whole))
        while kept > parts.least and fixed + sum(sizes[:kept]) > allowed:
            kept -= 1
        cut: Cut | None = None
        if kept < whole:
            text = parts.text(kept, window.tokens)
            before = self._estimator.estimate(request.system[index].text)
            cut = Cut(window.tokens, before, self._estimator.estimate(text))
            self._remember(model, kept, cut)
            system = list(request.system)
            system[index] = SystemBlock(text=text, cache=True)
            request = replace(request, system=system)
        prompt = self.estimate(request)
        fitted = _clipped(request, window, math.ceil(prompt * factor))
        return Fitted(fitted, prompt <= allowed, cut)

    def refit(
        self,
        model: str,
        request: ModelCall[Any],
        sent: ModelCall[Any],
        refused: ContextTooLong,
        window: Window,
    ) -> Fitted | None:
        """After the server refused `sent` (made from `request`) as too long: `request`
        fitted to the window the refusal named (else `window`), our estimate scaled to the
        server's count of `sent`. None when nothing more can be cut, or when even the
        least context does not fit: a retry would be refused again."""
        scale = window.scale
        if refused.prompt_tokens:
            scale = refused.prompt_tokens / max(self.estimate(sent), 1)
        # A window the refusal names is remembered: the later calls fit before sending.
        said = learn(model, refused.window, scale) if refused.window else scaled(window, scale)
        fitted = self.fit(model, request, said)
        if not fitted.fits or fitted.request == sent:
            return None
        return fitted

    def estimate(self, request: ModelCall[Any], *, skip: int | None = None) -> int:
        """Estimated tokens of the prompt: its system blocks (but `skip`), its messages and
        the answer's schema once (a server's grammar or the prompt's instructions)."""
        estimate = self._estimator.estimate
        tokens = sum(estimate(b.text) for i, b in enumerate(request.system) if i != skip)
        tokens += sum(estimate(m.content) for m in request.messages)
        if request.output is not None:
            chars = _schema_chars(request.output.schema)
            tokens += self._estimator.estimate_chars(chars, "data")
        return tokens

    def _context(self, request: ModelCall[Any]) -> tuple[int, ContextParts] | None:
        """The context block (the cached system block `render_context` built), taken apart."""
        for index, block in enumerate(request.system):
            if not block.cache or not block.text.startswith(CONTEXT_HEADING):
                continue
            if block.text not in self._parsed:
                self._parsed[block.text] = parse_context(block.text)
            parts = self._parsed[block.text]
            return (index, parts) if parts is not None and parts.sections else None
        return None

    def _remember(self, model: str, kept: int, cut: Cut) -> None:
        self._kept[model] = kept
        known = self._cuts.get(model)
        if known is None or cut.after < known.after:
            self._cuts[model] = cut


def _clipped(request: ModelCall[Any], window: Window, prompt: int) -> ModelCall[Any]:
    """`request` asking for no more output than `window` leaves after `prompt` (the
    server's tokens, estimated), and never less than the floor."""
    room = min(request.max_tokens, FLOOR_OUTPUT_TOKENS)
    limit = max(_usable(window) - prompt, room)
    return replace(request, max_tokens=limit) if limit < request.max_tokens else request


def _usable(window: Window) -> int:
    """The window but its slack."""
    return window.tokens - math.ceil(window.tokens * _SLACK)


@lru_cache(maxsize=64)
def _schema_chars(schema: type[BaseModel]) -> int:
    return len(json.dumps(schema.model_json_schema()))
