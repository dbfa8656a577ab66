"""Incremental re-review of a push: what the new commits changed, and what became of the
earlier findings.

A push to a pull request that already has an advisory is reviewed against that advisory's
head (`bot.github.files_diff.compare`). When the old head is still an ancestor (`ahead`),
the review's diff is the comparison's diff restricted to hunks that are also in the pull
request's current diff (`restrict`): both diffs end at the new head, so their new-side line
numbers agree, and a compare hunk is kept when a line it adds (or the place where it
removes lines) falls inside the changed lines of a hunk of the PR's diff for the same file.
A merge of the base branch into the PR changes files and lines the PR's own diff does not
have (GitHub's PR diff starts at the merge base, which the merge moves), so it contributes
nothing. When the head was rewritten (`diverged`, `behind`, or the old commit is gone),
the whole pull request is reviewed again, and the advisory says why.

After the review (`FindingTracking`): every raised finding gets its fingerprint (path,
title, the anchored line's text at head); an earlier open finding not raised again is
`fixed` when its line's text is gone from the head file, when the new commits removed or
changed its line, or (a file-wide finding) when they changed its file; otherwise it is
still open (the new commits did not touch it). A raised finding whose fingerprint the pull
request has never had is new.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.context.diff import Hunk, ParsedFile, parse_diff
from bot.council.scope import EarlierFinding, Rereview
from bot.review.anchors import DiffLines
from bot.review.fingerprints import fingerprint

if TYPE_CHECKING:
    from bot.council.advisory import MergedFinding
    from bot.store.findings import PrFinding, RaisedFinding

__all__ = [
    "BASE_MERGE_ONLY",
    "FORCE_PUSHED",
    "OPEN_FINDINGS_KIND",
    "FindingTracking",
    "added_lines",
    "open_findings_text",
    "removed_lines",
    "restrict",
    "touched_files",
]

BASE_MERGE_ONLY = (
    "re-review: the new commits bring nothing to review beyond a merge of the base branch"
)
FORCE_PUSHED = (
    "the reviewed head {sha} was rewritten (force-push), so the whole pull request was "
    "reviewed again"
)
OPEN_FINDINGS_KIND = "Findings still open from the last review"
MAX_OPEN_LISTED = 30


def _walk(hunk: Hunk) -> Iterable[tuple[str, int, int]]:
    """(kind, old line, new line) per body line; kind is " ", "+", "-" or "\\"."""
    old, new = hunk.source_start, hunk.target_start
    for line in hunk.lines:
        kind = line[:1] or " "
        yield kind, old, new
        if kind == "+":
            new += 1
        elif kind == "-":
            old += 1
        elif kind == " ":
            old += 1
            new += 1


def _touch_points(hunk: Hunk) -> set[int]:
    """New-side lines it adds, and the new-side places where it removes lines."""
    return {new for kind, _, new in _walk(hunk) if kind in ("+", "-")}


def _changed_span(hunk: Hunk) -> tuple[int, int] | None:
    points = _touch_points(hunk)
    return (min(points), max(points)) if points else None


def _new_path(f: ParsedFile) -> str | None:
    """The file's path at head; None when the diff removes it."""
    return None if f.info.change == "deleted" else f.info.path


def _old_path(f: ParsedFile) -> str | None:
    """The file's path before; None when the diff adds it."""
    return None if f.info.change == "added" else (f.info.old_path or f.info.path)


def _text(f: ParsedFile, hunks: Sequence[Hunk] | None = None) -> str:
    out = list(f.header)
    for hunk in f.hunks if hunks is None else hunks:
        out.append(hunk.header)
        out += hunk.lines
    return "\n".join(out) + "\n"


def restrict(compare_diff: str, pr_diff: str) -> str:
    """The hunks of `compare_diff` (old head...new head) that are also in `pr_diff` (the
    PR's diff at the new head): same file (at head), and a line the compare hunk adds or
    removes falls within the changed lines of one of the PR diff's hunks. A file the PR
    diff has but whose compare entry shows no hunk (binary, no patch) keeps the PR diff's
    own entry."""
    pr_files = {f.path: f for f in parse_diff(pr_diff) if _new_path(f) is not None}
    out: list[str] = []
    for f in parse_diff(compare_diff):
        mine = pr_files.get(f.path)
        if mine is None or _new_path(f) is None:
            continue  # not in the PR's diff (a base merge), or removed at head
        spans = [s for s in (_changed_span(h) for h in mine.hunks) if s is not None]
        if not f.hunks:
            out.append(_text(mine))
            continue
        kept = [
            h for h in f.hunks if any(lo <= p <= hi for p in _touch_points(h) for lo, hi in spans)
        ]
        if kept:
            out.append(_text(f, kept))
    return "".join(out)


def added_lines(diff: str) -> dict[str, dict[int, str]]:
    """Per file at head, the lines of its hunks, added and context (a finding may sit on
    either: bot/review/anchors.py): new-side line number -> text, as the inline comments
    read them (they are `DiffLines.text`), so both give a finding one fingerprint."""
    return {path: dict(lines) for path, lines in DiffLines.from_diff(diff).text.items()}


def removed_lines(diff: str) -> dict[str, set[int]]:
    """Per file at the old side, the old-side lines the diff touches: the lines it removes
    (or changes), and the two lines around each place where it only inserts lines (a guard
    added just above a line changes that line's hunk)."""
    found: dict[str, set[int]] = {}
    for f in parse_diff(diff):
        path = _old_path(f)
        if path is None:
            continue
        lines = found.setdefault(path, set())
        for hunk in f.hunks:
            previous = " "
            for kind, old, _ in _walk(hunk):
                if kind == "-":
                    lines.add(old)
                elif kind == "+" and previous not in ("+", "-"):
                    lines.update((old - 1, old))
                previous = kind
    return found


def touched_files(diff: str) -> set[str]:
    """Old-side paths the diff changes, removes or renames."""
    return {path for f in parse_diff(diff) if (path := _old_path(f)) is not None}


def open_findings_text(findings: Sequence[PrFinding], since: str) -> str:
    """The context section's text: the earlier findings still open, one a line."""
    lines = [
        f"The last review (at {since[:7]}) raised these; they are still open. Say whether the "
        "new commits fix them, and do not raise one again unless it still applies:"
    ]
    for f in findings[:MAX_OPEN_LISTED]:
        where = f.path if f.line is None else f"{f.path}:{f.line}"
        lines.append(f"- [{f.severity}] {where}: {' '.join(f.title.split())[:200]}")
    if len(findings) > MAX_OPEN_LISTED:
        lines.append(f"- ...and {len(findings) - MAX_OPEN_LISTED} more")
    return "\n".join(lines) + "\n"


@dataclass
class FindingTracking:
    """What a review needs, after the engine, to fingerprint and follow its findings.

    `added`: the review diff's hunk lines, added and context (their text at head);
    for an incremental review, `since` (the last advisory's head), `commits`, the earlier
    open findings, the head text of their files (None: not at head), and the comparison's
    removed lines and touched files."""

    added: dict[str, dict[int, str]]
    since: str | None = None
    commits: int = 0
    open_before: list[PrFinding] = field(default_factory=list)
    head_lines: dict[str, list[str] | None] = field(default_factory=dict)
    removed: dict[str, set[int]] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)
    reviewed_files: set[str] = field(default_factory=set)

    @property
    def incremental(self) -> bool:
        return self.since is not None

    def code_line(self, path: str, line: int | None) -> str | None:
        if line is None:
            return None
        text = self.added.get(path, {}).get(line)
        if text is None:
            lines = self.head_lines.get(path)
            if lines is not None and 0 < line <= len(lines):
                text = lines[line - 1]
        return text

    def raised(self, findings: Sequence[MergedFinding]) -> list[RaisedFinding]:
        from bot.store.findings import RaisedFinding

        return [
            RaisedFinding(
                fingerprint=fingerprint(f.path, f.title, self.code_line(f.path, f.start_line)),
                path=f.path,
                line=f.start_line,
                title=f.title,
                severity=f.severity,
            )
            for f in findings
        ]

    def is_fixed(self, f: PrFinding) -> bool:
        """An earlier open finding not raised again: did the new commits fix it?"""
        if f.line is None:
            return f.path in self.touched and f.path in self.reviewed_files
        lines = self.head_lines.get(f.path)
        if lines is None:
            return True  # the file is gone at head
        if f.line in self.removed.get(f.path, set()):
            return True
        return not any(fingerprint(f.path, f.title, text) == f.fingerprint for text in lines)

    def outcome(
        self, raised: Sequence[RaisedFinding], known: Iterable[str]
    ) -> tuple[list[str], Rereview]:
        """(fingerprints now fixed, the re-review's facts) for an incremental review;
        `known`: every fingerprint the pull request had before this review."""
        assert self.since is not None
        now = {r.fingerprint for r in raised}
        fixed = [f for f in self.open_before if f.fingerprint not in now and self.is_fixed(f)]
        fixed_ids = {f.fingerprint for f in fixed}
        still = [f for f in self.open_before if f.fingerprint not in fixed_ids]
        before = set(known)
        new = [
            r for r in {r.fingerprint: r for r in raised}.values() if r.fingerprint not in before
        ]
        findings = [_earlier(f, "fixed") for f in fixed] + [_earlier(f, "open") for f in still]
        findings += [
            EarlierFinding(
                path=r.path, line=r.line, title=r.title, severity=r.severity, status="new"
            )
            for r in new
        ]
        return [f.fingerprint for f in fixed], Rereview(
            since=self.since, commits=self.commits, findings=findings
        )


def _earlier(f: PrFinding, status: str) -> EarlierFinding:
    return EarlierFinding(
        path=f.path,
        line=f.line,
        title=f.title,
        severity=f.severity,
        status=status,
    )


def head_text_lines(data: bytes | None) -> list[str] | None:
    return None if data is None else data.decode("utf-8", errors="replace").splitlines()
