"""The GitHub Action as a workflow runs it: `council action` in a subprocess, with the
runner's variables, an event file, a workflow token, the fake GitHub and the fake models.

What is asserted is what people see: the sticky comment and the "Council" check run on
the PR (its details link the workflow run), the job summary, and the exit code.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer, Fault
from tests.support.service import (
    FILES,
    HEAD,
    PR,
    REPO,
    comment_event,
    pull_request_event,
    seed_github,
)

COUNCIL = str(Path(sys.executable).with_name("council"))
KEYS = app_keypair()
WORKFLOW_TOKEN = "ghs_workflowtoken0123456789abcdef012345"
ACTIONS_BOT = "github-actions[bot]"
RUN_ID = "987654321"
SERVER = "https://github.example.com"
RUN_URL = f"{SERVER}/{REPO}/actions/runs/{RUN_ID}"


def workflow_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """A workflow's event file is the webhook payload without the App's installation."""
    event = copy.deepcopy(payload)
    event.pop("installation", None)
    return event


def seed(gh: FakeGitHub, **kwargs: Any) -> None:
    seed_github(gh, KEYS[1], **kwargs)
    gh.add_token(WORKFLOW_TOKEN, login=ACTIONS_BOT)
    # quick: few model calls; the protocol the repository asks for on its default branch.
    gh.set_files(REPO, "main", {**FILES, ".github/council.yml": "protocol: quick\n"})


def action_env(
    tmp_path: Path,
    gh: FakeGitHub,
    models: FakeModelServer | None,
    event: str,
    payload: dict[str, Any],
    **extra: str,
) -> tuple[dict[str, str], Path]:
    """The runner's environment for one event; returns it and the job summary's file."""
    event_file = tmp_path / "event.json"
    event_file.write_text(json.dumps(workflow_payload(payload)))
    summary = tmp_path / "summary.md"
    summary.write_text("")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GITHUB_", "COUNCIL_", "ANTHROPIC_", "OPENAI_", "DATABASE_"))
    }
    env.update(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(event_file),
            "GITHUB_TOKEN": WORKFLOW_TOKEN,
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_SERVER_URL": SERVER,
            "GITHUB_RUN_ID": RUN_ID,
            "GITHUB_API_URL": gh.url,
            "GITHUB_STEP_SUMMARY": str(summary),
            "COUNCIL_MAX_RETRIES": "0",
            "COUNCIL_CALL_DEADLINE_S": "10",
            "COUNCIL_CHECK_UPDATE_INTERVAL_S": "0",
            "COUNCIL_CONTENT_PACING_S": "0",
            "COUNCIL_OLLAMA_URL": "http://127.0.0.1:9",
            "COUNCIL_MODELS": "anthropic:claude-sonnet-5-5,openai:gpt-5.4",
            # No Redis: a URL nothing answers on, so any use of it would fail the run.
            "REDIS_URL": "redis://127.0.0.1:9/0",
            "XDG_STATE_HOME": str(tmp_path / "state"),
        }
    )
    if models is not None:
        env.update(
            {
                "ANTHROPIC_API_KEY": "sk-ant-test-0123456789",
                "ANTHROPIC_BASE_URL": models.anthropic_url,
                "OPENAI_API_KEY": "sk-test-0123456789",
                "OPENAI_BASE_URL": models.openai_url,
            }
        )
    else:
        env.pop("COUNCIL_MODELS")
    env.update(extra)
    return env, summary


def run_action(
    tmp_path: Path,
    gh: FakeGitHub,
    models: FakeModelServer | None,
    event: str,
    payload: dict[str, Any],
    **extra: str,
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the entry point as action.yml does; returns the process and the job summary."""
    env, summary = action_env(tmp_path, gh, models, event, payload, **extra)
    done = subprocess.run(
        [COUNCIL, "action"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    return done, summary.read_text()


def posted(gh: FakeGitHub) -> list[str]:
    return [f"{c.method} {c.path}" for c in gh.calls if c.method != "GET"]


def test_a_labeled_pull_request_gets_one_comment_and_one_check_run(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh, labels=("architecture",))
    models.default(CouncilScript().reply)
    done, summary = run_action(
        tmp_path, gh, models, "pull_request", pull_request_event("labeled", label="architecture")
    )
    assert done.returncode == 0, done.stderr
    comments = gh.comments(REPO, PR)
    assert len(comments) == 1 and comments[0].user == ACTIONS_BOT
    assert "## ✅ Approved" in comments[0].body and "protocol `quick`" in comments[0].body
    (run,) = gh.check_runs(REPO)
    assert (run.name, run.head_sha, run.status) == ("Council", HEAD, "completed")
    assert run.conclusion == "success"
    assert run.details_url == RUN_URL
    assert run.actions == []  # no buttons: nothing would answer them
    assert "APPROVED" in summary and "quick" in summary
    assert WORKFLOW_TOKEN not in done.stdout + done.stderr + summary
    # Every call was the workflow token's: no App JWT, no installation token.
    assert {c.auth for c in gh.calls} == {"token"}

    # The next push with the label: the same comment, updated in place; a second run.
    gh.push(REPO, PR, head_sha="ab" * 20)
    push = pull_request_event("synchronize", sha="ab" * 20)
    again, _ = run_action(tmp_path, gh, models, "pull_request", push)
    assert again.returncode == 0, again.stderr
    assert len(gh.comments(REPO, PR)) == 1
    assert [r.head_sha for r in gh.check_runs(REPO)] == [HEAD, "ab" * 20]


def test_a_label_that_is_not_a_trigger_is_skipped_with_a_note(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    done, summary = run_action(
        tmp_path, gh, models, "pull_request", pull_request_event("labeled", label="bug")
    )
    assert done.returncode == 0, done.stderr
    assert "label 'bug' is not a trigger label" in summary
    assert posted(gh) == [] and models.calls == []


def test_a_command_from_a_writer_convenes_the_council(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    asked = gh.add_comment(REPO, PR, "/council quick", user="Codertocat")
    done, summary = run_action(
        tmp_path, gh, models, "issue_comment", comment_event("/council quick", comment_id=asked)
    )
    assert done.returncode == 0, done.stderr
    assert [r.content for r in gh.reactions(asked)] == ["eyes"]
    (_, comment) = gh.comments(REPO, PR)
    assert comment.user == ACTIONS_BOT and "## ✅ Approved" in comment.body
    (run,) = gh.check_runs(REPO)
    assert run.status == "completed" and run.details_url == RUN_URL
    assert "APPROVED" in summary


def test_a_command_from_a_reader_is_refused_once_and_convenes_nothing(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    gh.set_permission(REPO, "visitor", "read")
    event = comment_event("/council quick", comment_id=502, sender="visitor")
    done, summary = run_action(tmp_path, gh, models, "issue_comment", event)
    again, _ = run_action(
        tmp_path,
        gh,
        models,
        "issue_comment",
        comment_event("/council", comment_id=503, sender="visitor"),
    )
    assert done.returncode == 0 and again.returncode == 0, done.stderr + again.stderr
    (refusal,) = gh.comments(REPO, PR)  # one reply per hour per PR, as from the App
    assert refusal.body.startswith("@visitor Only people with write or admin access")
    assert gh.check_runs(REPO) == [] and models.calls == []
    assert "may not convene" in summary


def test_a_fork_pull_request_gets_a_job_summary_note_and_nothing_posted(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh, fork=True)
    event = pull_request_event("labeled", label="architecture")
    event["pull_request"]["head"]["repo"]["full_name"] = "forker/Hello-World"
    done, summary = run_action(tmp_path, gh, None, "pull_request", event)
    assert done.returncode == 0, done.stderr
    assert "comes from a fork" in summary and "/council" in summary
    assert gh.calls == [] and models.calls == []  # not a single request


def test_no_secrets_under_pull_request_is_a_note_not_a_failure(
    tmp_path: Path, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    event = pull_request_event("labeled", label="architecture")
    done, summary = run_action(tmp_path, gh, None, "pull_request", event)
    assert done.returncode == 0, done.stderr
    assert "No model provider key reached this run" in summary
    assert gh.calls == []


def test_the_config_comes_from_the_default_branch_never_the_head(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    # The PR's head asks for a debate and for labels that are not the default branch's.
    head_config = "protocol: debate\ntrigger_labels: [bug]\ngate: advisory\n"
    gh.set_files(REPO, HEAD, {**FILES, ".github/council.yml": head_config})
    models.default(CouncilScript().reply)
    skipped, note = run_action(
        tmp_path, gh, models, "pull_request", pull_request_event("labeled", label="bug")
    )
    assert skipped.returncode == 0 and "not a trigger label" in note
    done, summary = run_action(
        tmp_path, gh, models, "pull_request", pull_request_event("labeled", label="architecture")
    )
    assert done.returncode == 0, done.stderr
    assert "The council (quick)" in summary
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "success"
    # Nothing of the head's tree was read for the configuration.
    reads = [c for c in gh.calls if ".github" in c.path or "council.yml" in c.path]
    assert all(HEAD not in c.path and c.query.get("ref") != HEAD for c in reads)


def test_a_failed_review_completes_its_check_run_and_fails_the_job(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    # A model that is not configured anywhere: the preflight stops it before any call.
    done, summary = run_action(
        tmp_path,
        gh,
        models,
        "pull_request",
        pull_request_event("labeled", label="architecture"),
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
        OPENAI_BASE_URL="http://127.0.0.1:9",
    )
    assert done.returncode == 1
    assert "error:" in done.stderr and "Traceback" not in done.stderr
    (run,) = gh.check_runs(REPO)
    # No verdict: under `gate: verdict` it blocks the merge.
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert (run.title or "").startswith("No verdict: ")
    assert "Failed" in summary


@pytest.mark.parametrize(
    ("event", "payload", "reason"),
    [
        ("pull_request", pull_request_event("opened"), "pull_request.opened"),
        ("issue_comment", comment_event("thanks!", comment_id=504), "no /council command"),
        ("push", {"ref": "refs/heads/main"}, "event 'push' is not handled"),
    ],
)
def test_events_without_a_review_are_explained_in_the_job_summary(
    tmp_path: Path, fake_github: FakeGitHub, event: str, payload: dict[str, Any], reason: str
) -> None:
    gh = fake_github
    seed(gh)
    done, summary = run_action(tmp_path, gh, None, event, payload)
    assert done.returncode == 0, done.stderr
    assert reason in summary
    assert gh.calls == []


def test_outside_a_workflow_it_says_what_is_missing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    done = subprocess.run(
        [COUNCIL, "action"], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert done.returncode == 2
    assert "GITHUB_EVENT_NAME" in done.stderr and "GITHUB_TOKEN" in done.stderr


def test_a_cancelled_run_completes_its_check_run_as_cancelled(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    models.on(reply=Fault.hang())  # every model call hangs: the review is mid-deliberation
    env, summary = action_env(
        tmp_path, gh, models, "issue_comment", comment_event("/council quick", comment_id=505)
    )
    process = subprocess.Popen(
        [COUNCIL, "action"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not models.calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert models.calls, "no model call started"
        (running,) = gh.check_runs(REPO)
        assert running.status == "in_progress"
        process.send_signal(signal.SIGTERM)  # what the runner sends a cancelled job
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    (run,) = gh.check_runs(REPO)
    assert (run.status, run.conclusion) == ("completed", "cancelled")
    assert "cancelled" in (run.summary or "")
    assert gh.comments(REPO, PR) == []
    assert process.returncode == 130, stderr
    assert "council: The workflow run was cancelled" in stderr
    assert "cancelled" in summary.read_text()


def test_help_replies_with_the_grammar_and_the_default_branchs_config(
    tmp_path: Path, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    done, _ = run_action(
        tmp_path, gh, None, "issue_comment", comment_event("/council help", comment_id=506)
    )
    assert done.returncode == 0, done.stderr
    (reply,) = gh.comments(REPO, PR)
    assert "/council" in reply.body and "protocol: quick" in reply.body
    assert gh.check_runs(REPO) == []


def test_cancel_stops_the_running_review(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    models.on(reply=Fault.hang())
    (tmp_path / "first").mkdir()
    env, _ = action_env(
        tmp_path / "first", gh, models, "issue_comment", comment_event("/council", comment_id=507)
    )
    first = subprocess.Popen([COUNCIL, "action"], env=env, cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not models.calls and time.monotonic() < deadline:
            time.sleep(0.05)
        assert models.calls, "no model call started"
        done, summary = run_action(
            tmp_path, gh, models, "issue_comment", comment_event("/council cancel", comment_id=508)
        )
    finally:
        first.kill()
        first.communicate(timeout=30)
    assert done.returncode == 0, done.stderr
    (run,) = gh.check_runs(REPO)
    assert (run.status, run.conclusion) == ("completed", "cancelled")
    assert run.summary == "Cancelled by @Codertocat."
    assert "Cancelled 1 running review" in summary


def test_inline_comments_from_the_action_are_posted_once(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """With `inline_comments: true` on the default branch, the action posts the findings on
    their lines as one COMMENT review by github-actions[bot]; the next run on the same head
    (a new job, its store gone) finds them by their hidden markers and posts nothing twice."""
    from tests.service.test_inline_comments import ADMIN, ELSEWHERE, RETURN, SEAT
    from tests.support.github_reviews import reviews_of

    gh = fake_github
    seed(gh)
    files = dict(FILES)
    files[".github/council.yml"] = "protocol: quick\ninline_comments: true\n"
    gh.set_files(REPO, "main", files)
    models.default(CouncilScript(findings={SEAT: [ADMIN, RETURN, ELSEWHERE]}).reply)
    for n in range(2):
        asked = gh.add_comment(REPO, PR, "/council quick", user="Codertocat")
        (tmp_path / str(n)).mkdir()
        done, _ = run_action(
            tmp_path / str(n),
            gh,
            models,
            "issue_comment",
            comment_event("/council quick", comment_id=asked),
        )
        assert done.returncode == 0, done.stderr
        (review,) = reviews_of(gh).reviews(REPO, PR)
        assert review.event == "COMMENT" and review.user == ACTIONS_BOT
        titles = sorted(
            c.body.split("**: **")[1].split("**")[0] for c in reviews_of(gh).comments(REPO, PR)
        )
        assert titles == ["Check result ignored for admins", "Hard-coded admin password"]
    sticky = [c for c in gh.comments(REPO, PR) if c.user == ACTIONS_BOT][-1]
    assert "No audit log of admin logins" in sticky.body  # off the diff: only here


FORBIDDEN = {
    "message": "Resource not accessible by integration",
    "documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
    "status": "403",
}


def test_a_token_that_may_not_comment_still_puts_the_verdict_on_the_check_run(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """A workflow without `issues: write`: the comment is refused (403), and the check run
    completes with the verdict all the same, naming the job's missing permission."""
    gh = fake_github
    seed(gh, labels=("architecture",))
    models.default(CouncilScript(verdict="REJECT").reply)
    gh.fail("POST", rf"/repos/{REPO}/issues/{PR}/comments", status=403, body=FORBIDDEN, times=None)
    done, summary = run_action(
        tmp_path, gh, models, "pull_request", pull_request_event("labeled", label="architecture")
    )
    assert done.returncode == 0, done.stderr
    (run,) = gh.check_runs(REPO)
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert (run.title or "").startswith("Rejected")
    said = run.summary or ""
    assert "`issues: write`" in said and "`permissions:`" in said
    assert "installation" not in said  # the App's hint is not the workflow's
    assert "`issues: write`" in summary and "REJECTED" in summary
    assert gh.comments(REPO, PR) == []


def test_a_check_run_the_token_may_not_create_gets_the_workflow_permissions_hint(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh, labels=("architecture",))
    models.default(CouncilScript().reply)
    gh.fail("POST", rf"/repos/{REPO}/check-runs", status=403, body=FORBIDDEN, times=None)
    done, _ = run_action(
        tmp_path, gh, models, "pull_request", pull_request_event("labeled", label="architecture")
    )
    assert done.returncode == 1
    assert "`checks: write`" in done.stderr and "`permissions:`" in done.stderr
    assert "installation's settings" not in done.stderr
    assert not models.calls


def test_a_pull_request_with_nothing_to_review_has_no_verdict_and_blocks(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh, labels=("architecture",))
    gh.add_pull(
        REPO,
        PR,
        title="New logo",
        body="",
        head_sha=HEAD,
        diff=(
            "diff --git a/logo.png b/logo.png\nindex 1111111..2222222 100644\n"
            "Binary files a/logo.png and b/logo.png differ\n"
        ),
        files_at_head={**FILES, "logo.png": b"\x89PNG\r\n"},
        labels=("architecture",),
    )
    models.default(CouncilScript().reply)
    done, summary = run_action(
        tmp_path, gh, models, "pull_request", pull_request_event("labeled", label="architecture")
    )
    assert done.returncode == 0, done.stderr
    (run,) = gh.check_runs(REPO)
    assert run.conclusion == "failure", run.title
    assert (run.title or "").startswith("No verdict: nothing to review")
    assert "Nothing to review" in summary and not models.calls
