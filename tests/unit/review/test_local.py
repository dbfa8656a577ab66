"""Reading the change from local git or a diff file, on real repositories made in tmp_path."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from bot.review.local import (
    DiffError,
    NothingToReview,
    default_base,
    read_branch,
    read_diff_file,
)

HINT = "pass --base <ref>, e.g. --base HEAD~1, or --diff FILE"


@pytest.fixture(autouse=True)
def hermetic_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git configuration; a fixed author."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "t")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "t@t")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def commit(repo: Path, message: str, **files: str | bytes) -> str:
    for name, content in files.items():
        path = repo / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def new_repo(tmp_path: Path, branch: str = "main") -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", branch)
    commit(repo, "first", **{"app.py": "def f():\n    return 1\n"})
    return repo


def fake_origin(repo: Path, **branches: str) -> None:
    """A remote `origin` that was never fetched: its branches are set by hand, and
    origin/HEAD points to the first one given."""
    git(repo, "remote", "add", "origin", "https://example.invalid/repo.git")
    for name, sha in branches.items():
        git(repo, "update-ref", f"refs/remotes/origin/{name}", sha)
    first = next(iter(branches))
    git(repo, "symbolic-ref", "refs/remotes/origin/HEAD", f"refs/remotes/origin/{first}")


def short(sha: str) -> str:
    return sha[:7]


# --- the default base -----------------------------------------------------------------


def test_a_feature_branch_is_compared_with_main(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "feature")
    head = commit(repo, "Return two", **{"app.py": "def f():\n    return 2\n"})
    assert default_base(repo) == "main"
    change = read_branch(None, repo)
    assert "+    return 2" in change.diff and change.title == "Return two"
    assert change.head_sha == head
    assert change.base_label == f"main ({short(base)})"
    assert change.head_label == f"HEAD ({short(head)})"
    assert change.compared == f"main ({short(base)})..HEAD ({short(head)})"


def test_origin_head_comes_before_a_local_main(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "feature")
    commit(repo, "Return two", **{"app.py": "def f():\n    return 2\n"})
    fake_origin(repo, develop=first)
    assert default_base(repo) == "origin/develop"
    assert read_branch(None, repo).base_label == f"origin/develop ({short(first)})"


def test_an_upstream_ahead_of_head_is_the_base(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "feature")
    commit(repo, "Return two", **{"app.py": "def f():\n    return 2\n"})
    fake_origin(repo, main=first, feature=first)
    git(repo, "branch", "-q", "--set-upstream-to", "origin/feature")
    assert default_base(repo) == "origin/feature"


def test_an_upstream_equal_to_head_gives_way_to_the_default_branch(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "feature")
    head = commit(repo, "Return two", **{"app.py": "def f():\n    return 2\n"})
    fake_origin(repo, main=first, feature=head)  # the branch was just pushed
    git(repo, "branch", "-q", "--set-upstream-to", "origin/feature")
    assert default_base(repo) == "origin/main"
    change = read_branch(None, repo)
    assert "+    return 2" in change.diff
    assert change.compared == f"origin/main ({short(first)})..HEAD ({short(head)})"


def test_a_repository_with_master_only(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, branch="master")
    git(repo, "checkout", "-qb", "feature")
    commit(repo, "Return two", **{"app.py": "def f():\n    return 2\n"})
    first = git(repo, "rev-parse", "master")
    assert default_base(repo) == "master"
    assert read_branch(None, repo).base_label == f"master ({short(first)})"


def test_no_default_branch_is_an_error_that_says_what_was_tried(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, branch="trunk")
    with pytest.raises(DiffError) as caught:
        read_branch(None, repo)
    message = str(caught.value)
    assert not isinstance(caught.value, NothingToReview)
    for tried in ("upstream", "origin/HEAD", "main", "master"):
        assert tried in message
    assert "--base" in message


def test_an_upstream_equal_to_head_and_no_default_branch_is_named(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, branch="trunk")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "remote", "add", "origin", "https://example.invalid/repo.git")
    git(repo, "update-ref", "refs/remotes/origin/trunk", head)
    git(repo, "branch", "-q", "--set-upstream-to", "origin/trunk")
    with pytest.raises(DiffError, match="upstream origin/trunk \\(same commit as HEAD\\)"):
        default_base(repo)


# --- nothing to review ----------------------------------------------------------------


def test_a_branch_equal_to_its_base_has_nothing_to_review(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    head = commit(repo, "Return two", **{"app.py": "def f():\n    return 2\n"})
    with pytest.raises(NothingToReview) as caught:
        read_branch(None, repo)
    error = caught.value
    compared = f"main ({short(head)})..HEAD ({short(head)})"
    assert error.compared == compared and error.reason == "the change is empty (no changed line)"
    assert str(error) == (
        f"nothing to review in {compared}: the change is empty (no changed line);"
        f" to review another change, {HINT}"
    )
    # The hint works: the last commit against its parent.
    assert "+    return 2" in read_branch("HEAD~1", repo).diff


def test_a_branch_behind_its_base_has_nothing_to_review(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    fork = git(repo, "rev-parse", "HEAD")
    git(repo, "branch", "-q", "feature")
    tip = commit(repo, "Main moves on", **{"app.py": "def f():\n    return 3\n"})
    git(repo, "checkout", "-q", "feature")
    with pytest.raises(NothingToReview) as caught:
        read_branch(None, repo)
    assert caught.value.compared == (
        f"main ({short(tip)}, merge base {short(fork)})..HEAD ({short(fork)})"
    )


def test_a_branch_with_only_a_binary_file_has_nothing_to_review(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    git(repo, "checkout", "-qb", "logo")
    commit(repo, "Add the logo", **{"logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00"})
    with pytest.raises(NothingToReview) as caught:
        read_branch(None, repo)
    assert caught.value.reason == "only binary files changed: logo.png"


def test_a_branch_that_only_renames_has_nothing_to_review(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    git(repo, "checkout", "-qb", "move")
    git(repo, "mv", "app.py", "main.py")
    commit(repo, "Rename")
    with pytest.raises(NothingToReview) as caught:
        read_branch(None, repo)
    assert caught.value.reason == "no changed line (renames or mode changes only: app.py → main.py)"


def test_a_base_that_is_no_commit_is_an_error(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    with pytest.raises(DiffError, match="cannot resolve base 'nope'"):
        read_branch("nope", repo)


def test_a_base_given_as_a_sha_is_labelled_by_its_sha(tmp_path: Path) -> None:
    repo = new_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    commit(repo, "Return two", **{"app.py": "def f():\n    return 2\n"})
    assert read_branch(first, repo).base_label == short(first)


def test_a_repository_without_a_commit_is_an_error(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    with pytest.raises(DiffError, match="HEAD has no commit yet"):
        read_branch(None, tmp_path)


def test_outside_a_repository_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    with pytest.raises(DiffError, match="not a git repository"):
        read_branch(None, tmp_path)


# --- a diff file or stdin -------------------------------------------------------------

ONE_LINE = "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"


def test_a_diff_file_is_read_and_labelled_by_its_name(tmp_path: Path) -> None:
    path = tmp_path / "change.diff"
    path.write_text(ONE_LINE)
    change = read_diff_file(str(path))
    assert change.diff == ONE_LINE and change.base_label is None
    assert change.head_label == change.compared == str(path)


def test_a_file_that_is_not_a_diff_has_nothing_to_review(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_text("# Project\n\nNotes.\n")
    with pytest.raises(NothingToReview) as caught:
        read_diff_file(str(path))
    assert str(caught.value) == (
        f"nothing to review in {path}: this is not a diff; to review another change, {HINT}"
    )


def test_empty_stdin_has_nothing_to_review(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    with pytest.raises(NothingToReview, match="nothing to review in standard input: the change"):
        read_diff_file("-")


def test_a_crlf_non_utf8_diff_on_stdin_is_reviewable(monkeypatch: pytest.MonkeyPatch) -> None:
    data = ONE_LINE.replace("return 2", "return 'caf\xe9'").encode("latin-1")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.replace(b"\n", b"\r\n"))))
    change = read_diff_file("-")
    assert "caf\ufffd" in change.diff and change.compared == "standard input"


def test_a_missing_diff_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DiffError, match="diff file not found"):
        read_diff_file(str(tmp_path / "missing.diff"))
