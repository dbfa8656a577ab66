"""Packing ranked items into a token budget: whole lines only, deterministic, never over.

Two ways to fill the budget:
- `tier`: each item first gets a fair share, then the items fill what is left in rank order;
  an item is a prefix of its chunks (the PR's description).
- `by_value`: every chunk of every item carries a value (how much a reviewer needs it); the
  chunks are taken most valuable first, wherever they are, and each item is then shown in
  its own line order. A chunk may be chained to the one before it (the rest of a hunk, the
  rest of a file read from its top): it is only taken after it. `caps` bound what the items
  of one kind may take in all (guidance).

A chunk is whole lines, so nothing is cut mid-line. Each chunk says which head-side lines it
shows (`Item.shows`); a section's `lines` are those of the chunks taken, so what a section
shows is known from what was packed, not read back from its text. A numbered excerpt of a
file (`Item.labels` given) starts with one caption written for what was taken: the runs of
lines it shows and what each holds (`@@ lines 12-40 (function f), 88-90 of app/x.py @@`,
`@@ lines 1-38 (whole file) of app/y.py @@`), and a `⋮` line stands between two runs that
are not adjacent; so no caption claims lines other than those that follow.

Every token sent is charged: each section's heading and fence, the note a partial section
carries, its caption and skip lines, and the "Not included" list (`reserve` keeps room for
it; `not_included` fits it to that room).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.context.models import Omitted, Section, SectionKind
from bot.context.prose import (
    CONTEXT_HEADING,
    NOT_INCLUDED_HEADING,
    fence_title,
    fence_untrusted,
    section_heading,
    show_bidi,
)
from bot.tokens import KINDS, TokenEstimator

CHUNK_LINES = 25
MIN_SHARE = 200  # tokens: below this a share shows too little to be worth a heading
# Room for a fence longer than three backticks (text that itself holds backtick runs).
FENCE_SLACK = 8
SKIP_LINE = "\u22ee\n"  # "⋮": lines skipped between two runs of a numbered excerpt
CAPTION_LABELS = 4  # what a run holds, said in at most this many labels

Lines = list[tuple[int, int]]  # inclusive runs of line numbers: [(first, last), ...]


@dataclass
class Item:
    kind: SectionKind
    path: str | None
    why: str
    chunks: list[str]  # each is whole lines ending in "\n"
    unit: str = "lines"  # what `chunks` count as, for the omitted note
    units: int = 0  # how many units the item has (lines, hunks)
    unit_of: list[int] = field(default_factory=list)  # units each chunk completes (cumulative)
    values: list[float] = field(default_factory=list)  # per chunk; empty: in order, equal
    chained: list[bool] = field(default_factory=list)  # chunk i needs chunk i-1 taken
    # ...or, where given (>= 0), chunk i needs that chunk taken first (the run of a file one
    # step nearer to the change, so that the rest of a file comes nearest first)
    needs: list[int] = field(default_factory=list)
    lead: str = ""  # text shown before whatever is taken (a diff's file header), charged once
    # Where `units` counts more than the chunks hold: what the rest is ("in sections not
    # about the changed areas"); the notes say it apart from what the budget left out.
    left_out: str = ""
    # Per chunk, the head-side lines it shows as (first, last), in line order along the
    # chunks; None: no head line (a hunk header, removed lines only). Empty: none at all
    # (the description, a directory listing).
    shows: list[tuple[int, int] | None] = field(default_factory=list)
    # A numbered excerpt of a file: per chunk, what its lines hold ("function f"; "": nothing
    # to say). Given, the text taken starts with a caption listing its runs (see the module
    # docstring), and `file_lines` (the file's length) tells a run that is the whole file.
    labels: list[str] = field(default_factory=list)
    file_lines: int = 0
    # Estimated once per item, whatever is packed how often (the builder packs twice).
    _costs: list[int] | None = field(default=None, init=False, repr=False, compare=False)
    _overhead: int | None = field(default=None, init=False, repr=False, compare=False)


@dataclass
class _Taken:
    item: Item
    count: int = 0  # chunks taken (prefix packing)
    cost: int = 0  # tokens charged, heading and note included
    picked: set[int] = field(default_factory=set)  # chunks taken (value packing)
    capped: bool = False  # a chunk that the budget had room for was refused by its kind's cap


def chunk_lines(lines: list[str], size: int = CHUNK_LINES) -> list[str]:
    """Lines (without newlines) grouped into chunks of whole lines."""
    return [
        "".join(f"{line}\n" for line in lines[i : i + size]) for i in range(0, len(lines), size)
    ]


class Packer:
    def __init__(self, estimator: TokenEstimator, usable: int) -> None:
        self.estimator = estimator
        self.estimate = estimator.estimate
        self.left = max(usable, 0)
        self.sections: list[Section] = []
        self.omitted: list[Omitted] = []

    def frame(self, item: Item) -> int:
        """Tokens of the heading and fence around the item's text."""
        return self.estimate(frame_text(item.kind, item.path, item.why)) + FENCE_SLACK

    def overhead(self, item: Item) -> int:
        # The "not included" note a partial item may carry is charged up front.
        if item._overhead is None:
            # The longest note the item can carry: every unit missing, every hunk in part.
            units = item.units or sum(c.count("\n") for c in item.chunks)
            note = self.estimate(_note(item, units, units if item.unit == "hunks" else 0))
            item._overhead = self.frame(item) + note + self.estimate(item.lead)
            if item.labels:  # the caption's own words, and a run that is the whole file
                bare = f"@@ lines  of {show_bidi(item.path or '')} @@\n (whole file)"
                item._overhead += self._at_most(len(bare))
        return item._overhead

    def costs(self, item: Item) -> list[int]:
        """Each chunk's tokens; a numbered excerpt's chunk with the most its part of the
        caption and a skip line before it can cost (their sum bounds what is written)."""
        if item._costs is None:
            item._costs = [self.estimate(c) for c in item.chunks]
            if item.labels:
                for i, shown in enumerate(item.shows):
                    first, last = shown or (0, 0)
                    label = item.labels[i] if i < len(item.labels) else ""
                    piece = f", {first}-{last} ({label}; ...)"
                    item._costs[i] += self._at_most(len(piece)) + self._at_most(len(SKIP_LINE))
        return item._costs

    def reserve(self, tokens: int) -> int:
        """Set aside up to `tokens` (the "Not included" list); returns what was set aside."""
        kept = min(max(tokens, 0), self.left)
        self.left -= kept
        return kept

    # -- prefix packing ---------------------------------------------------------------------

    def tier(self, items: list[Item], *, share: int | None = None) -> None:
        """Pack one tier; `share` caps what any item gets in the first pass."""
        if not items:
            return
        taken = [_Taken(item) for item in items]
        fair = share if share is not None else max(self.left // len(items), MIN_SHARE)
        for t in taken:
            self._grow(t, limit=fair)
        if share is None:
            for t in taken:
                self._grow(t, limit=None)
        for t in taken:
            self._emit(t, set(range(t.count)))

    def _grow(self, t: _Taken, *, limit: int | None) -> None:
        chunks = t.item.chunks
        while t.count < len(chunks):
            cost = self.costs(t.item)[t.count] + (0 if t.count else self.overhead(t.item))
            if cost > self.left or (limit is not None and t.cost + cost > limit):
                return
            t.count += 1
            t.cost += cost
            self.left -= cost

    def _at_most(self, chars: int) -> int:
        """Tokens `chars` characters cost at most, whatever kind of text they turn out to be
        part of (a caption's parts are charged apart, before the caption is written)."""
        return max(self.estimator.estimate_chars(chars, kind) for kind in KINDS)

    # -- value packing ----------------------------------------------------------------------

    def by_value(self, items: Sequence[Item], *, caps: Mapping[str, int] | None = None) -> None:
        """Take the most valuable chunks of all `items` first (see the module docstring),
        spending at most `caps[kind]` tokens on the items of that kind; emit each item in
        order."""
        caps = caps or {}
        spent: dict[str, int] = {}
        taken = [_Taken(item) for item in items]
        order = sorted(
            (
                (-_value(t.item, i), n, i)
                for n, t in enumerate(taken)
                for i in range(len(t.item.chunks))
            )
        )
        for _, n, i in order:
            t = taken[n]
            item = t.item
            needed = _needs(item, i)
            if needed is not None and needed not in t.picked:
                continue  # what it continues did not fit: it cannot come alone
            cost = self.costs(item)[i] + (0 if t.picked else self.overhead(item))
            cap = caps.get(item.kind)
            if cost > self.left:
                continue
            if cap is not None and spent.get(item.kind, 0) + cost > cap:
                t.capped = True
                continue
            t.picked.add(i)
            t.cost += cost
            spent[item.kind] = spent.get(item.kind, 0) + cost
            self.left -= cost
        for t in taken:
            self._emit(t, t.picked)

    # -- emitting ---------------------------------------------------------------------------

    def _emit(self, t: _Taken, picked: set[int]) -> None:
        item = t.item
        total = item.units or _units(item, range(len(item.chunks)))
        if not picked:
            size = sum(self.costs(item)) + self.overhead(item)
            self.omitted.append(
                Omitted(
                    path=item.path or item.kind,
                    reason=f"{item.kind} ({item.why}): {_over(t, note=t.capped)} ({size:,} tokens)",
                )
            )
            return
        parts: list[str] = [item.lead] if item.lead else []
        skips: set[int] = set()
        if item.labels:
            caption, skips = excerpt_caption(item, picked)
            parts.append(caption)
        for i in sorted(picked):
            if i in skips:
                parts.append(SKIP_LINE)
            parts.append(item.chunks[i])
        text = "".join(parts)
        shown = _units(item, sorted(picked))
        if len(picked) < len(item.chunks) or shown < total:
            # Hunks begun but not finished (a long hunk cut after its first chunks).
            begun = sum(1 for i in picked if _needs(item, i) is None)
            partial = max(begun - shown, 0) if item.unit == "hunks" else 0
            unoffered = total - _units(item, range(len(item.chunks)))  # never made chunks
            text += _note(item, total - shown, partial, unoffered, _over(t, note=True))
            in_part = f" ({partial:,} shown in part)" if partial else ""
            why = f"{_over(t)}{in_part}"
            if unoffered:
                missing = _missing(item, total - shown, unoffered, _over(t, note=True))
                why = f"not included: {missing}"
            self.omitted.append(
                Omitted(
                    path=item.path or item.kind,
                    reason=f"{item.kind}: {total - shown:,} of {total:,} {item.unit} {why}",
                )
            )
        tokens = self.estimate(text) + self.frame(item)
        lines = merged(r for i in picked if (r := _shows(item, i)) is not None)
        self.sections.append(
            Section(
                kind=item.kind,
                path=item.path,
                why=item.why,
                text=text,
                tokens=tokens,
                lines={item.path: lines} if item.path and lines else {},
            )
        )


def frame_text(kind: str, path: str | None, why: str) -> str:
    """What `render_context` (bot.council.prompts) writes around a section's text, with the
    blank line that separates it from the next: its heading and its untrusted-data fence
    (of three backticks; `FENCE_SLACK` covers a longer one)."""
    return f"{section_heading(kind, path, why)}\n{fence_untrusted(kind, '')}\n\n"


def title_text(title: str) -> str:
    """What `render_context` writes before the first section: its heading and the title."""
    return f"{CONTEXT_HEADING}{fence_title(title)}\n\n"


def _value(item: Item, i: int) -> float:
    return item.values[i] if i < len(item.values) else 0.0


def _shows(item: Item, i: int) -> tuple[int, int] | None:
    return item.shows[i] if i < len(item.shows) else None


def merged(ranges: Iterable[tuple[int, int]]) -> Lines:
    """Inclusive line ranges joined where they overlap or touch, in order."""
    out: Lines = []
    for first, last in sorted(ranges):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out


def excerpt_caption(item: Item, picked: Iterable[int]) -> tuple[str, set[int]]:
    """The caption of a numbered excerpt showing chunks `picked`, and the chunks a skip line
    (`⋮`) goes before: `@@ lines 12-40 (function f; class C), 88-90 of app/x.py @@`.
    Each run is adjacent chunks, with what they hold (their labels, each a "; "-separated
    list, said once each, at most `CAPTION_LABELS`); a run of all the file's lines is
    `(whole file)`."""
    runs: list[tuple[int, int, list[str]]] = []
    skips: set[int] = set()
    for i in sorted(picked):
        shown = _shows(item, i)
        if shown is None:
            continue
        label = item.labels[i] if i < len(item.labels) else ""
        if runs and shown[0] == runs[-1][1] + 1:
            first, _, labels = runs[-1]
            runs[-1] = (first, shown[1], labels)
        else:
            if runs:
                skips.add(i)
            labels = []
            runs.append((shown[0], shown[1], labels))
        labels += [a for a in label.split("; ") if a and a not in labels]
    pieces = []
    for first, last, labels in runs:
        if first == 1 and last == item.file_lines:
            labels = ["whole file"]
        more = "; ..." if len(labels) > CAPTION_LABELS else ""
        what = f" ({'; '.join(labels[:CAPTION_LABELS])}{more})" if labels else ""
        pieces.append(f"{first}-{last}{what}")
    path = " ".join(show_bidi(item.path or "").split())
    return f"@@ lines {', '.join(pieces)} of {path} @@\n", skips


def _needs(item: Item, i: int) -> int | None:
    """The chunk that must be taken before chunk `i`, if any."""
    if i < len(item.needs) and item.needs[i] >= 0:
        return item.needs[i]
    chained = i > 0 and (item.chained[i] if i < len(item.chained) else not item.values)
    return i - 1 if chained else None


def _units(item: Item, picked: Sequence[int] | range) -> int:
    if item.unit_of:
        done = 0
        for i in picked:
            done += item.unit_of[i] - (item.unit_of[i - 1] if i else 0)
        return done
    return sum(item.chunks[i].count("\n") for i in picked)


def _over(t: _Taken, note: bool = False) -> str:
    """Why chunks that were offered were not taken: the budget, or the cap on their kind."""
    if t.capped:
        share = f"over the share {t.item.kind} may take"
        return share if note else f"not included: {share}"
    return "over the token budget" if note else "did not fit the budget"


def _note(item: Item, missing: int, partial: int = 0, unoffered: int = 0, over: str = "") -> str:
    in_part = f", {partial:,} of them shown in part" if partial else ""
    why = _missing(item, missing, unoffered, over or "over the token budget")
    return f"[... {missing:,} more {item.unit} not included{in_part}: {why}]\n"


def _missing(item: Item, missing: int, unoffered: int, over: str) -> str:
    """Why `missing` units are not shown: `over` (the budget, a cap), or the `unoffered`
    ones (never made chunks: `left_out`) and the rest `over`."""
    if not unoffered:
        return over
    unfit = missing - unoffered
    return f"{unoffered:,} {item.left_out}" + (f", {unfit:,} {over}" if unfit else "")


# --- the "Not included" list -------------------------------------------------------------


def not_included(omitted: Sequence[Omitted], estimator: TokenEstimator, room: int) -> list[Omitted]:
    """The omitted list as sent, within `room` tokens (heading included): entries in order
    while they fit, then one line that counts the rest by kind of reason."""
    if not omitted:
        return []
    rests = _summaries(omitted)  # rests[n]: the line counting omitted[n:]
    cost = estimator.estimate(NOT_INCLUDED_HEADING + "\n")
    kept: list[Omitted] = []
    for n, entry in enumerate(omitted):
        line = estimator.estimate(f"- {entry.path}: {entry.reason}\n")
        summary = rests[n + 1]
        after = estimator.estimate(f"- {summary.path}: {summary.reason}\n") if summary else 0
        if cost + line + after > room:
            rest = rests[n]
            if (
                rest is not None
                and cost + estimator.estimate(f"- {rest.path}: {rest.reason}\n") <= room
            ):
                kept.append(rest)
            return kept
        kept.append(entry)
        cost += line
    return kept


def _summaries(omitted: Sequence[Omitted]) -> list[Omitted | None]:
    """For each n, the line counting `omitted[n:]` by kind (kinds in the order they first
    appear there), and None past the end: one pass from the end, not one per entry."""
    out: list[Omitted | None] = [None]
    kinds: dict[str, int] = {}
    for n in range(len(omitted) - 1, -1, -1):
        kind = omitted[n].reason.split(" (", 1)[0].split(":", 1)[0]
        count = kinds.pop(kind, 0) + 1
        kinds = {kind: count, **kinds}  # this entry's kind now appears first
        counted = ", ".join(f"{c:,} {k}" for k, c in kinds.items())
        rest = len(omitted) - n
        out.append(Omitted(path=f"{rest:,} more", reason=f"not listed ({counted})"))
    return out[::-1]
