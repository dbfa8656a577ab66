"""A board whose models paraphrase lens names and score only some lenses, over the wire:
the real SDKs through the provider registry, the fake model server answering as
`CouncilScript(lens_names="paraphrase", lens_limit=2)`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.council.advisory import Resolution, SeatState
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.scoring import ReviewSignals
from bot.providers import ProviderRegistry
from bot.render import render_comment
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer
from tests.unit.providers.test_providers import make_settings

ANTHROPIC = "anthropic:claude-sonnet-5-5"
OPENAI = "openai:gpt-5.4"
TOPIC = "Review this pull request"


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


async def test_a_board_of_paraphrasing_partial_scorers_convenes_with_a_complete_advisory(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript(lens_names="paraphrase", lens_limit=2).reply)
    request = DeliberationRequest(
        deliberation_id="lens-1",
        topic=TOPIC,
        context="<untrusted-diff>\n+ retry(request)\n</untrusted-diff>",
        signals=ReviewSignals(topic=TOPIC, languages=["python"], areas=["security"]),
        models=[ANTHROPIC, OPENAI],
        board=BoardConfig(default_size=5, min_size=5, discussion_rounds=1),
        assessment_timeout_s=10.0,
    )
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(request)

    assert advisory.resolution == Resolution.APPROVED and advisory.reason is None
    assert len(advisory.seats) == 5 and not advisory.partial
    assert advisory.synthesis is not None and advisory.rounds[0].messages
    names = [c.request.output_name for c in models.calls]
    # Two lenses of each brief scored: every seat re-asked once for the others; the re-ask
    # scored no lens more, so the answer is kept without a third ask.
    assert names.count("submit_assessment") == 10
    assert names.count("submit_discussion") == names.count("submit_vote") == 5
    comment = render_comment(advisory)
    for seat in advisory.seats:
        assert seat.state == SeatState.OK and seat.vote is not None
        assert seat.assessment is not None and seat.assessment.summary
        scored = [s.lens for s in seat.assessment.lens_scores]
        assert scored == seat.lenses[:2]  # the brief's names, matched through the paraphrases
        assert all(
            s.analysis == f"Checked {s.lens} in the diff." for s in seat.assessment.lens_scores
        )
        assert seat.unscored_lenses == seat.lenses[2:]
        assert all(f"| {lens} | 7/10 |" in comment for lens in scored)
        assert all(f"| {lens} | not scored |" in comment for lens in seat.unscored_lenses)
