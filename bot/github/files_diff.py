"""A pull request's diff when GitHub refuses the diff media type, and a comparison of two
commits.

`GET /repos/o/r/pulls/n` with `Accept: application/vnd.github.diff` answers 406
`too_large` past 300 files or 20,000 lines. The diff is then built from the paginated files
API (`GET .../pulls/n/files?per_page=100`, at most 3,000 files: 30 pages, each one request
of the installation's rate limit, recorded like every other): each row's `patch` under
git-style headers. A row without a patch is a file whose change is not in the diff, said
with why (`skipped_reason`): a binary file, or a change too large for GitHub to show.

`compare` reads `GET /repos/o/r/compare/{base}...{head}` (one request, its files as
rows): whether `head` still contains `base` (`ahead`), or the history was rewritten
(`diverged`, `behind`, or `missing` when GitHub no longer knows the old commit).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from bot.forge import CompareStatus, Comparison, PullFile
from bot.forge.errors import ForgeNotFound
from bot.github.client import RepoClient
from bot.github.errors import github_errors

__all__ = [
    "MAX_FILES",
    "compare",
    "diff_from_files",
    "refusal",
    "skipped_reason",
]

MAX_FILES = 3_000  # what GitHub's files API lists at most
BINARY = "binary"
TOO_LARGE = "too large for GitHub to show"


def skipped_reason(f: PullFile) -> str | None:
    """Why a file's change is not in the rebuilt diff (None: it is, or there is none, as
    for a rename that changes nothing)."""
    if f.patch is not None:
        return None
    if f.status == "renamed" and not (f.additions or f.deletions):
        return None
    return TOO_LARGE if f.additions or f.deletions else BINARY


def refusal(message: str) -> str:
    """GitHub's 406 message in a few words: "more than 300 files", "more than 20,000
    lines"."""
    text = message.lower()
    if "number of lines" in text:
        return "more than 20,000 lines"
    if "number of files" in text:
        return "more than 300 files"
    return "more than 300 files or 20,000 lines"


class _Commit(BaseModel):
    message: str = ""


class _CompareCommit(BaseModel):
    sha: str
    commit: _Commit = Field(default_factory=_Commit)


class _File(BaseModel):
    filename: str
    status: str
    additions: int = 0
    deletions: int = 0
    patch: str | None = None
    previous_filename: str | None = None


class _Compare(BaseModel):
    status: str
    ahead_by: int = 0
    behind_by: int = 0
    commits: list[_CompareCommit] = Field(default_factory=list)
    files: list[_File] = Field(default_factory=list)


_STATUSES = ("added", "removed", "modified", "renamed", "copied", "changed", "unchanged")


async def compare(client: RepoClient, base: str, head: str) -> Comparison:
    """`base...head`; status `missing` when GitHub does not know `base` (any more)."""
    try:
        with github_errors("compare commits"):
            response = await client.rest.repos.async_compare_commits(
                client.owner, client.name, f"{base}...{head}"
            )
            wire = _Compare.model_validate_json(response.content)
    except ForgeNotFound:
        return Comparison(status="missing")
    status: CompareStatus = "diverged"
    if wire.status in ("ahead", "behind", "identical"):
        status = wire.status  # type: ignore[assignment]
    files = [
        PullFile(
            path=f.filename,
            status=f.status if f.status in _STATUSES else "modified",
            additions=f.additions,
            deletions=f.deletions,
            previous_path=f.previous_filename or None,
            patch=f.patch or None,
        )
        for f in wire.files
    ]
    return Comparison(
        status=status,
        ahead_by=wire.ahead_by,
        behind_by=wire.behind_by,
        commit_messages=[c.commit.message for c in wire.commits],
        files=files,
        diff=diff_from_files(files),
    )


def diff_from_files(files: list[PullFile]) -> str:
    """A unified diff from the files' patches (the hunks GitHub shows per file)."""
    return "".join(_file_diff(f) for f in files)


def _file_diff(f: PullFile) -> str:
    old = f.previous_path or f.path
    lines = [f"diff --git a/{old} b/{f.path}"]
    if f.status == "added":
        lines.append("new file mode 100644")
    elif f.status == "removed":
        lines.append("deleted file mode 100644")
    elif f.status == "renamed":
        lines += [f"rename from {old}", f"rename to {f.path}"]
    source = "/dev/null" if f.status == "added" else f"a/{old}"
    target = "/dev/null" if f.status == "removed" else f"b/{f.path}"
    if f.patch is None:
        if f.status != "renamed" or f.additions or f.deletions:
            lines.append(f"Binary files {source} and {target} differ")
    else:
        lines += [f"--- {source}", f"+++ {target}", f.patch.rstrip("\n")]
    return "\n".join(lines) + "\n"
