"""Benchmark files read into pull requests, and the local clones they are reviewed in.

Two formats are read:

- AACR-Bench (github.com/alibaba/aacr-bench, `dataset/positive_samples.json`): a JSON array
  of `{"githubPrUrl", "source_commit", "target_commit", "comments": [{"path", "from_line",
  "to_line", "side", "note", "context"}]}`; comments on the old side (`side: "left"`) are
  left out, since findings cite the new side.
- Martian's (github.com/withmartian/code-review-benchmark, `offline/golden_comments/*.json`):
  a JSON array of `{"pr_title", "url", "comments": [{"comment", "severity"}]}`: golden
  comments as text, without a location. The file names no commits, so an entry may add
  `"base"` and `"head"` (commits or refs of the clone); without them the head is
  `refs/pull/<N>/head` (`git fetch origin pull/<N>/head:refs/pull/<N>/head`) and the base
  the clone's HEAD (the diff starts from their merge base either way).

A file of either kind may also be a JSON object with the array under `"prs"`.
"""

from __future__ import annotations

import json
import re
import reprlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Format = Literal["aacr", "martian"]
_PR_URL = re.compile(r"github\.com/([^/]+)/([^/]+)/pull/(\d+)", re.IGNORECASE)


class DatasetError(ValueError):
    """The dataset file cannot be read as a benchmark; the message says why."""


@dataclass(frozen=True)
class Golden:
    """One comment a reviewer left: its text, and where when the dataset says."""

    text: str
    path: str | None = None
    first: int | None = None
    last: int | None = None
    level: str = ""  # AACR-Bench's "context": Diff Level, File Level, Repo Level
    severity: str | None = None

    @property
    def located(self) -> bool:
        return self.path is not None and self.first is not None


@dataclass
class Sample:
    """One pull request of the benchmark."""

    url: str
    repo: str  # owner/name
    number: int | None
    base: str
    head: str
    comments: list[Golden] = field(default_factory=list)
    title: str = ""


def _entries(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("prs"), list):
        data = data["prs"]
    if not isinstance(data, list):
        raise DatasetError("a benchmark file is a JSON array of pull requests")
    return [e for e in data if isinstance(e, dict)]


def detect_format(entries: list[dict[str, Any]]) -> Format:
    if any("githubPrUrl" in e or "source_commit" in e for e in entries):
        return "aacr"
    return "martian"


def _repo_and_number(url: str) -> tuple[str, int | None]:
    match = _PR_URL.search(url)
    if match is None:
        return "", None
    return f"{match.group(1)}/{match.group(2)}", int(match.group(3))


def aacr_sample(entry: dict[str, Any]) -> Sample:
    url = str(entry["githubPrUrl"])
    repo, number = _repo_and_number(url)
    comments = [
        Golden(
            text=str(c.get("note") or c.get("body") or "").strip(),
            path=str(c["path"]),
            first=min(int(c["from_line"]), int(c["to_line"])),
            last=max(int(c["from_line"]), int(c["to_line"])),
            level=str(c.get("context") or ""),
        )
        for c in entry.get("comments") or []
        if isinstance(c, dict) and c.get("side", "right") == "right" and c.get("path")
    ]
    return Sample(
        url=url,
        repo=repo,
        number=number,
        base=str(entry["source_commit"]),
        head=str(entry["target_commit"]),
        comments=comments,
    )


def martian_sample(entry: dict[str, Any]) -> Sample:
    url = str(entry.get("url") or entry.get("pr_url") or "")
    repo, number = _repo_and_number(url)
    repo = str(entry.get("repo") or repo)
    if entry.get("number") is not None:
        number = int(entry["number"])
    if not repo or number is None:
        raise DatasetError(
            "an entry names no pull request (url or repo and number): " + reprlib.repr(entry)
        )
    comments = [_martian_comment(c) for c in entry.get("comments") or []]
    return Sample(
        url=url or f"https://github.com/{repo}/pull/{number}",
        repo=repo,
        number=number,
        base=str(entry.get("base") or "HEAD"),
        head=str(entry.get("head") or f"refs/pull/{number}/head"),
        comments=[c for c in comments if c is not None],
        title=str(entry.get("pr_title") or ""),
    )


def _martian_comment(raw: Any) -> Golden | None:
    """A golden comment of Martian's file: text (`comment`, or `body`), an optional
    severity, and an optional location (`path`, `start_line`, `end_line`)."""
    c = raw if isinstance(raw, dict) else {"comment": raw}
    text = str(c.get("comment") or c.get("body") or "").strip()
    if not text:
        return None
    first = c.get("start_line")
    last = c.get("end_line") or first
    return Golden(
        text=text,
        path=str(c["path"]) if c.get("path") else None,
        first=int(first) if first is not None else None,
        last=int(last) if last is not None else None,
        severity=str(c["severity"]) if c.get("severity") else None,
    )


def load(dataset: Path, kind: Format | None = None) -> list[Sample]:
    """The pull requests of a benchmark file (`kind`: its format; None: told by its fields).
    Whatever is wrong with the file is a `DatasetError` naming it (and the line or the
    pull request when known): never a traceback."""
    entries = _entries(read_json(dataset))
    chosen = kind or detect_format(entries)
    read = aacr_sample if chosen == "aacr" else martian_sample
    samples: list[Sample] = []
    for number, entry in enumerate(entries, 1):
        try:
            samples.append(read(entry))
        except RecursionError:
            raise DatasetError(
                f"{dataset} is not in {chosen}'s format: pull request {number} holds a value "
                "nested too deeply"
            ) from None
        except (KeyError, TypeError, ValueError, ArithmeticError) as error:
            raise DatasetError(
                f"{dataset} is not in {chosen}'s format (pull request {number}): {error!r}"
            ) from None
    return samples


def read_json(dataset: Path) -> Any:
    """The file's JSON; a `DatasetError` naming the file, and the line when there is one,
    for a file that cannot be read, is not UTF-8, or is not JSON this reader can take."""
    try:
        raw = dataset.read_bytes()
    except OSError as error:
        raise DatasetError(f"cannot read {dataset}: {error}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise DatasetError(
            f"cannot read {dataset}: line {line} is not UTF-8 (byte 0x{raw[error.start]:02x} "
            f"at offset {error.start}); a benchmark file is JSON in UTF-8"
        ) from None
    try:
        return json.loads(text)
    except RecursionError:
        depth, line = _deepest(text)
        raise DatasetError(
            f"cannot read {dataset}: its JSON is nested {depth:,} levels deep (at line {line}), "
            "too deep to read; a benchmark file is an array of pull requests"
        ) from None
    except ValueError as error:  # JSONDecodeError (with its line), an oversized number
        raise DatasetError(f"cannot read {dataset}: {error}") from None


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}\n]')


def _deepest(text: str) -> tuple[int, int]:
    """How deep the JSON's arrays and objects nest, and the line where they first do
    (strings skipped: a bracket inside one is text)."""
    depth = deepest = 0
    line = deepest_line = 1
    for token in _JSON_TOKEN.finditer(text):
        char = token.group()
        if char == "\n":
            line += 1
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest, deepest_line = depth, line
        elif char in "]}":
            depth -= 1
        else:  # a string: a raw newline inside one still ends a line of the file
            line += char.count("\n")
    return deepest, deepest_line


# --- the local clones ------------------------------------------------------------------------


def git(git_dir: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, check=True
    )
    return done.stdout.decode("utf-8", "replace")


def has_commit(git_dir: Path, commit: str) -> bool:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
    )
    return done.returncode == 0


def resolve(git_dir: Path, ref: str) -> str:
    return git(git_dir, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()


def git_dir_of(repos: Path, repo: str) -> Path | None:
    """The clone of `owner/name` under `repos`: `owner+name/repo` (as the mirrors are laid
    out), `owner+name` (bare), `owner+name/.git`, `owner/name/.git` or `owner/name`."""
    owner, _, name = repo.partition("/")
    for candidate in (
        repos / f"{owner}+{name}" / "repo",
        repos / f"{owner}+{name}",
        repos / f"{owner}+{name}" / ".git",
        repos / owner / name / ".git",
        repos / owner / name,
    ):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    return None


def three_dot_diff(git_dir: Path, base: str, head: str) -> str:
    """The pull request's diff as GitHub shows it: from where the branch left its base."""
    return git(git_dir, "diff", "--no-color", "--no-ext-diff", f"{base}...{head}")


class Tree:
    """A repository's files at one commit, read through one `git cat-file --batch`."""

    def __init__(self, git_dir: Path, commit: str) -> None:
        self.git_dir, self.commit = git_dir, commit
        listed = git(git_dir, "ls-tree", "-r", "--name-only", "-z", commit)
        self.files = [p for p in listed.split("\0") if p]
        self._batch = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    async def read(self, path: str) -> bytes | None:
        assert self._batch.stdin is not None and self._batch.stdout is not None
        if "\n" in path:
            return None
        self._batch.stdin.write(f"{self.commit}:{path}\n".encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) < 3:
            return None  # "<name> missing"
        data = self._batch.stdout.read(int(header[2]))
        self._batch.stdout.read(1)  # the newline after each object
        return data if header[1] == b"blob" else None

    def close(self) -> None:
        self._batch.kill()
        self._batch.wait()

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
