"""Reading the change to review from the local repository, a diff file, or stdin.

A change with nothing in it to review (a branch equal to its base, binary files only, a
file that is not a diff) raises `NothingToReview`, which says what was compared and how
to choose something else: an empty diff is not a review.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bot.context.diff import nothing_to_review

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
CHOOSE_ANOTHER = "pass --base <ref>, e.g. --base HEAD~1, or --diff FILE"
_SHORT = 7


class DiffError(Exception):
    """The change could not be read (bad ref, not a repository, missing file)."""


class NothingToReview(DiffError):
    """The change was read and has no changed text line.

    `reason` is why (from `bot.context.diff.nothing_to_review`), `compared` what was
    compared ("main (1a2b3c4)..HEAD (5d6e7f8)", a diff file's name, "standard input"),
    `hint` how to choose another change. `str()` is the whole sentence for the user.
    """

    def __init__(self, reason: str, compared: str, hint: str = CHOOSE_ANOTHER) -> None:
        self.reason = reason
        self.compared = compared
        self.hint = hint
        super().__init__(
            f"nothing to review in {compared}: {reason}; to review another change, {hint}"
        )


@dataclass
class LocalChange:
    diff: str
    title: str
    description: str
    head_sha: str | None
    source: str  # what was reviewed, for the report
    base_label: str | None = None  # "main (1a2b3c4)"; None for a diff file or stdin
    head_label: str | None = None  # "HEAD (5d6e7f8)", or the diff file's name
    # The subjects of the commits compared, newest first (git log's order): what a pull
    # request's commit messages are to a local branch (bot/review/localrepo.py).
    subjects: tuple[str, ...] = ()
    # Whether a person wrote the title (a commit subject), or this code did ("Diff from
    # x.diff", "Changes since main"): only a person's title says what the change is for.
    title_authored: bool = True

    @property
    def compared(self) -> str:
        """What was compared, for the report: "main (1a2b3c4)..HEAD (5d6e7f8)" or a file."""
        if self.base_label and self.head_label:
            return f"{self.base_label}..{self.head_label}"
        return self.head_label or self.source


def _git(*args: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, check=True, cwd=cwd)
    except FileNotFoundError as err:
        raise DiffError("git is not installed") from err
    except subprocess.CalledProcessError as err:
        message = err.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DiffError(f"git {' '.join(args)}: {message[-1] if message else 'failed'}") from err
    return done.stdout.decode("utf-8", "replace")


def _commit(ref: str, cwd: Path | None) -> str | None:
    """The commit `ref` names, or None if it names none."""
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=cwd).strip()
    except DiffError:
        return None


def _upstream(cwd: Path | None) -> str | None:
    try:
        name = _git("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", cwd=cwd)
    except DiffError:
        return None
    return name.strip() or None


def _origin_head(cwd: Path | None) -> str | None:
    """The remote's default branch as `refs/remotes/origin/HEAD` names it ("origin/main")."""
    try:
        name = _git("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD", cwd=cwd)
    except DiffError:
        return None
    return name.strip() or None


def default_base(cwd: Path | None = None) -> str:
    """The base a branch is compared with when none is given.

    The branch's upstream when it is a different commit from HEAD (an upstream equal to
    HEAD has nothing to compare), else the default branch: what `origin/HEAD` points to,
    then `main`, then `master`, the first that exists as a commit. Raises DiffError
    saying what was tried when none exists.
    """
    head = _commit("HEAD", cwd)
    if head is None:
        _require_repository(cwd)
        raise DiffError(f"HEAD has no commit yet: commit the change first, or {CHOOSE_ANOTHER}")
    tried: list[str] = []
    upstream = _upstream(cwd)
    if upstream is not None:
        at = _commit(upstream, cwd)
        if at is not None and at != head:
            return upstream
        tried.append(
            f"the upstream {upstream} (" + ("same commit as HEAD)" if at else "not a commit)")
        )
    else:
        tried.append("the upstream (none set)")
    origin = _origin_head(cwd)
    candidates = ([origin] if origin else []) + ["main", "master"]
    for name in candidates:
        if _commit(name, cwd) is not None:
            return name
    if origin is None:
        tried.append("origin/HEAD (not set)")
    tried.extend(f"{name} (no such branch)" for name in candidates)
    raise DiffError(f"no base to compare HEAD with: tried {', '.join(tried)}; {CHOOSE_ANOTHER}")


def _require_repository(cwd: Path | None) -> None:
    try:
        _git("rev-parse", "--git-dir", cwd=cwd)
    except DiffError as error:
        if "not a git repository" not in str(error):
            raise
        where = cwd or Path.cwd()
        raise DiffError(
            f"{where} is not a git repository (nor inside one): run council review in one, "
            "or review a diff with --diff FILE (- for stdin)"
        ) from None


def _label(ref: str, sha: str, merge_base: str) -> str:
    """The base as the user sees it: `main (1a2b3c4)`, `main (1a2b3c4, merge base 9f8e7d6)`,
    or `1a2b3c4` for a base given as a SHA."""
    notes = [sha[:_SHORT]]
    if merge_base != sha:
        notes.append(f"merge base {merge_base[:_SHORT]}")
    if len(ref) >= 4 and sha.startswith(ref.lower()) and len(notes) == 1:
        return notes[0]
    return f"{ref} ({', '.join(notes)})"


def read_branch(base: str | None, cwd: Path | None = None) -> LocalChange:
    """HEAD against `base` (default: `default_base`), from their merge base, as git diffs
    it. Raises NothingToReview when that diff has no changed text line."""
    base = base or default_base(cwd)
    base_sha = EMPTY_TREE if base == EMPTY_TREE else _commit(base, cwd)
    if base_sha is None:
        _require_repository(cwd)
        raise DiffError(f"cannot resolve base {base!r}: no such commit; {CHOOSE_ANOTHER}")
    head = _commit("HEAD", cwd)
    if head is None:
        raise DiffError(f"HEAD has no commit yet: commit the change first, or {CHOOSE_ANOTHER}")
    try:
        start = _git("merge-base", base_sha, head, cwd=cwd).strip()
    except DiffError:
        start = base_sha  # unrelated history or the empty tree: a plain two-point diff
    diff = _git("diff", "--no-color", "--no-ext-diff", start, head, cwd=cwd)
    base_label = "the empty tree" if base_sha == EMPTY_TREE else _label(base, base_sha, start)
    head_label = f"HEAD ({head[:_SHORT]})"
    reason = nothing_to_review(diff)
    if reason is not None:
        raise NothingToReview(reason, f"{base_label}..{head_label}")
    log = (
        _git("log", "--format=%s%n%n%b", f"{start}..{head}", cwd=cwd)
        if start != EMPTY_TREE
        else _git("log", "--format=%s%n%n%b", "-1", head, cwd=cwd)
    )
    title = log.strip().splitlines()[0] if log.strip() else f"Changes since {base}"
    span = [f"{start}..{head}"] if start != EMPTY_TREE else ["-1", head]
    subjects = _git("log", "--format=%s", *span, cwd=cwd).splitlines()
    return LocalChange(
        diff=diff,
        title=title,
        description=log.strip(),
        head_sha=head,
        source=f"HEAD against {base}",
        base_label=base_label,
        head_label=head_label,
        subjects=tuple(s for s in subjects if s.strip()),
        title_authored=bool(log.strip()),
    )


def read_diff_file(name: str) -> LocalChange:
    """A diff file, or standard input for "-". Raises NothingToReview when it has no
    changed text line (empty, binary only, renames only, not a diff)."""
    if name == "-":
        data = sys.stdin.buffer.read()
        source = "standard input"
    else:
        path = Path(name)
        if not path.is_file():
            raise DiffError(f"diff file not found: {name}")
        data = path.read_bytes()
        source = name
    text = data.decode("utf-8", "replace")
    reason = nothing_to_review(text)
    if reason is not None:
        raise NothingToReview(reason, source)
    return LocalChange(
        diff=text,
        title=f"Diff from {source}",
        description="",
        head_sha=None,
        source=source,
        head_label=source,
        title_authored=False,
    )


def work_tree_root(cwd: Path | None = None) -> Path:
    """The top of the git work tree around `cwd` (where `.github/council.yml` lives), or
    `cwd` itself outside a repository."""
    try:
        return Path(_git("rev-parse", "--show-toplevel", cwd=cwd).strip())
    except DiffError:
        return cwd or Path.cwd()
