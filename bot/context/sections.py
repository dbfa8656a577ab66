"""The context's items, rendered: each changed file's diff, and numbered excerpts of files (the
code around a change, files the change names, related files and tests; guidance's parts are
bot/context/guides.py's).

Every line of a file shown carries its head-side number in the diff's own gutter: a diff
line is `  86 + added`, `  12 - removed` (old side), `  40   context`; a line of any other
section is numbered as a context line is (`  40   text`). Every chunk knows which head-side
lines it shows (`Item.shows`), which is what a packed section's `lines` are; an excerpt's
caption is written by the packer for what it takes (bot/context/pack.py).

A related, test or named file is never sent from its top by default: its licence header
and import block are left out (bot/context/excerpt.py); a file short without them is sent
whole, a longer one only in the parts near the change's names (`file_item` takes the
ranges to show, so a better analysis can supply them).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.context.classify import language_of
from bot.context.diff import Hunk, ParsedFile
from bot.context.excerpt import ChangeNames, Shown, change_names, file_head, name_ranges
from bot.context.models import SectionKind, Signals
from bot.context.pack import CHUNK_LINES, Item, chunk_lines
from bot.context.prose import show_bidi
from bot.context.related import Named, Related
from bot.context.widen import widen

EXTEND_LINES = 3  # more context lines from the head on each side of every hunk
CODE_CHUNK_LINES = 25
LISTING_FILES = 40
SHORT_FILE = 60  # lines, its head left out: a related file this short is sent whole
# What a chunk is worth, before its file's weight and its own factor: a hunk of the diff
# first, then the code around it (falling with distance), files the change names by path,
# related files and the relevant parts of guidance, then the rest of the changed files.
DIFF_VALUE = 100.0
CODE_VALUE = 45.0
NAMED_VALUE = 40.0
RELATED_VALUE = 25.0
RELATED_DECAY = 0.97
REST_VALUE = 20.0
GLIMPSE = 25  # lines of a long related file's body shown when no line names the change's
GLIMPSE_WEIGHT = 0.5
HUNK_DECAY = 0.93  # each further hunk of a file, in order of value: breadth before depth
# ...down to this: an ordinary hunk stays above its file's changed symbols (60), their chunks too.
HUNK_FLOOR = 0.7


# --- the gutter ------------------------------------------------------------------------


def gutter(number: int, width: int, mark: str, text: str) -> str:
    """`  86 + text`; an empty line gets no trailing blanks, any other text is kept exactly."""
    return f"{number:>{width}} {mark} {text}" if text else f"{number:>{width}} {mark}".rstrip()


def gutter_width(last: int) -> int:
    """Digits of the largest line number shown (at least 4), so the code lines up."""
    return max(4, len(str(last)))


def numbered_lines(hunk: Hunk, width: int = 4) -> list[str]:
    """The hunk's body with a gutter: `  86 + added`, `  12 - removed`, `  40   context`
    (new-side numbers for added and context lines, old-side for removed ones); a
    `\\ No newline` marker gets a blank gutter."""
    old, new = hunk.source_start, hunk.target_start
    out: list[str] = []
    for line in hunk.lines:
        kind, text = line[:1], line[1:]
        if kind == "+":
            out.append(gutter(new, width, "+", text))
            new += 1
        elif kind == "-":
            out.append(gutter(old, width, "-", text))
            old += 1
        elif kind == "\\":
            out.append(f"{'':>{width}}   {line}")
        else:  # context (a blank body line is an empty context line)
            out.append(gutter(new, width, " ", text))
            old, new = old + 1, new + 1
    return out


def new_side_numbers(hunk: Hunk) -> list[int | None]:
    """Per body line of the hunk, the new-side number `numbered_lines` gives it (None: a
    removed line or a `\\ No newline` marker)."""
    new = hunk.target_start
    out: list[int | None] = []
    for line in hunk.lines:
        if line[:1] in ("-", "\\"):
            out.append(None)
        else:
            out.append(new)
            new += 1
    return out


# --- the diff --------------------------------------------------------------------------


def diff_item(
    parsed: ParsedFile,
    why: str,
    heads: Mapping[str, str],
    weight: float,
    signals: Signals,
    *,
    extend: bool,
    room_chars: int,
) -> Item:
    """The file's diff, one hunk after another, each hunk extended by `EXTEND_LINES` lines
    of the head on either side (git's own three are often too few to read a change), and
    valued by what it changes (see `hunk_value`)."""
    head = heads.get(parsed.path)
    lines = head_lines(head) if head is not None and extend else None
    hunks = extend_hunks(parsed.hunks, lines)
    risky = {p.line for p in signals.risky_patterns if p.path == parsed.path}
    lead = show_bidi("".join(f"{line}\n" for line in parsed.header)) if parsed.header else ""
    chunks: list[str] = []
    unit_of: list[int] = []
    values: list[float] = []
    chained: list[bool] = []
    shows: list[tuple[int, int] | None] = []
    width = _gutter(hunks)
    factors = [hunk_value(h, parsed.info.language, risky) for h in hunks]
    by_value = sorted(range(len(hunks)), key=lambda n: -factors[n])
    place = {n: k for k, n in enumerate(by_value)}
    kept = _kept(hunks, by_value, room_chars)
    done = 0
    for n, hunk in enumerate(hunks):
        if n not in kept:
            continue
        body = numbered_lines(hunk, width)
        pieces = [show_bidi(c) for c in chunk_lines([hunk.header, *body])]
        shows += _shown(hunk, len(pieces))
        value = DIFF_VALUE * weight * factors[n] * max(HUNK_DECAY ** place[n], HUNK_FLOOR)
        chunks += pieces
        done += 1
        unit_of += [done - 1] * (len(pieces) - 1) + [done]
        values += [value * 0.98**k for k in range(len(pieces))]
        chained += [False] + [True] * (len(pieces) - 1)
    if not chunks and lead:  # a mode change, a rename without edits: the header is all
        chunks, unit_of, values, chained, lead = [lead], [0], [DIFF_VALUE * weight], [False], ""
        shows = [None]
    return Item(
        "diff",
        parsed.path,
        why,
        chunks,
        "hunks",
        len(hunks),
        unit_of,
        values,
        chained,
        lead=lead,
        shows=shows,
    )


def _gutter(hunks: list[Hunk]) -> int:
    """The width of the line numbers' gutter: the widest line number of either side."""
    last = max(
        (max(h.source_start + h.source_length, h.target_start + h.target_length) for h in hunks),
        default=0,
    )
    return gutter_width(last)


def _kept(hunks: list[Hunk], by_value: list[int], room_chars: int) -> set[int]:
    """Choose first: only the most valuable hunks that one budget could hold are chunked."""
    kept: set[int] = set()
    size = 0
    for n in by_value:
        if size > room_chars:
            break
        kept.add(n)
        size += sum(len(line) + 8 for line in hunks[n].lines)
    return kept


def _shown(hunk: Hunk, chunks: int) -> list[tuple[int, int] | None]:
    """The head lines each of the hunk's `chunks` chunks shows (first, last), None for none:
    its first chunk starts with the hunk's header, which shows no line."""
    numbers = [None, *new_side_numbers(hunk)]
    shows: list[tuple[int, int] | None] = []
    for k in range(chunks):
        found = [x for x in numbers[k * CHUNK_LINES : (k + 1) * CHUNK_LINES] if x is not None]
        shows.append((found[0], found[-1]) if found else None)
    return shows


def extend_hunks(hunks: list[Hunk], head: list[str] | None) -> list[Hunk]:
    """Each hunk with up to `EXTEND_LINES` more context lines from the head above and below,
    never reaching into its neighbour (a pure-deletion diff, a missing head, or a head the
    diff does not match, such as a diff piped in from another checkout: as is)."""
    if head is None or not hunks or not all(matches(h, head) for h in hunks):
        return hunks
    out: list[Hunk] = []
    for n, hunk in enumerate(hunks):
        if any(line[:1] not in ("+", "-", " ", "\\", "") for line in hunk.lines):
            return hunks  # an unusual body: keep the diff exactly as git wrote it
        floor = out[-1].target_start + out[-1].target_length if out else 1
        after = hunks[n + 1].target_start - EXTEND_LINES if n + 1 < len(hunks) else len(head) + 1
        start = max(hunk.target_start - EXTEND_LINES, floor, 1)
        end = hunk.target_start + hunk.target_length  # first head line after the hunk
        stop = min(end + EXTEND_LINES, max(after, end), len(head) + 1)
        if hunk.target_length == 0 or end - 1 > len(head):
            out.append(hunk)
            continue
        above = [f" {head[i - 1]}" for i in range(start, hunk.target_start)]
        below = [f" {head[i - 1]}" for i in range(end, stop)]
        if hunk.lines and hunk.lines[-1].startswith("\\"):
            below = []  # nothing follows "\\ No newline at end of file"
        grown = Hunk(
            header=hunk.header,
            source_start=hunk.source_start - len(above),
            source_length=hunk.source_length + len(above) + len(below),
            target_start=hunk.target_start - len(above),
            target_length=hunk.target_length + len(above) + len(below),
            lines=[*above, *hunk.lines, *below],
        )
        grown.header = _header(grown, hunk.header)
        out.append(grown)
    return out


def matches(hunk: Hunk, head: list[str]) -> bool:
    """Whether the head has the hunk's new side where the hunk says."""
    number = hunk.target_start
    for line in hunk.lines:
        kind = line[:1]
        if kind in ("-", "\\"):
            continue
        text = line[1:]
        if number > len(head) or head[number - 1].rstrip("\r") != text.rstrip("\r"):
            return False
        number += 1
    return True


def _header(hunk: Hunk, old: str) -> str:
    section = old.split("@@", 2)[2] if old.count("@@") >= 2 else ""
    return (
        f"@@ -{hunk.source_start},{hunk.source_length} "
        f"+{hunk.target_start},{hunk.target_length} @@{section}"
    )


_IMPORT = re.compile(
    r"^\s*(?:import\b|from\s+\S+\s+import\b|#\s*include\b|using\s+[\w.]+;|package\s|require\b"
    r"|use\s+[\w:]+|export\s+\*\s+from|export\s+\{[^}]*\}\s+from|\)\s*$|\(\s*$"
    r"|\"[\w./-]+\"\s*$|[\w.]+\s+\"[\w./-]+\"\s*$|const\s+\w+\s*=\s*require\()"
)
_COMMENT = re.compile(r"^\s*(?:#(?!include)|//|/\*|\*|<!--|--\s|;;)")
_LOGIC = re.compile(
    r"\b(?:if|else|elif|for|while|return|raise|throw|catch|except|try|finally|await|yield|"
    r"switch|case|select|defer|go|break|continue|goto|unless|match|when|lock|unsafe)\b|[=!<>]=|&&|\|\|"
)


def hunk_value(hunk: Hunk, language: str | None, risky: set[int]) -> float:
    """How much a reviewer needs the hunk, relative to an ordinary change (1.0): a risky
    pattern or changed control flow first; imports, comments and formatting last."""
    number = hunk.target_start
    added: list[tuple[int, str]] = []
    removed: list[str] = []
    for line in hunk.lines:
        kind = line[:1]
        if kind == "+":
            added.append((number, line[1:]))
        elif kind == "-":
            removed.append(line[1:])
        if kind not in ("-", "\\"):
            number += 1
    changed = [t for _, t in added] + removed
    if any(n in risky for n, _ in added):
        return 1.6
    if not any(t.strip() for t in changed):
        return 0.2  # blank lines only
    squeeze = "".join
    if sorted(squeeze(t.split()) for t in removed) == sorted(squeeze(t.split()) for _, t in added):
        return 0.25  # formatting only: the same text in other whitespace
    meaningful = [t for t in changed if t.strip()]
    if all(_COMMENT.match(t) for t in meaningful):
        return 0.5
    if language is not None and all(_IMPORT.match(t) for t in meaningful):
        return 0.35
    return 1.25 if any(_LOGIC.search(t) for t in meaningful) else 1.0


def changed_ranges(hunks: list[Hunk]) -> list[tuple[int, int]]:
    """Per hunk, the head lines its changes touch (a pure deletion: where it happened)."""
    ranges = []
    for hunk in hunks:
        number, first, last = hunk.target_start, None, None
        for line in hunk.lines:
            kind = line[:1]
            if kind in ("+", "-"):
                first = number if first is None else first
                last = number if kind == "+" else max(last or number, number)
            if kind not in ("-", "\\"):
                number += 1
        if first is not None and last is not None:
            ranges.append((first, last))
    return ranges


# --- numbered excerpts -----------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One chunk of a numbered excerpt: head lines `first`-`last` (at most
    `CODE_CHUNK_LINES`), what they hold, their value, and the part that must be taken
    before it (its index; -1: none)."""

    first: int
    last: int
    label: str
    value: float
    needs: int = -1


def numbered_item(
    kind: SectionKind, path: str, why: str, lines: Sequence[str], parts: Sequence[Part]
) -> Item:
    """An excerpt of a file (`lines`, as at head) made of `parts`, in line order, each
    line behind its head-side number; the packer captions what it takes."""
    width = gutter_width(len(lines))
    chunks = [
        show_bidi("".join(f"{gutter(n, width, ' ', lines[n - 1])}\n" for n in range(a, b + 1)))
        for a, b in ((p.first, p.last) for p in parts)
    ]
    sizes = list(itertools.accumulate(p.last - p.first + 1 for p in parts))
    return Item(
        kind,
        path,
        why,
        chunks,
        units=sizes[-1] if sizes else 0,
        unit_of=sizes,
        values=[p.value for p in parts],
        chained=[False] * len(parts),
        needs=[p.needs for p in parts],
        shows=[(p.first, p.last) for p in parts],
        labels=[p.label for p in parts],
        file_lines=len(lines),
    )


def head_lines(text: str) -> list[str]:
    """A file's lines as numbered at head (a final newline ends the last line)."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return lines


def code_item(
    parsed: ParsedFile, heads: Mapping[str, str], weight: float, extended: bool
) -> Item | None:
    """The head's lines the diff does not show, in runs of at most `CODE_CHUNK_LINES`: those
    of the enclosing definitions (`widen`) valued by nearness to the change, then the rest
    of the file (its licence header left out), valued lower and falling with distance."""
    text = heads.get(parsed.path)
    if text is None or parsed.info.change == "added":
        return None  # an added file is all in its diff
    lines = head_lines(text)
    changes = changed_ranges(parsed.hunks)
    if not changes or not all(matches(h, lines) for h in parsed.hunks):
        return None  # nothing changed at head, or a head the diff does not describe
    spans = widen(parsed.path, parsed.info.language, text, changes)
    in_diff: set[int] = set()
    for hunk in extend_hunks(parsed.hunks, lines if extended else None):
        in_diff.update(range(hunk.target_start, hunk.target_start + hunk.target_length))
    near: set[int] = set()
    label_of: dict[int, str] = {}
    for span in spans:
        for number in range(span.start, span.end + 1):
            near.add(number)
            label_of.setdefault(number, span.label)
    licence = {
        n
        for h in file_head(lines, parsed.info.language)
        if h.what == "licence header"
        for n in range(h.first, h.last + 1)
    }
    shown = [n for n in range(1, len(lines) + 1) if n not in in_diff]
    runs = _runs([n for n in shown if n in near or n not in licence], near)
    if not runs:
        return None
    parts = []
    for n, (first, last, widened) in enumerate(runs):
        distance = min(
            min(abs(first - a), abs(last - b), 0 if first <= b and a <= last else 1 << 30)
            for a, b in changes
        )
        if widened:
            value = CODE_VALUE * weight / (1 + distance / 25)
            label = label_of.get(first, "enclosing code")
        else:
            value = REST_VALUE * weight / (1 + distance / 80)
            label = ""
        # The rest of the file comes nearest first: a run needs the one next to it on the
        # side of its nearest change.
        parts.append(Part(first, last, label, value, _toward_change(n, runs, changes)))
    labels = "; ".join(dict.fromkeys(s.label for s in spans)) or "the rest of the file"
    return numbered_item("code", parsed.path, f"around the change: {labels}"[:300], lines, parts)


def _toward_change(
    n: int, runs: list[tuple[int, int, bool]], changes: list[tuple[int, int]]
) -> int:
    """The index of the run next to run `n` on the side of its nearest change (-1: none,
    or run `n` is itself part of the code around a change)."""
    first, last, widened = runs[n]
    if widened:
        return -1
    a, b = min(changes, key=lambda c: min(abs(first - c[1]), abs(last - c[0])))
    if last < a and n + 1 < len(runs) and runs[n + 1][0] == last + 1:
        return n + 1
    if first > b and n > 0 and runs[n - 1][1] == first - 1:
        return n - 1
    return -1


def _runs(numbers: list[int], near: set[int]) -> list[tuple[int, int, bool]]:
    """Consecutive line numbers as runs of at most `CODE_CHUNK_LINES`, a run never mixing
    widened (`near`) and other lines: [(first, last, widened), ...]."""
    runs: list[tuple[int, int, bool]] = []
    for number in numbers:
        widened = number in near
        if runs:
            first, last, kind = runs[-1]
            if number == last + 1 and kind == widened and last - first + 1 < CODE_CHUNK_LINES:
                runs[-1] = (first, number, kind)
                continue
        runs.append((number, number, widened))
    return runs


# --- related, test and named files -----------------------------------------------------


def names_of_change(changed: Sequence[ParsedFile], heads: Mapping[str, str]) -> ChangeNames:
    """The change's names (bot/context/excerpt.py `change_names`) from its files as sent."""
    files = []
    for parsed in changed:
        if parsed.info.excluded is not None:
            continue
        head = heads.get(parsed.path)
        lines = head_lines(head) if head else [t for _, t in parsed.added_lines]
        numbers = [n for r in changed_ranges(parsed.hunks) for n in r]
        texts = [t for _, t in parsed.added_lines] + parsed.removed_lines
        files.append((lines, numbers, texts))
    return change_names(files)


def file_item(
    related: Related,
    text: str,
    value: float,
    names: ChangeNames,
    ranges: Sequence[Shown] | None = None,
    *,
    glimpse: bool = True,
) -> Item | None:
    """A related, test or named file, never from its top: its licence header and imports
    left out (an import line that names a definition the change touches kept). Short
    without them (`SHORT_FILE`), the rest is sent whole; longer, only `ranges` (by default
    the lines near the change's names, `name_ranges`), best first, or the first `GLIMPSE`
    lines of its body when none is found. None: nothing left to show, or
    (`glimpse` False) no line names the change: then neither a short file nor a glimpse."""
    lines = head_lines(text.removesuffix("\n") + "\n")
    heads = file_head(lines, language_of(related.path, lines[0]))
    in_head = {n for h in heads for n in range(h.first, h.last + 1)}
    body = [n for n in range(1, len(lines) + 1) if n not in in_head]
    found = list(ranges) if ranges is not None else name_ranges(lines, names, heads)
    past = " and ".join(h.what for h in heads)
    if not found and not glimpse:
        return None
    if len(body) <= SHORT_FILE:
        label = f"after its {past}" if past else ""
        touched = [r for r in found if all(n in in_head for n in range(r.first, r.last + 1))]
        found = touched + [Shown(a, b, label) for a, b in _spans(body)]
    elif not found:
        label = f"its first lines after its {past}" if past else "its first lines"
        found = [Shown(a, b, label, GLIMPSE_WEIGHT) for a, b in _spans(body[:GLIMPSE])]
    parts = _excerpt(len(lines), found, value)
    if not parts:
        return None
    return numbered_item(related.kind, related.path, related.why, lines, parts)


def _spans(numbers: Sequence[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in numbers:
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def _excerpt(total: int, wanted: Sequence[Shown], value: float) -> list[Part]:
    """The parts showing the `wanted` ranges of a file of `total` lines, in line order:
    valued best weight first, each range read from its start (a line in two ranges
    belongs to the better one)."""
    order = sorted(range(len(wanted)), key=lambda k: (-wanted[k].weight, wanted[k].first))
    owner: dict[int, int] = {}  # line -> rank of the best wanted range holding it
    for rank, k in enumerate(order):
        for n in range(max(wanted[k].first, 1), min(wanted[k].last, total) + 1):
            owner.setdefault(n, rank)
    segments: list[tuple[int, int, int]] = []  # (first, last, owner rank)
    for n in sorted(owner):
        mine = owner[n]
        if segments:
            first, last, theirs = segments[-1]
            if n == last + 1 and theirs == mine and n - first < CODE_CHUNK_LINES:
                segments[-1] = (first, n, mine)
                continue
        segments.append((n, n, mine))
    parts: list[Part] = []
    depth: dict[int, int] = {}  # chunks of a range before this one
    for n, (first, last, mine) in enumerate(segments):
        shown = wanted[order[mine]]
        k = depth[mine] = depth.get(mine, -1) + 1
        joined = n > 0 and segments[n - 1][1] == first - 1 and segments[n - 1][2] == mine
        worth = value * shown.weight * 0.97**mine * 0.98**k
        parts.append(Part(first, last, shown.label, worth, n - 1 if joined else -1))
    return parts


def named_items(
    named: list[Named], texts: Mapping[str, str], visible: list[str], names: ChangeNames
) -> list[Item]:
    """Files the change names by path (see `file_item`), and directories it names (a
    listing of their files)."""
    items = []
    for entry in named:
        if entry.kind == "listing":
            inside = sorted(p for p in visible if p.startswith(entry.path.rstrip("/") + "/"))
            shown = inside[:LISTING_FILES]
            more = len(inside) - len(shown)
            lines = [*shown, *([f"[... and {more:,} more files]"] if more else [])]
            items.append(
                Item(
                    "related",
                    entry.path.rstrip("/") + "/",
                    f"directory {entry.why}: its files",
                    ["".join(f"{line}\n" for line in lines)],
                    values=[NAMED_VALUE],
                    chained=[False],
                )
            )
        elif entry.path in texts:
            related = Related(entry.path, "related", entry.why)
            item = file_item(related, texts[entry.path], NAMED_VALUE, names)
            if item is not None:
                items.append(item)
    return items
