"""A council without a quorum says so once: the check run's title, the comment and the
terminal put "The council could not convene" before the reason, so the reason the engine
gives must not start with it too (it did: "...could not convene: The council could not
convene: fewer than 2 valid assessments"). Through the real SDKs and the fake model server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.council.advisory import Advisory, Resolution
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.scoring import ReviewSignals
from bot.providers import ProviderRegistry
from bot.render import render_check_run, render_comment
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, Fault
from tests.unit.providers.test_providers import make_settings

PHRASE = "could not convene"


def request() -> DeliberationRequest:
    return DeliberationRequest(
        deliberation_id="no-quorum-1",
        topic="Review this pull request",
        protocol="board",
        context="<untrusted-diff>\n+ def handler(request):\n+     retry()\n</untrusted-diff>",
        signals=ReviewSignals(topic="Review this pull request", languages=["python"]),
        models=["anthropic:claude-sonnet-5-5", "openai:gpt-5.4"],
        board=BoardConfig(default_size=3, min_size=2, discussion_rounds=1),
        assessment_timeout_s=10.0,
    )


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


async def no_quorum(
    models: FakeModelServer, registry: ProviderRegistry, api: str | None
) -> Advisory:
    """Every seat on `api` (None: every seat) fails its assessment."""
    models.on(lambda r: api is None or r.api == api, reply=Fault.server_error())
    models.default(CouncilScript().reply)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(request())
    assert advisory.resolution is Resolution.NO_QUORUM
    return advisory


@pytest.mark.parametrize("api", [None, "openai"], ids=["no seat answered", "one seat answered"])
async def test_the_no_quorum_title_says_could_not_convene_once(
    models: FakeModelServer, registry: ProviderRegistry, api: str | None
) -> None:
    advisory = await no_quorum(models, registry, api)
    title = render_check_run(advisory).title
    assert title.lower().count(PHRASE) == 1, title
    if api is None:  # the limited advisory's longer reason is clipped out of the title
        assert "could not convene: fewer than 2 valid assessments" in title.lower()
    comment = render_comment(advisory)
    assert comment.lower().count(PHRASE) == 1, comment
    assert "fewer than 2 valid assessments" in comment.lower()
