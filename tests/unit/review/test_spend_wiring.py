"""`bot.review.run.deliberate`, as the worker calls it, spends through the store's budget:
each call is charged to the installation's day and to the pull request when it is paid,
and the repository's `max_pr_cost_usd` (within COUNCIL_MAX_PR_COST_USD) is the PR's cap."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from bot.review.assemble import PreparedReview, ReviewOptions, prepare_review
from bot.review.local import read_diff_file
from bot.review.run import deliberate
from bot.review.setup import local_setup
from bot.review.sources import LocalSource
from bot.settings import EndpointConfig, Settings
from bot.store.db import Database
from bot.store.deliberations import create_deliberation
from bot.store.installations import daily_cost
from bot.store.spend import pr_cost, reservations, utc_today
from tests.support.council_answers import CouncilScript
from tests.support.diffs import AUTH_DIFF
from tests.support.fake_provider import DEFAULT_MODELS, FakeProviders

INSTALLATION = 77
REPO = "octo/spend"


def operator(tmp_path: Path) -> Settings:
    return Settings.model_validate(
        {
            "models": list(DEFAULT_MODELS),
            # The fake's references parse as an endpoint's; FakeProviders answers them.
            "endpoints": {"fake": EndpointConfig(base_url="http://127.0.0.1:9/v1")},
            "max_daily_cost_usd": 100.0,
            "max_pr_cost_usd": 50.0,
            "anthropic_api_key": None,
            "openai_api_key": None,
            "database_url": f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",
        }
    )


async def prepared(tmp_path: Path, settings: Settings, config: str) -> PreparedReview:
    (tmp_path / "change.diff").write_text(AUTH_DIFF)
    (tmp_path / "council.yml").write_text(config)
    setup = local_setup(settings, config_file=tmp_path / "council.yml")
    assert setup.loaded.issues == []
    source = LocalSource(read_diff_file(str(tmp_path / "change.diff")))
    options = ReviewOptions(protocol="quick")
    return await prepare_review(source, setup, settings, options, available=DEFAULT_MODELS)


async def review(tmp_path: Path, config: str, pr_number: int) -> tuple[float, float, str | None]:
    settings = operator(tmp_path)
    fake = FakeProviders(CouncilScript())
    db = Database(settings.database_url)
    await db.connect()
    try:
        record = await create_deliberation(
            db,
            key=f"job-{uuid.uuid4()}",
            repo=REPO,
            pr_number=pr_number,
            head_sha="d" * 40,
            trigger="command",
            protocol="quick",
            topic="Review this pull request",
            installation_id=INSTALLATION,
        )
        advisory = await deliberate(
            await prepared(tmp_path, settings, config),
            settings,
            deliberation_id=record.id,
            providers=fake,
            db=db,
            max_cost_usd=None,
        )
        assert all(r.state != "reserved" for r in await reservations(db, record.id))
        day = await daily_cost(db, INSTALLATION, utc_today())
        pr = await pr_cost(db, REPO, pr_number)
        assert advisory.usage.cost_usd == pytest.approx(fake.cost_usd)
        assert day == pytest.approx(fake.cost_usd)
        return fake.cost_usd, pr, advisory.reason
    finally:
        await db.dispose()


async def test_every_paid_call_is_charged_to_the_day_and_the_pull_request(tmp_path: Path) -> None:
    paid, pr, reason = await review(tmp_path, "protocol: quick\n", pr_number=1)
    assert paid > 0 and reason is None
    assert pr == pytest.approx(paid)


async def test_the_repositorys_pull_request_cap_applies(tmp_path: Path) -> None:
    paid, pr, reason = await review(tmp_path, "max_pr_cost_usd: 0.0001\n", pr_number=2)
    assert paid == pr == 0.0  # not one call's worst case fits: none started
    assert reason is not None and reason.startswith("The pull request's cost cap of $0.00")
