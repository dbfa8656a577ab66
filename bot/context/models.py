"""The context builder's public types: what goes in (PR metadata) and what comes out."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# Reads a file at the head commit: its bytes, or None when it does not exist there.
ReadFile = Callable[[str], Awaitable[bytes | None]]


@dataclass(frozen=True)
class GuidanceSource:
    """Where the repository's guidance (README, ARCHITECTURE, ADRs, CONTRIBUTING, AGENTS.md,
    CLAUDE.md) is read when it must not come from the change's own tree: for a pull request,
    the default branch, so that the PR's author cannot rewrite what the council is told
    about the repository. `files` are that tree's paths, `read` reads one of them, `branch`
    names it for the reader of the context."""

    files: Sequence[str]
    read: ReadFile
    branch: str


SectionKind = Literal["description", "diff", "code", "related", "test", "guidance"]
ChangeKind = Literal["added", "deleted", "modified", "renamed", "copied"]
# Why a changed file is listed rather than sent (None: it is ordinary code or text).
Exclusion = Literal["generated", "vendored", "lock", "ignored", "minified", "lfs"]


class PullRequestMeta(BaseModel):
    """The PR's own words. All of it is untrusted prose from the author or commenters."""

    title: str
    body: str = ""
    commit_messages: list[str] = Field(default_factory=list)
    # False when the title is the reviewer's own label ("Diff from x.diff"), not the
    # author's words: it is shown, but says nothing of the change's intent.
    title_authored: bool = True
    comments: list[str] = Field(default_factory=list)
    base_ref: str = ""
    head_ref: str = ""


class ChangedFile(BaseModel):
    """One file of the parsed diff (the summary; hunks stay inside the builder)."""

    model_config = ConfigDict(frozen=True)

    path: str
    old_path: str | None = None  # renamed or copied from
    change: ChangeKind = "modified"
    language: str | None = None
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    mode_only: bool = False  # only the file mode changed
    similarity: int | None = None  # git's similarity index for renames and copies
    added: int = 0
    deleted: int = 0
    hunks: int = 0
    crlf: bool = False  # the diff carries CRLF line endings (shown as LF)
    no_newline_at_eof: bool = False
    non_utf8: bool = False  # undecodable bytes were replaced with U+FFFD
    parse_error: str | None = None  # unidiff rejected it; the raw text is kept
    is_test: bool = False
    excluded: Exclusion | None = None


class Section(BaseModel):
    """One packed piece of context. `tokens` counts the text plus its heading and fence.

    `lines`: per path, the head-side lines the text shows, as inclusive runs
    [(first, last), ...], set when the section is packed from what it took (never read back
    from the text). A diff section: the new-side numbers of its added and context lines (its
    removed lines are old-side lines, not head lines, and are not in it); a code, related,
    test, named-file or guidance section: the numbered lines it shows (guidance read from the
    default branch: that file's lines there). The description and a directory listing show
    no file lines: {}."""

    model_config = ConfigDict(frozen=True)

    kind: SectionKind
    path: str | None = None
    why: str
    text: str
    tokens: int
    lines: dict[str, list[tuple[int, int]]] = Field(default_factory=dict)


class Omitted(BaseModel):
    """Something that was considered and not sent, and why."""

    model_config = ConfigDict(frozen=True)

    path: str
    reason: str


class DependencyChange(BaseModel):
    """A dependency added (old is None), removed (new is None) or changed in a manifest."""

    model_config = ConfigDict(frozen=True)

    manifest: str
    name: str
    old: str | None = None
    new: str | None = None


class RiskyPattern(BaseModel):
    """An added line that matches a pattern reviewers should look at."""

    model_config = ConfigDict(frozen=True)

    kind: str  # "eval", "shell-injection", "sql-concatenation", "tls-verify-off", "broad-except"
    path: str
    line: int


class CodeLocation(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    line: int


IntentSource = Literal["title", "description", "commit"]


class IntentWord(BaseModel):
    """A word of the PR's own that says what kind of change it is ("fix" in the title,
    "CVE-2024-3094" in a commit subject), and the intent it names (bot/context/intent.py)."""

    model_config = ConfigDict(frozen=True)

    intent: str  # "bug-fix", "performance", "security", ...
    word: str  # as it was found, lowercased
    source: IntentSource


class ChangeEvidence(BaseModel):
    """What an added line does, for the board (bot/context/constructs.py): `concept` (a
    touched area: "concurrency", "security", "database", ...), what it does ("uses trio
    (nursery.start_soon)", "sits beside an access check (...)") and the first head line
    it was seen at."""

    model_config = ConfigDict(frozen=True)

    concept: str
    what: str
    path: str
    line: int


class Signals(BaseModel):
    """What the change is about, for board scoring and for the prompt."""

    languages: list[str] = Field(default_factory=list)
    frameworks: list[str] = Field(default_factory=list)
    areas: list[str] = Field(default_factory=list)
    artifact_types: list[str] = Field(default_factory=list)
    dominant_area: str | None = None
    files_changed: int = 0
    lines_added: int = 0
    lines_deleted: int = 0
    directories: list[str] = Field(default_factory=list)  # distinct parent directories
    source_without_tests: bool = False
    dependencies: list[DependencyChange] = Field(default_factory=list)
    risky_patterns: list[RiskyPattern] = Field(default_factory=list)
    trojan_source: list[CodeLocation] = Field(default_factory=list)
    non_utf8_files: list[str] = Field(default_factory=list)
    binary_files: list[str] = Field(default_factory=list)
    # Seating by evidence: the PR's words (title, description, commit subjects), what the
    # added lines do, and a changed path for each kind in `artifact_types`.
    intent: list[IntentWord] = Field(default_factory=list)
    evidence: list[ChangeEvidence] = Field(default_factory=list)
    artifact_paths: dict[str, str] = Field(default_factory=dict)


class BuiltContext(BaseModel):
    """The ranked, packed, redacted context every seat shares."""

    title: str  # sanitized and redacted
    sections: list[Section]
    omitted: list[Omitted]
    signals: Signals
    # Secrets redacted in what could be sent (the files chosen, the texts read, the PR's
    # words, listed paths); a file past the material bound is listed, its lines unread.
    redactions: int
    redaction_kinds: dict[str, int]
    tokens: int  # sum of the sections' tokens; never above `budget` less the margin
    budget: int
    usable: int  # the budget less the estimator's margin: what packing may use
    files: list[ChangedFile]
    # Per file of the diff, its added lines on the new side as inclusive runs
    # [(first, last), ...] (a file with none: []).
    changed_lines: dict[str, list[tuple[int, int]]] = Field(default_factory=dict)
    # What a finding's lines are checked against (bot/review/anchors.py): per file of the
    # diff, the head-side lines of its hunks, added and context, as inclusive runs; and
    # how many lines the file has at head where the builder knows (its head read, an added
    # file's hunk, 0 for a deleted one). Empty in a context stored before they were kept.
    hunk_lines: dict[str, list[tuple[int, int]]] = Field(default_factory=dict)
    head_line_counts: dict[str, int] = Field(default_factory=dict)
