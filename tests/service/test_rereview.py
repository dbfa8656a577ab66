"""Incremental re-reviews and large pull requests, end to end (uvicorn, arq, Redis, the fake
GitHub and the fake model APIs), asserted on what a person sees: the comment, the check run,
GitHub's call log and what the models were sent.

- A push to a reviewed PR is reviewed against the last advisory's head: only the new
  commits' hunks reach the models, with the findings still open; the comment says "Re-review
  of 2 new commits" and what became of the earlier findings (fixed, still open, new).
- A merge of the base branch brings nothing of the PR's own: no model call, and the last
  verdict carried to the new head's check run.
- A force-push rewrote the reviewed head: a full review, and the comment says why.
- A `/council` command on a reviewed PR is a full review.
- A PR whose diff GitHub refuses (406 too_large) is reviewed from the paginated files API,
  and the comment lists the files that came without a patch, and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, RecordedCall, app_keypair, tree_diff
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    PR,
    REPO,
    App,
    app_settings,
    comment_event,
    completed,
    eventually,
    pull_request_event,
    running_app,
    seed_github,
    unique_sha,
)

KEYS = app_keypair()
SEAT = "Correctness Reviewer"  # seated on every board

BASE: dict[str, str | bytes] = {
    "README.md": "# Calc\n",
    "app/__init__.py": "",
    "app/calc.py": "def add(a, b):\n    return a + b\n",
}
HEAD1: dict[str, str | bytes] = {
    **BASE,
    "app/calc.py": "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n",
    "app/loop.py": "def retry(fn):\n    while True:\n        fn()\n",
}
HEAD2: dict[str, str | bytes] = {
    **HEAD1,
    "app/calc.py": (
        "def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    if b == 0:\n"
        "        raise ZeroDivisionError('b is 0')\n    return a / b\n\n\ndef mean(xs):\n"
        "    return sum(xs) / len(xs)\n"
    ),
}


def bytes_of(files: dict[str, str | bytes]) -> dict[str, bytes]:
    return {p: c.encode() if isinstance(c, str) else c for p, c in files.items()}


def pr_diff(head: dict[str, str | bytes], base: dict[str, str | bytes] = BASE) -> str:
    return tree_diff(bytes_of(base), bytes_of(head))


def finding(path: str, line: int, title: str) -> dict[str, Any]:
    return {
        "severity": "major",
        "path": path,
        "start_line": line,
        "end_line": None,
        "title": title,
        "detail": f"{title}: see the line.",
        "suggestion": None,
    }


FIRST = [
    finding("app/calc.py", 6, "Division by zero"),
    finding("app/loop.py", 2, "Unbounded retry loop"),
]
SECOND = [finding("app/calc.py", 12, "Mean of an empty list")]


def seed(gh: FakeGitHub) -> tuple[str, str]:
    """The PR at its first head; (that head, the next one). Heads are unique per test:
    push jobs are deduplicated by head SHA in the Redis every test shares."""
    h1, h2 = unique_sha(), unique_sha()
    seed_github(gh, KEYS[1], labels=("architecture",))
    gh.set_files(REPO, "main", BASE)
    gh.add_pull(
        REPO,
        PR,
        title="Division and retries",
        body="Adds divide and retry.",
        head_sha=h1,
        diff=pr_diff(HEAD1),
        files_at_head=HEAD1,
        labels=("architecture",),
        user=AUTHOR,
        commits=("Add divide", "Add retry"),
    )
    return h1, h2


def advisory(gh: FakeGitHub) -> str:
    (comment,) = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    return comment.body


async def command(gh: FakeGitHub, app: App, text: str = "/council quick") -> None:
    done = len(completed(gh))
    comment_id = gh.add_comment(REPO, PR, text, user=AUTHOR)
    response = await app.deliver("issue_comment", comment_event(text, comment_id=comment_id))
    assert response.status_code == 202, response.text
    await eventually(lambda: len(completed(gh)) > done, what="the check run", timeout=60)


async def pushed(gh: FakeGitHub, app: App, sha: str) -> None:
    done = len(completed(gh))
    response = await app.deliver("pull_request", pull_request_event("synchronize", sha=sha))
    assert response.status_code == 202, response.text
    await eventually(lambda: len(completed(gh)) > done, what="the push's check run", timeout=60)


def advisory_or_empty(gh: FakeGitHub) -> str:
    mine = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    return mine[0].body if mine else ""


def prompts(calls: list[Any]) -> str:
    return "\n".join(c.request.system_text + "\n" + c.request.messages_text for c in calls)


async def reviewed_once(gh: FakeGitHub, app: App, script: CouncilScript) -> None:
    script.findings = {SEAT: FIRST}
    await command(gh, app)
    await eventually(lambda: "Division by zero" in advisory_or_empty(gh), what="the advisory")


async def test_a_push_is_re_reviewed_against_the_last_advisory(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    h1, h2 = seed(gh)
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await reviewed_once(gh, app, script)
        first_calls = len(models.calls)
        script.findings = {SEAT: SECOND}
        gh.push(
            REPO,
            PR,
            head_sha=h2,
            diff=pr_diff(HEAD2),
            files_at_head=HEAD2,
            commits=("Guard the division", "Add mean"),
        )
        start = len(gh.calls)
        await pushed(gh, app, h2)
        await eventually(lambda: "Re-review" in advisory_or_empty(gh), what="the re-review")
        calls = gh.calls[start:]

    # Compared against the last advisory's head, one request.
    assert [c.status for c in calls if f"/compare/{h1}...{h2}" in c.path] == [200]
    sent = prompts(models.calls[first_calls:])
    assert "+     if b == 0:" in sent and "+     return sum(xs) / len(xs)" in sent
    assert "+     while True:" not in sent  # app/loop.py did not change since
    assert "+ def divide(a, b):" not in sent  # reviewed last time, untouched since
    assert "Findings still open from the last review" in sent
    assert "app/loop.py:2: Unbounded retry loop" in sent
    body = advisory(gh)
    assert f"Re-review of 2 new commits** (since `{h1[:7]}`)" in body
    assert "Earlier findings: 1 fixed, 1 still open; 1 new." in body
    assert "fixed: `app/calc.py:6` **Division by zero**" in body
    assert "still open: `app/loop.py:2` **Unbounded retry loop**" in body
    assert "new: `app/calc.py:12` **Mean of an empty list**" in body
    run = completed(gh)[-1]
    assert run.head_sha == h2 and "Re-review of 2 new commits" in (run.summary or "")


async def test_a_merge_of_the_base_branch_brings_nothing_to_review(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    h1, h2 = seed(gh)
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await reviewed_once(gh, app, script)
        first_calls = len(models.calls)
        # main moved on (a new doc, a changed README); the PR merges it: its own diff is the
        # same, the comparison with the reviewed head is not.
        main = {**BASE, "README.md": "# Calc\n\nNow documented.\n", "docs/usage.md": "Use it.\n"}
        gh.set_files(REPO, "main", main)
        gh.push(
            REPO,
            PR,
            head_sha=h2,
            files_at_head={**HEAD1, **main, "app/calc.py": HEAD1["app/calc.py"]},
            diff=pr_diff(HEAD1),
            commits=("Merge branch 'main' into feature-2",),
            base_merged=True,
        )
        await pushed(gh, app, h2)

    assert len(models.calls) == first_calls  # no model call
    run = completed(gh)[-1]
    # The approval given on the reviewed head is carried: the merge changed nothing of the PR.
    assert run.head_sha == h2 and run.conclusion == "success"
    assert (run.title or "").startswith(f"Carried from {h1[:7]}: Approved"), run.title
    assert "nothing to review beyond a merge of the base branch" in (run.summary or "")
    assert "Re-review" not in advisory(gh)  # the advisory stays the last review's


async def test_a_force_push_is_a_full_review_that_says_why(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    h1, h2 = seed(gh)
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await reviewed_once(gh, app, script)
        first_calls = len(models.calls)
        gh.push(
            REPO,
            PR,
            head_sha=h2,
            diff=pr_diff(HEAD2),
            files_at_head=HEAD2,
            commits=("Divide, retry and mean, squashed",),
            force=True,
        )
        start = len(gh.calls)
        await pushed(gh, app, h2)
        body = advisory(gh)  # updated before the check run completes
        calls = gh.calls[start:]

    compare = [c for c in calls if "/compare/" in c.path]
    assert [c.status for c in compare] == [200]
    sent = prompts(models.calls[first_calls:])
    assert "+     while True:" in sent and "+ def divide(a, b):" in sent  # all of it
    assert "Findings still open from the last review" not in sent
    assert f"**Full review:** the reviewed head {h1[:7]} was rewritten (force-push)" in body
    assert "Re-review of" not in body


async def test_a_command_on_a_reviewed_pull_request_is_a_full_review(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    _, h2 = seed(gh)
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await reviewed_once(gh, app, script)
        first_calls = len(models.calls)
        gh.push(REPO, PR, head_sha=h2, diff=pr_diff(HEAD2), files_at_head=HEAD2)
        start = len(gh.calls)
        await command(gh, app)
        body = advisory(gh)  # updated before the check run completes
        calls = gh.calls[start:]

    assert not [c for c in calls if "/compare/" in c.path]
    sent = prompts(models.calls[first_calls:])
    assert "+     while True:" in sent and "+     if b == 0:" in sent
    assert "Re-review of" not in body and "Full review" not in body


def _files_pages(calls: list[RecordedCall]) -> list[RecordedCall]:
    return [c for c in calls if c.method == "GET" and c.path.endswith(f"/pulls/{PR}/files")]


async def test_a_diff_github_refuses_is_built_from_the_files_api(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """120 modules, a binary logo and a data file too large for GitHub to show: past the
    (lowered) file limit the diff answers 406; the files API is read in two pages of 100,
    the review runs on the patches, and the comment says which files were not reviewed."""
    gh = fake_github
    seed_github(gh, KEYS[1])
    gh.diff_max_files = 100
    gh.patch_max_lines = 500
    head: dict[str, str | bytes] = {**BASE}
    head |= {f"app/mod{i}.py": f"def f{i}(x):\n    return x * {i}\n" for i in range(120)}
    head["app/logo.png"] = b"\x89PNG\r\n\x1a\n\x00\x00"
    head["data/big.csv"] = "".join(f"{i},{i * i}\n" for i in range(600))
    gh.set_files(REPO, "main", BASE)
    gh.add_pull(
        REPO,
        PR,
        title="Many modules",
        body="",
        head_sha=unique_sha(),
        diff=pr_diff(head),
        files_at_head=head,
        user=AUTHOR,
    )
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        start = len(gh.calls)
        await command(gh, app)
        await eventually(lambda: advisory_or_empty(gh), what="the advisory")
        calls = gh.calls[start:]

    refused = [
        c
        for c in calls
        if c.path.endswith(f"/pulls/{PR}") and c.accept == "application/vnd.github.diff"
    ]
    assert [c.status for c in refused] == [406]
    pages = _files_pages(calls)
    assert [(c.query.get("per_page"), c.query.get("page", "1")) for c in pages] == [
        ("100", "1"),
        ("100", "2"),
    ]
    assert all(c.status == 200 for c in pages)
    sent = prompts(models.calls)
    assert "return x * 7" in sent  # reviewed from the files' patches
    body = advisory(gh)
    assert "Built from the files API: GitHub refused the diff (more than 300 files)" in body
    assert "2 files had no patch and were not reviewed" in body
    assert "`app/logo.png` (binary)" in body
    assert "`data/big.csv` (too large for GitHub to show)" in body
    run = completed(gh)[-1]
    assert "Built from the files API" in (run.summary or "")
    # The extra requests are the 406 and one per page of files: counted, and bounded.
    assert len([c for c in calls if "/pulls/" in c.path]) <= 6


async def test_incremental_reviews_off_reviews_a_push_in_full(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    _, h2 = seed(gh)
    gh.set_files(REPO, "main", {**BASE, ".github/council.yml": "incremental_reviews: false\n"})
    script = CouncilScript()
    models.default(script.reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        await reviewed_once(gh, app, script)
        first_calls = len(models.calls)
        gh.push(REPO, PR, head_sha=h2, diff=pr_diff(HEAD2), files_at_head=HEAD2)
        start = len(gh.calls)
        await pushed(gh, app, h2)
        calls = gh.calls[start:]

    assert not [c for c in calls if "/compare/" in c.path]
    assert "+     while True:" in prompts(models.calls[first_calls:])
    assert "Re-review of" not in advisory(gh)
