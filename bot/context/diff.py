"""Unified diff in, files and hunks out; any input, however broken, parses without raising.

unidiff (metadata mode, one file at a time so one bad file cannot sink the rest) decides
what each file is: added, deleted, renamed, binary, its modes. A light line scanner slices
the raw text into hunks with target line numbers, so sections quote the diff exactly as
written and findings can anchor to lines. A file unidiff rejects keeps its raw hunks and
the reason.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchedFile, PatchSet

from bot.context.models import ChangedFile, ChangeKind

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_QUOTED_PAIR = re.compile(r'^("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$')
_SIMILARITY = re.compile(r"^similarity index (\d+)%")
_DEV_NULL = "/dev/null"
# Hunk sizes beyond this are not believed (a corrupt header must not make us loop long).
_MAX_HUNK_LINES = 10_000_000


@dataclass(frozen=True)
class HunkRange:
    """A hunk header's line ranges: `@@ -source_start,source_length +target_start,... @@`."""

    source_start: int
    source_length: int
    target_start: int
    target_length: int


@dataclass
class Hunk:
    header: str
    source_start: int
    source_length: int
    target_start: int
    target_length: int
    lines: list[str] = field(default_factory=list)  # body lines with their +/-/space prefix


@dataclass
class ParsedFile:
    info: ChangedFile
    header: list[str]  # the file's header lines, `index` lines dropped
    hunks: list[Hunk]
    added_lines: list[tuple[int, str]]  # (line number at head, text without the "+")
    removed_lines: list[str]

    @property
    def path(self) -> str:
        return self.info.path


@dataclass
class _RawFile:
    header: list[str] = field(default_factory=list)
    hunks: list[Hunk] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)  # original lines, for unidiff
    crlf: bool = False
    no_newline: bool = False
    malformed: str | None = None
    binary_patch: bool = False  # after "GIT binary patch": base85 data, not header
    start: int = 0  # offsets in the diff: the first line's start, the last line's end
    end: int = 0


def decode_diff(diff: str | bytes) -> str:
    """Bytes as UTF-8; undecodable bytes become U+FFFD (and the file is flagged later)."""
    if isinstance(diff, str):
        return diff
    return diff.decode("utf-8", "replace")


def parse_diff(text: str) -> list[ParsedFile]:
    return [_parsed(raw) for raw in _scan(text)]


def iter_diff(text: str) -> Iterator[tuple[ParsedFile, int, int]]:
    """The files of the diff one at a time, each with the offsets of its text in `text`
    (`parse_diff(text[start:end])` parses that file again, alone)."""
    for raw in _scan(text):
        yield _parsed(raw), raw.start, raw.end


def hunk_ranges(patch: str) -> list[HunkRange]:
    """The hunk headers of one file's patch, such as the `patch` GitHub gives per file.

    Body lines start with ` `, `+`, `-` or `\\`, so only headers match.
    """
    lines = (line.removesuffix("\r") for line in patch.split("\n"))
    return [_range(m) for m in map(_HUNK.match, lines) if m is not None]


# --- scanning -----------------------------------------------------------------------


def _scan(text: str) -> Iterator[_RawFile]:
    """Split the text into files (at `diff --git`, or at a `---`/`+++` pair outside a hunk)
    and each file into hunks, counting hunk lines so a body line is never a header. One
    file at a time, its lines read as `text.split("\n")` gives them but one by one: a file
    is given when the next one starts (or the text ends), with the offsets of its text,
    and only its own lines are held meanwhile."""
    current: _RawFile | None = None
    size = len(text)
    pos = 0
    while pos <= size:
        cut = text.find("\n", pos)
        cut = size if cut < 0 else cut
        start, original, pos = pos, text[pos:cut], cut + 1
        line = original[:-1] if original.endswith("\r") else original
        if current is not None and line.startswith("\\") and current.hunks:
            current.hunks[-1].lines.append(line)
            current.raw.append(original)
            current.end = cut
            current.no_newline = True
            continue
        match = _HUNK.match(line) if line.startswith("@@") else None
        if match and current is not None:
            hunk = _new_hunk(line, match)
            current.hunks.append(hunk)
            current.raw.append(original)
            current.end = cut
            pos, stop = _hunk_body(text, pos, hunk, current)
            if stop is None:
                continue
            # A line the hunk's counts did not expect ends it: read it as outside a hunk.
            line, original, start, cut = stop
        following = _outside(line, original, start, cut, text, current)
        if following is not current and current is not None and _kept(current):
            yield current
        current = following
    if current is not None and _kept(current):
        yield current


def _hunk_body(
    text: str, pos: int, hunk: Hunk, current: _RawFile
) -> tuple[int, tuple[str, str, int, int] | None]:
    """The hunk's body lines from `pos`, as many as its header counts: where reading
    stopped, and the line that ended the hunk early (None: it was as long as it says)."""
    left_src, left_tgt = hunk.source_length, hunk.target_length
    lines, raw, size = hunk.lines, current.raw, len(text)
    stop = None
    while (left_src > 0 or left_tgt > 0) and pos <= size:
        cut = text.find("\n", pos)
        cut = size if cut < 0 else cut
        original = text[pos:cut]
        line = original[:-1] if original.endswith("\r") else original
        kind = line[:1]
        if kind == "+" and left_tgt > 0:
            left_tgt -= 1
        elif kind == "-" and left_src > 0:
            left_src -= 1
        elif kind in (" ", "") and left_src > 0 and left_tgt > 0:
            left_src, left_tgt = left_src - 1, left_tgt - 1
        elif kind == "\\":
            current.no_newline = True
        else:
            current.malformed = current.malformed or "hunk shorter than its header says"
            stop = (line, original, pos, cut)
            pos = cut + 1
            break
        lines.append(line)
        raw.append(original)
        if line is not original:
            current.crlf = True
        current.end = cut
        pos = cut + 1
    return pos, stop


def _kept(raw: _RawFile) -> bool:
    return bool(raw.header or raw.hunks)


def _outside(
    line: str,
    original: str,
    start: int,
    end: int,
    text: str,
    current: _RawFile | None,
) -> _RawFile | None:
    """A line outside any hunk: a new file's start, a header line, or noise between files
    (the line is `text[start:end]`; a `---` line starts a file when `+++` follows)."""
    starts_plain = (
        line.startswith("--- ")
        and end < len(text)
        and text.startswith("+++ ", end + 1)
        and (current is None or bool(current.hunks) or _has_source_line(current))
    )
    if line.startswith("diff --git ") or starts_plain:
        current = _RawFile(start=start, end=end)
    if current is None or (current.hunks and not starts_plain):
        return current  # preamble or trailing noise (a mail signature, a blank line)
    if not line.startswith("index ") and not current.binary_patch:
        current.header.append(line)
    current.binary_patch = current.binary_patch or line == "GIT binary patch"
    current.raw.append(original)
    current.end = end
    return current


def _has_source_line(current: _RawFile) -> bool:
    return any(h.startswith("--- ") for h in current.header)


def _range(match: re.Match[str]) -> HunkRange:
    src_start, src_len, tgt_start, tgt_len = match.groups()
    return HunkRange(
        source_start=int(src_start),
        source_length=min(int(src_len) if src_len is not None else 1, _MAX_HUNK_LINES),
        target_start=int(tgt_start),
        target_length=min(int(tgt_len) if tgt_len is not None else 1, _MAX_HUNK_LINES),
    )


def _new_hunk(line: str, match: re.Match[str]) -> Hunk:
    r = _range(match)
    return Hunk(line, r.source_start, r.source_length, r.target_start, r.target_length)


# --- one file -----------------------------------------------------------------------


def _parsed(raw: _RawFile) -> ParsedFile:
    patched, error = _unidiff(raw)
    added, removed = _changed_lines(raw.hunks)
    facts = _header_facts(raw.header)
    path: str | None
    if patched is not None:
        path, old_path, change = _from_unidiff(patched, facts)
        binary = patched.is_binary_file or facts.binary
        old_mode = patched.source_mode or facts.old_mode
        new_mode = patched.target_mode or facts.new_mode
    else:
        path, old_path, change = facts.path, facts.old_path, facts.change
        binary, old_mode, new_mode = facts.binary, facts.old_mode, facts.new_mode
    mode_only = (
        not raw.hunks
        and not binary
        and change == "modified"
        and facts.mode_change
        and old_mode != new_mode
    )
    info = ChangedFile(
        path=path or "(unnamed)",
        old_path=old_path if change in ("renamed", "copied") else None,
        change=change,
        binary=binary,
        old_mode=old_mode,
        new_mode=new_mode,
        mode_only=mode_only,
        similarity=facts.similarity,
        added=len(added),
        deleted=len(removed),
        hunks=len(raw.hunks),
        crlf=raw.crlf,
        no_newline_at_eof=raw.no_newline,
        non_utf8=any("\ufffd" in line for line in raw.raw),
        parse_error=error or raw.malformed,
    )
    return ParsedFile(info, raw.header, raw.hunks, added, removed)


def _unidiff(raw: _RawFile) -> tuple[PatchedFile | None, str | None]:
    try:
        patch = PatchSet("\n".join(raw.raw) + "\n", metadata_only=True)
    except (UnidiffParseError, ValueError, IndexError, TypeError) as error:
        return None, str(error).splitlines()[0][:200] if str(error) else type(error).__name__
    return (patch[0] if len(patch) else None), None


def _changed_lines(hunks: list[Hunk]) -> tuple[list[tuple[int, str]], list[str]]:
    added: list[tuple[int, str]] = []
    removed: list[str] = []
    for hunk in hunks:
        number = hunk.target_start
        for line in hunk.lines:
            kind = line[:1]
            if kind == "+":
                added.append((number, line[1:]))
                number += 1
            elif kind == "-":
                removed.append(line[1:])
            elif kind != "\\":
                number += 1
    return added, removed


@dataclass
class _HeaderFacts:
    path: str | None = None
    old_path: str | None = None
    change: ChangeKind = "modified"
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    mode_change: bool = False
    similarity: int | None = None
    copied: bool = False


def _header_facts(header: list[str]) -> _HeaderFacts:
    """What git's extended header says; also the fallback when unidiff rejects the file."""
    facts = _HeaderFacts()
    source = target = None
    for line in header:
        if line.startswith("diff --git "):
            source, target = _git_paths(line[len("diff --git ") :])
        elif line.startswith(("rename from ", "copy from ")):
            source = unquote(line.split(" ", 2)[2])
            facts.copied = line.startswith("copy")
            facts.change = "copied" if facts.copied else "renamed"
        elif line.startswith(("rename to ", "copy to ")):
            target = unquote(line.split(" ", 2)[2])
        elif line.startswith("--- "):
            source = _strip_prefix(line[4:].split("\t")[0])
        elif line.startswith("+++ "):
            target = _strip_prefix(line[4:].split("\t")[0])
        else:
            _mode_fact(line, facts)
    if source == _DEV_NULL:
        facts.change = "added"
    elif target == _DEV_NULL:
        facts.change = "deleted"
    facts.path = target if target not in (None, _DEV_NULL) else source
    facts.old_path = source if source not in (None, _DEV_NULL) else None
    return facts


def _git_paths(rest: str) -> tuple[str | None, str | None]:
    """The two paths of a `diff --git` line; unquoted paths may contain spaces, so the
    usual case (same path twice) is found by halving the line."""
    n = len(rest)
    half = (n - 1) // 2
    if n % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3 :]:
        return _strip_prefix(rest[:half]), _strip_prefix(rest[half + 1 :])
    pair = _QUOTED_PAIR.match(rest)
    if pair:
        return _strip_prefix(pair.group(1)), _strip_prefix(pair.group(2))
    cut = rest.rfind(" b/")
    if cut > 0:
        return _strip_prefix(rest[:cut]), _strip_prefix(rest[cut + 1 :])
    return None, None


def _mode_fact(line: str, facts: _HeaderFacts) -> None:
    similarity = _SIMILARITY.match(line)
    if similarity:
        facts.similarity = int(similarity.group(1))
    elif line.startswith("new file mode "):
        facts.change, facts.new_mode = "added", line.split()[-1]
    elif line.startswith("deleted file mode "):
        facts.change, facts.old_mode = "deleted", line.split()[-1]
    elif line.startswith("old mode "):
        facts.old_mode, facts.mode_change = line.split()[-1], True
    elif line.startswith("new mode "):
        facts.new_mode, facts.mode_change = line.split()[-1], True
    elif line.startswith(("Binary files ", "GIT binary patch")):
        facts.binary = True


def _from_unidiff(patched: PatchedFile, facts: _HeaderFacts) -> tuple[str, str | None, ChangeKind]:
    source = _strip_prefix(patched.source_file) if patched.source_file else None
    target = _strip_prefix(patched.target_file) if patched.target_file else None
    change: ChangeKind
    if facts.copied:
        change = "copied"
    elif patched.source_file == _DEV_NULL or facts.change == "added":
        change = "added"
    elif patched.target_file == _DEV_NULL or facts.change == "deleted":
        change = "deleted"
    elif patched.is_rename or facts.change == "renamed":
        change = "renamed"
    else:
        change = "modified"
    # git's rename/copy lines name the paths exactly; the `diff --git` line can be ambiguous.
    if facts.change in ("renamed", "copied") and facts.path:
        return facts.path, facts.old_path, change
    path = target if change != "deleted" and target not in (None, _DEV_NULL) else source
    return path or facts.path or "(unnamed)", source if source != _DEV_NULL else None, change


def _strip_prefix(name: str) -> str:
    name = unquote(name.strip())
    if name != _DEV_NULL and len(name) > 2 and name[1] == "/" and name[0] in "abciow12":
        return name[2:]
    return name


def unquote(name: str) -> str:
    """git's C-style quoting (`"caf\\303\\251.txt"`) undone."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    try:
        raw, _ = codecs.escape_decode(name[1:-1].encode("utf-8"))
    except ValueError:
        return name[1:-1]
    return bytes(raw).decode("utf-8", "replace")


# --- is there anything to review ------------------------------------------------------


def nothing_to_review(diff_text: str) -> str | None:
    """None when the diff changes at least one text line; else why there is nothing to
    review, in words for the user: an empty change, binary files only, renames or mode
    changes only, or text that is not a diff at all."""
    if not diff_text.strip():
        return "the change is empty (no changed line)"
    files = [f.info for f in parse_diff(diff_text)]
    if not files:
        return "this is not a diff"
    if any(f.added or f.deleted for f in files):
        return None
    binary = [f.path for f in files if f.binary]
    others = [d for f in files if not f.binary and (d := _no_line_change(f))]
    if binary and not others:
        return f"only binary files changed: {', '.join(binary)}"
    if not others:
        return "the change is empty (no changed line)"
    kinds = ", ".join(others)
    if binary:
        return f"no changed line (binary files: {', '.join(binary)}; other files: {kinds})"
    if any(d.endswith(" file)") for d in others):
        return f"no changed line (renames, mode changes or empty files only: {kinds})"
    return f"no changed line (renames or mode changes only: {kinds})"


def _no_line_change(f: ChangedFile) -> str | None:
    """What happened to a text file with no changed line, or None if nothing did."""
    if f.change in ("renamed", "copied") and f.old_path and f.old_path != f.path:
        said = f"{f.old_path} → {f.path}" + (" (copy)" if f.change == "copied" else "")
    elif f.change == "added":
        return f"{f.path} (new empty file)"
    elif f.change == "deleted":
        return f"{f.path} (deleted empty file)"
    else:
        said = ""
    if f.old_mode and f.new_mode and f.old_mode != f.new_mode:
        mode = f"mode {f.old_mode} → {f.new_mode}"
        said = f"{said} ({mode})" if said else f"{f.path} ({mode})"
    return said or None
