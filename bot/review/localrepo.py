"""The local repository at HEAD as the context builder reads it: a file list and a reader.

One long-lived `git cat-file --batch` answers every read (a `git show` per file costs a
process each); reads are serialized on it, which is what a pipe allows anyway.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from bot.context import BuiltContext, PullRequestMeta, build_context
from bot.review.local import LocalChange


class LocalRepo:
    """`async with LocalRepo(cwd) as repo:` then `repo.files` and `await repo.read(path)`."""

    def __init__(self, cwd: Path | None = None, rev: str = "HEAD") -> None:
        self.cwd = cwd
        self.rev = rev
        self.files: list[str] = []
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> LocalRepo:
        self.files = list_files(self.cwd, self.rev)
        self._proc = await asyncio.create_subprocess_exec(
            "git",
            "cat-file",
            "--batch",
            cwd=self.cwd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        await proc.wait()

    async def read(self, path: str) -> bytes | None:
        """The file's bytes at the revision; None if absent, not a file, or unnamable."""
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None or "\n" in path:
            return None
        async with self._lock:
            proc.stdin.write(f"{self.rev}:{path}\n".encode())
            await proc.stdin.drain()
            header = (await proc.stdout.readline()).decode("utf-8", "replace").split()
            if len(header) != 3:
                return None  # "<name> missing" or "<name> ambiguous"
            data = await proc.stdout.readexactly(int(header[2]) + 1)
        return data[:-1] if header[1] == "blob" else None


def list_files(cwd: Path | None = None, rev: str = "HEAD") -> list[str]:
    """Every file path at the revision ([] outside a repository or before a first commit)."""
    try:
        done = subprocess.run(
            ["git", "ls-tree", "-r", "-z", "--name-only", rev],
            capture_output=True,
            check=True,
            cwd=cwd,
        )
    except (OSError, subprocess.CalledProcessError):
        return []
    return [p for p in done.stdout.decode("utf-8", "replace").split("\0") if p]


async def no_file(path: str) -> bytes | None:
    """The reader for a diff with no repository behind it."""
    return None


def change_meta(change: LocalChange) -> PullRequestMeta:
    """A local change's words as a pull request's: the newest commit subject as the title,
    the log as the description, and the commit subjects as its commits (read for the intent
    they state, bot/context/intent.py, and listed in the description section). One commit's
    subject is the title already: it is not listed again."""
    subjects = list(change.subjects) if len(change.subjects) > 1 else []
    return PullRequestMeta(
        title=change.title,
        body=change.description,
        commit_messages=subjects,
        title_authored=change.title_authored,
    )


async def build_local_context(
    change: LocalChange, budget_tokens: int, *, ignore_globs: Sequence[str] = ()
) -> BuiltContext:
    """The context for a local change: over the repository at HEAD when the change came from
    it, over the diff alone when it came from a file or stdin."""
    meta = change_meta(change)
    if change.head_sha is None:
        return await build_context(
            meta, change.diff, [], no_file, budget_tokens=budget_tokens, ignore_globs=ignore_globs
        )
    async with LocalRepo() as repo:
        return await build_context(
            meta,
            change.diff,
            repo.files,
            repo.read,
            budget_tokens=budget_tokens,
            ignore_globs=ignore_globs,
        )
