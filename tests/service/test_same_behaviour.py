"""Same behaviour, shown (issue 24, item 8): three fixtures, run through the App and the
command line as people run them, give byte for byte the outputs recorded in
tests/fixtures/golden/<fixture>/ from the code before bot/ was restructured.

The fixtures together cover the protocols and the renderers:
- `board`: a `/council` board review of a change to app/auth.py with findings of every
  severity - a critical one posted inline on its lines, a major and a nit on lines the
  change leaves as they are ("outside the diff"), a minor - a condition, a REJECT vote;
- `debate`: `/council debate --standard` with a choice question (Redis or an in-process
  cache): a step-back judge asks for a re-debate, a panelist shifts, the tradeoff map and
  the decision guide;
- `strategies`: `/council strategies` on a bug fix, whose first critique round raises
  major points, so a second round runs. Only Member A's critiques raise points (`_answers`):
  the points are listed in the order the critiques came back
  (bot/council/protocols/strategies/critique.py iterates `replies` as they arrived), which no
  recording could pin.

Each runs through the App (uvicorn, an arq worker, Redis, the fake GitHub, the fake model
server; a PR comment in) and `council review` twice (`--format json`, `--format text`),
from a local branch (`board`), a pull request through the fake GitHub (`debate`, `--pr`)
and a diff file (`strategies`), each command line against its own fake model server with
the same answers. Recorded per fixture: the App's comment (`comment.md`), its check run
(`check_run.json`: name, head SHA, status, conclusion, title, annotations, actions, details
URL, external id; `check_run_summary.md`, `check_run_text.md`) and inline review
(`inline_review.json`); the command line's stdout (`review.json`, `review.txt`) and the
summary line it ends with on stderr (`review_summary.txt`). Values of the moment go through
`tests.support.golden.normalize`; the ids the project's code draws are fixed by
`tests.support.golden.FixedIds` (the member order is seeded by the deliberation's id).

A difference fails the fixture with a unified diff of each output that changed. To record
again (a change meant to change what people see), with `RECORD_GOLDEN` set the test writes
what it got instead of comparing (`1`: into tests/fixtures/golden/, else into the directory
it names); tests/fixtures/golden/record.sh records a checkout's code, e.g. a worktree of the
commit before a change. Record twice: the two recordings must be identical.
"""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

import bot
from tests.support.cli import council_env, make_repo
from tests.support.council_answers import CouncilScript, label_of
from tests.support.diffs import AUTH_DIFF, diff_of
from tests.support.github_reviews import reviews_of
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.golden import CouncilForks, FixedIds, normalize
from tests.support.model_server import FakeModelServer, FakeRequest, Reply, run_fake_model_server
from tests.support.service import (
    AUTHOR,
    FILES,
    HEAD,
    PR,
    REPO,
    app_settings,
    comment_event,
    drained,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()
TOKEN = "ghp_goldentoken0123456789abcdef0123456789"
SOURCE_ROOT = Path(__file__).resolve().parents[2]
GOLDEN = SOURCE_ROOT / "tests" / "fixtures" / "golden"
BOT = Path(bot.__file__).resolve().parent  # the code under test: this checkout's
MARKER = "<!-- pr-council:advisory -->"  # what the App's advisory comment begins with

# --- the board fixture's pull request: app/auth.py, 25 lines at head ----------------------

AUTH_PATH = "app/auth.py"
AUTH_BEFORE = '''"""Logins for the admin console."""
import hmac

from app.store import users

SESSION_TTL_S = 3600


def check(user, password):
    record = users.get(user)
    return record is not None and hmac.compare_digest(record.password_hash, hash_of(password))


def hash_of(password):
    return password


def login(user, password):
    return check(user, password)


def logout(session):
    session.clear()
'''
AUTH_AFTER = AUTH_BEFORE.replace(
    "def login(user, password):\n",
    'def login(user, password):\n    if password == "admin":\n        return True\n',
)
BOARD_CONFIG = "protocol: board\ninline_comments: true\n"
BOARD_MAIN = {**FILES, AUTH_PATH: AUTH_BEFORE, ".github/council.yml": BOARD_CONFIG}
BOARD_HEAD = {**BOARD_MAIN, AUTH_PATH: AUTH_AFTER}
CONSTANT_TIME = "    if hmac.compare_digest(password, ADMIN_PASSWORD):\n        return True"
SECURITY = "Application Security Reviewer"
CORRECTNESS = "Correctness Reviewer"


def _finding(severity: str, line: int, end: int | None, title: str, **more: Any) -> dict[str, Any]:
    return {
        "severity": severity,
        "path": AUTH_PATH,
        "start_line": line,
        "end_line": end,
        "title": title,
        "detail": more.get("detail", f"{title}."),
        "suggestion": more.get("suggestion"),
        "replacement": more.get("replacement"),
    }


BOARD_FINDINGS = {
    SECURITY: [
        _finding(
            "critical",
            19,
            20,
            "Hard-coded admin password",
            detail="Anyone who types admin logs in as anyone.",
            suggestion="Compare against a configured secret, in constant time.",
            replacement=CONSTANT_TIME,
        ),
        _finding(
            "major",
            15,
            None,
            "Passwords are stored in clear",
            detail="hash_of returns the password itself.",
            replacement="    return hashlib.sha256(password.encode()).hexdigest()",
        ),
    ],
    CORRECTNESS: [
        _finding(
            "minor",
            21,
            None,
            "The admin path skips the user lookup",
            suggestion="Look the user up first.",
        ),
        _finding("nit", 1, None, "The docstring does not mention the admin password"),
    ],
}

# --- the debate fixture's script (as tests/unit/council/test_debate_modes_http.py) ---------

QUESTION = "Should the session cache live in Redis or in process?"
DEBATE_SCRIPT: dict[str, Any] = {
    "judge": ["PARTIAL", "CONVERGED"],
    "judge_fields": {
        "confidence": 82,
        "framing_issues": ["The panel compares Redis with nothing: is a cache needed at all?"],
        "hidden_assumptions": ["Everyone assumes the keys fit in memory."],
        "blind_spots": ["Nobody discussed cache invalidation."],
        "meta_insight": "Positions moved on evidence, not on pressure.",
    },
    "is_choice": True,
    "options": ["Redis", "In-process cache"],
    "positions": {"Panelist 1": ["REJECT"], "Panelist 2": ["APPROVE"]},
    "dimensions": {"Panelist 1": ["latency"], "Panelist 3": ["latency", "operability"]},
    "decision_guide": [
        ("If latency is the top priority", "Redis"),
        ("If the team cannot run Redis", "In-process cache"),
    ],
}
ASK = "how should we fix the crash in the retry loop?"


@dataclass(frozen=True)
class Fixture:
    name: str
    command: str  # the PR comment that convenes the App
    cli: tuple[str, ...]  # `council review` options besides the format
    # Where the command line reads the change: a local branch of a repository with
    # `main`/`head`'s files, the pull request through the fake GitHub, or the PR's diff.
    source: Literal["branch", "pr", "diff"]
    script: dict[str, Any] = field(default_factory=dict)  # `CouncilScript`'s knobs
    main: dict[str, str] = field(default_factory=lambda: dict(FILES))
    head: dict[str, str] = field(default_factory=lambda: dict(FILES))
    diff: str = AUTH_DIFF


FIXTURES = (
    Fixture(
        name="board",
        command="/council",
        cli=("--base", "main"),
        source="branch",
        script={
            "findings": BOARD_FINDINGS,
            "verdicts": {SECURITY: "REJECT", CORRECTNESS: "CONCERNS"},
            "votes": {SECURITY: "REJECT"},
        },
        main=BOARD_MAIN,
        head=BOARD_HEAD,
        diff=diff_of(AUTH_PATH, AUTH_BEFORE, AUTH_AFTER, index=True),
    ),
    Fixture(
        name="debate",
        command=f"/council debate --standard {QUESTION}",
        cli=(
            "--pr",
            f"{REPO}#{PR}",
            "--protocol",
            "debate",
            "--mode",
            "standard",
            "--question",
            QUESTION,
        ),
        source="pr",
        script=DEBATE_SCRIPT,
    ),
    Fixture(
        name="strategies",
        command=f"/council strategies {ASK}",
        cli=("--diff", "change.diff", "--protocol", "strategies", "--question", ASK),
        source="diff",
        script={"hunter_severity": ["major", "minor"], "task_type": "bug-fix"},
    ),
)


@pytest.fixture(scope="module")
def council() -> Iterator[CouncilForks]:
    """Runs of `council`, each in a process of its own (see `CouncilForks`)."""
    directory = Path(tempfile.mkdtemp(prefix="council-forks-"))
    forks = CouncilForks(SOURCE_ROOT, directory, council_env(None, directory))
    try:
        yield forks
    finally:
        forks.close()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.name)
async def test_the_app_and_the_command_line_say_what_was_recorded(
    fixture: Fixture,
    council: CouncilForks,
    tmp_path: Path,
    models: FakeModelServer,
    fake_github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert BOT.is_relative_to(SOURCE_ROOT), f"bot is {BOT}, not {SOURCE_ROOT}'s: set PYTHONPATH"
    _seed(fake_github, fixture)
    command_lines = [
        asyncio.ensure_future(_council_review(council, fixture, tmp_path, fake_github, output))
        for output in ("json", "text")
    ]
    monkeypatch.setattr(uuid, "uuid4", FixedIds(uuid.uuid4))
    outputs = await _through_the_app(fixture, tmp_path, models, fake_github)
    (outputs["review.json"], _), (outputs["review.txt"], said) = await asyncio.gather(
        *command_lines
    )
    outputs["review_summary.txt"] = said.splitlines(keepends=True)[-1]
    (sticky,) = _advisories(fake_github)
    (run,) = fake_github.check_runs(REPO)
    known = {str(tmp_path): "<tmp>", str(sticky.id): "<comment-id>", str(run.id): "<check-run-id>"}
    normalized = {name: normalize(text, known) for name, text in outputs.items()}

    recording = os.environ.get("RECORD_GOLDEN")
    if recording:
        _record(Path(recording) if recording != "1" else GOLDEN, fixture.name, normalized)
        return
    differences = [
        _difference(fixture.name, name, text) for name, text in sorted(normalized.items())
    ]
    shown = [d for d in differences if d]
    assert not shown, "\n".join(shown)


def _answers(fixture: Fixture) -> Callable[[FakeRequest], Reply]:
    """The fixture's scripted answers. Only Member A's cross-critiques raise points (the
    others score and adjust): the points are listed in the order the critiques came back
    (`replies` in bot/council/protocols/strategies/critique.py), which changes from run to run."""
    script = CouncilScript(**fixture.script)

    def answer(request: FakeRequest) -> Reply:
        reply = script.reply(request)
        if request.output_name != "submit_critique" or reply.json is None:
            return reply
        if label_of(request.messages_text) == "Member A":
            return reply
        critiques = [c | {"hunter": [], "skeptic": []} for c in reply.json["critiques"]]
        return dataclasses.replace(reply, json=reply.json | {"critiques": critiques})

    return answer


def _seed(gh: FakeGitHub, fixture: Fixture) -> None:
    seed_github(gh, KEYS[1])
    gh.add_token(TOKEN, login="reviewer")
    gh.set_files(REPO, "main", fixture.main)
    gh.add_pull(
        REPO,
        PR,
        title="Fix login",
        body="Makes login faster.",
        head_sha=HEAD,
        diff=fixture.diff,
        files_at_head=fixture.head,
        user=AUTHOR,
        commits=("Fix login",),
    )


async def _through_the_app(
    fixture: Fixture, tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> dict[str, str]:
    """The fixture's command on the pull request; what the App posted."""
    models.default(_answers(fixture))
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        comment_id = gh.add_comment(REPO, PR, fixture.command, user=AUTHOR)
        response = await app.deliver(
            "issue_comment", comment_event(fixture.command, comment_id=comment_id)
        )
        assert response.status_code == 202, response.text
        await eventually(
            lambda: [c for c in gh.check_runs(REPO) if c.status == "completed"],
            what="the completed check run",
            timeout=180,
        )
        await drained(app)
    (sticky,) = _advisories(gh)
    (run,) = gh.check_runs(REPO)
    check_run = {
        "name": run.name,
        "head_sha": run.head_sha,
        "status": run.status,
        "conclusion": run.conclusion,
        "title": run.title,
        "annotations": run.annotations,
        "actions": run.actions,
        "details_url": run.details_url,
        "external_id": run.external_id,
    }
    return {
        "comment.md": sticky.body,
        "check_run.json": _json(check_run),
        "check_run_summary.md": run.summary or "",
        "check_run_text.md": run.text or "",
        "inline_review.json": _json(_inline_reviews(gh)),
    }


def _advisories(gh: FakeGitHub) -> list[Any]:
    return [c for c in gh.comments(REPO, PR) if MARKER in c.body]


def _inline_reviews(gh: FakeGitHub) -> list[dict[str, Any]]:
    reviews = reviews_of(gh)
    comments = reviews.comments(REPO, PR)
    return [
        {
            "event": review.event,
            "commit_id": review.commit_id,
            "body": review.body,
            "comments": [
                {"path": c.path, "start_line": c.start_line, "line": c.line, "body": c.body}
                for c in comments
                if c.review_id == review.id
            ],
        }
        for review in reviews.reviews(REPO, PR)
    ]


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


async def _council_review(
    council: CouncilForks, fixture: Fixture, tmp_path: Path, gh: FakeGitHub, output: str
) -> tuple[str, str]:
    """`council review` on the fixture's change, against a fake model server of its own
    with the same answers; its stdout and stderr."""
    cwd = tmp_path / f"cli-{output}"
    if fixture.source == "branch":
        make_repo(cwd, fixture.main, fixture.head)
    else:
        cwd.mkdir()
        (cwd / "change.diff").write_text(fixture.diff)
    with run_fake_model_server() as models:
        models.default(_answers(fixture))
        env = council_env(models, cwd, GITHUB_TOKEN=TOKEN, GITHUB_API_URL=gh.url)
        code, stdout, stderr = await council.run(
            ["review", *fixture.cli, "--format", output], cwd, env
        )
    assert code == 0, stderr[-3000:]
    return stdout, stderr


def _record(directory: Path, fixture: str, outputs: dict[str, str]) -> None:
    (directory / fixture).mkdir(parents=True, exist_ok=True)
    for name, text in outputs.items():
        (directory / fixture / name).write_text(text)


def _difference(fixture: str, name: str, actual: str) -> str:
    """A unified diff of the recording and `actual` ("" when they are the same). JSON keeps
    `--json`'s comment on one line: it is shown apart, as lines."""
    path = GOLDEN / fixture / name
    expected = path.read_text() if path.exists() else ""
    if actual == expected:
        return ""
    label = f"{fixture}/{name}"
    texts = [_markdown_apart(expected), _markdown_apart(actual)]
    shown = _unified(texts[0][0], texts[1][0], f"{label} (recorded)", f"{label} (now)")
    if texts[0][1] != texts[1][1]:
        shown += _unified(texts[0][1], texts[1][1], f"{label}: markdown (recorded)", "(now)")
    return shown


def _markdown_apart(text: str) -> tuple[str, str]:
    """`--json`'s output with its "markdown" value elided, and that value; other text as is."""
    try:
        value = json.loads(text)
    except ValueError:
        return text, ""
    if not isinstance(value, dict) or not isinstance(value.get("markdown"), str):
        return text, ""
    return text.replace(json.dumps(value["markdown"]), '"..."'), value["markdown"]


def _unified(expected: str, actual: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(keepends=True), actual.splitlines(keepends=True), before, after
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
