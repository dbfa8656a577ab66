"""`git grep` as the name index's text pass over a local repository
(bot/context/nameindex.py `Grep`): which files of a revision hold each name as a word,
found by git from its object store, in C and on every core, instead of reading every file
through the reader.

`GitGrep(cwd)` (a work tree, as bot/review/localrepo.py `LocalRepo` takes it) or
`GitGrep(git_dir=...)` (a repository's git directory, a bare clone's too) is given to
bot/context/symbolic.py `SymbolAnalysis(grep=...)`; when git cannot run, it answers None
and the analysis reads the files itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

MAX_OUTPUT = 256_000_000  # bytes of matches read, at most (a name in every line of a monorepo)


class GitGrep:
    """`await GitGrep(cwd, rev)(names)` -> path -> the names it holds as words."""

    def __init__(
        self, cwd: Path | None = None, rev: str = "HEAD", *, git_dir: Path | None = None
    ) -> None:
        self.cwd = cwd
        self.rev = rev
        self.git_dir = git_dir

    async def __call__(self, names: Sequence[str]) -> dict[str, set[str]] | None:
        wanted = sorted({n for n in names if n and not n.startswith("-")})
        if not wanted:
            return {}
        args = ["git", *(["--git-dir", str(self.git_dir)] if self.git_dir else [])]
        args += ["grep", "-I", "-o", "-w", "-F", "-z", "--no-color"]
        for name in wanted:
            args += ["-e", name]
        try:
            proc = await asyncio.create_subprocess_exec(
                *args, self.rev, "--",
                cwd=self.cwd,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
        except OSError:
            return None
        assert proc.stdout is not None
        found = await _read_matches(proc.stdout, f"{self.rev}:".encode(), set(wanted))
        if found is None:
            proc.kill()
        code = await proc.wait()
        if code not in (0, 1) or found is None:  # 1: nothing matched
            return None
        return found


async def _read_matches(
    stream: asyncio.StreamReader, prefix: bytes, wanted: set[str]
) -> dict[str, set[str]] | None:
    """Lines `<rev>:<path>\\0<match>` -> path -> names; None past `MAX_OUTPUT`."""
    found: dict[str, set[str]] = {}
    total = 0
    while line := await stream.readline():
        total += len(line)
        if total > MAX_OUTPUT:
            return None
        path, sep, match = line.rstrip(b"\n").partition(b"\0")
        name = match.decode("utf-8", "replace")
        if sep and name in wanted:
            key = path.removeprefix(prefix).decode("utf-8", "replace")
            found.setdefault(key, set()).add(name)
    return found
