"""Reading the change to review from the local repository, a diff file, or stdin."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class DiffError(Exception):
    """The change could not be read (bad ref, not a repository, missing file)."""


@dataclass
class LocalChange:
    diff: str
    title: str
    description: str
    head_sha: str | None
    source: str  # what was reviewed, for the report


def _git(*args: str, cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, check=True, cwd=cwd)
    except FileNotFoundError as err:
        raise DiffError("git is not installed") from err
    except subprocess.CalledProcessError as err:
        message = err.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DiffError(f"git {' '.join(args)}: {message[-1] if message else 'failed'}") from err
    return done.stdout.decode("utf-8", "replace")


def default_base(cwd: Path | None = None) -> str:
    """The branch's upstream if it has one, else `main`."""
    try:
        return _git(
            "rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", cwd=cwd
        ).strip()
    except DiffError:
        return "main"


def read_branch(base: str | None, cwd: Path | None = None) -> LocalChange:
    base = base or default_base(cwd)
    try:
        _git("rev-parse", "--verify", "--quiet", f"{base}^{{commit}}", cwd=cwd)
    except DiffError as err:
        if base not in (EMPTY_TREE,):
            raise DiffError(f"cannot resolve base {base!r}: {err}") from err
    try:
        start = _git("merge-base", base, "HEAD", cwd=cwd).strip()
    except DiffError:
        start = base  # unrelated history or the empty tree: a plain two-point diff
    diff = _git("diff", "--no-color", "--no-ext-diff", start, "HEAD", cwd=cwd)
    log = (
        _git("log", "--format=%s%n%n%b", f"{start}..HEAD", cwd=cwd)
        if start != EMPTY_TREE
        else _git("log", "--format=%s%n%n%b", "-1", cwd=cwd)
    )
    head = _git("rev-parse", "HEAD", cwd=cwd).strip()
    title = log.strip().splitlines()[0] if log.strip() else f"Changes since {base}"
    return LocalChange(
        diff=diff,
        title=title,
        description=log.strip(),
        head_sha=head,
        source=f"HEAD against {base}",
    )


def read_diff_file(name: str) -> LocalChange:
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
    return LocalChange(
        diff=text, title=f"Diff from {source}", description="", head_sha=None, source=source
    )
