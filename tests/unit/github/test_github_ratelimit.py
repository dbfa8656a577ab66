"""The requests left in an installation's rate limit, recorded from GitHub's answers."""

from __future__ import annotations

import time

from prometheus_client import REGISTRY

from tests.support.github_app import github_app
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app


async def test_every_answer_records_what_is_left_for_the_installation(
    fake_github: FakeGitHub,
) -> None:
    fake = fake_github
    fake.reset()
    install_app(fake)
    fake.add_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
    fake.set_rate_limit(42, reset_in_s=60)
    async with github_app(fake) as app:
        async with app.for_installation(INSTALLATION_ID, REPO) as client:
            await client.rest.repos.async_get(client.owner, client.name)
        watch = app.rate_watch
        left = await watch.left(INSTALLATION_ID)
        assert left is not None
        assert left[0] == 42 and time.time() < left[1] <= time.time() + 61
        gauge = REGISTRY.get_sample_value(
            "council_github_requests_left", {"installation": str(INSTALLATION_ID)}
        )
        assert gauge == 42
        wait = await watch.wait_s(INSTALLATION_ID, reserve=300)
        assert wait is not None and 55 < wait[0] <= 62
        assert await watch.wait_s(INSTALLATION_ID, reserve=10) is None
        assert await watch.wait_s(INSTALLATION_ID + 1, reserve=300) is None  # unknown: go

        # Once the reset time has passed, the old figure no longer holds anyone back.
        watch._clock = lambda: time.time() + 120
        assert await watch.wait_s(INSTALLATION_ID, reserve=300) is None
