"""Cost reservations follow what calls are likely to cost (a service test:
docs/architecture.md, "Testing"): once the App has seen its models answer, a board whose
pull request is capped at 3x what a board costs (far below the sum of its calls' worst
cases) completes, where reserving every call's worst case stopped it at COST_LIMIT.

Two runs of the App on one SQLite store, as two deployments of the same workers would be:
the first, uncapped, reviews another pull request and so records its models' answer sizes
in the store; the second, with COUNCIL_MAX_PR_COST_USD set, reviews the capped one.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bot.store.db import Database
from bot.store.deliberations import latest_for_pr
from bot.store.spend import pr_cost, reservations
from tests.support.council_answers import CouncilScript
from tests.support.github_server import CheckRunState, FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    DIFF,
    FILES,
    HEAD,
    PR,
    REPO,
    app_settings,
    comment_event,
    eventually,
    running_app,
    seed_github,
    unique_sha,
)

KEYS = app_keypair()
MARKER = "<!-- pr-council:advisory -->"
WARM_UP_PR = PR + 1


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


def board_command(pr: int, comment_id: int) -> dict[str, Any]:
    payload = copy.deepcopy(comment_event("/council board", comment_id=comment_id))
    payload["issue"]["number"] = pr
    payload["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{pr}"}
    return payload


def finished(gh: FakeGitHub, head: str) -> list[CheckRunState]:
    return [c for c in gh.check_runs(REPO) if c.head_sha == head and c.status == "completed"]


async def test_a_board_capped_at_three_times_its_cost_completes_once_its_models_are_known(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    warm_head = unique_sha()
    gh.add_pull(
        REPO,
        WARM_UP_PR,
        title="Fix logout",
        body="",
        head_sha=warm_head,
        diff=DIFF,
        files_at_head=dict(FILES),
        user=AUTHOR,
    )
    models.default(CouncilScript().reply)

    # The first deployment, uncapped: a board on another PR records what the models answer.
    uncapped = app_settings(tmp_path, models, gh, KEYS[0])
    async with running_app(uncapped) as app:
        comment_id = gh.add_comment(REPO, WARM_UP_PR, "/council board", user=AUTHOR)
        await app.deliver("issue_comment", board_command(WARM_UP_PR, comment_id))
        await eventually(lambda: finished(gh, warm_head), what="the first board's check run")
    (warm,) = finished(gh, warm_head)
    assert warm.conclusion == "success"
    async with Database(uncapped.database_url) as db:
        board_cost = await pr_cost(db, REPO, WARM_UP_PR)
        first = await latest_for_pr(db, REPO, WARM_UP_PR)
        assert first is not None
        held = await reservations(db, first.id)
    # Its assessments were reserved at once, before any answer: each its worst case.
    assessments = [r.reserved_usd for r in held if r.label.startswith("assess/")]
    assert len(assessments) >= 3
    cap = 3 * board_cost
    assert sum(assessments) > cap, (assessments, board_cost)  # far beyond the cap

    # The second deployment, capped per pull request at 3x what a board costs.
    capped = app_settings(tmp_path, models, gh, KEYS[0], max_pr_cost_usd=cap)
    async with running_app(capped) as app:
        comment_id = gh.add_comment(REPO, PR, "/council board", user=AUTHOR)
        await app.deliver("issue_comment", board_command(PR, comment_id))
        await eventually(lambda: finished(gh, HEAD), what="the capped board's check run")

    (run,) = finished(gh, HEAD)
    assert run.conclusion == "success" and "Approved" in (run.title or "")
    (comment,) = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    assert MARKER in comment.body and "cost cap" not in comment.body
    async with Database(capped.database_url) as db:
        spent = await pr_cost(db, REPO, PR)
    assert 0 < spent <= cap
