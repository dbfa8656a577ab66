"""A protocol is a module: the test protocol `echo` (tests/support/echo_protocol.py) is
registered with two lines and runs end to end over the wire (the real SDKs through the
provider registry, the fake model server answering as `CouncilScript`), its own phase
included, with no other file knowing its name."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from bot.council.advisory import Resolution
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import EventKind, InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.protocols import NAMES, names, phases_text, planned_calls, protocol
from bot.providers import ProviderRegistry
from tests.support.council_answers import CouncilScript
from tests.support.echo_protocol import NAME, echo_note, installed
from tests.support.model_server import FakeModelServer
from tests.unit.providers.test_providers import make_settings

ANTHROPIC = "anthropic:claude-sonnet-5-5"
OPENAI = "openai:gpt-5.4"
TOPIC = "Review this pull request"


@pytest.fixture
def echo() -> Iterator[None]:
    with installed():
        yield


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


def request() -> DeliberationRequest:
    return DeliberationRequest(
        deliberation_id="echo-1",
        protocol=NAME,
        topic=TOPIC,
        context="<untrusted-diff>\n+ retry(request)\n</untrusted-diff>",
        models=[ANTHROPIC, OPENAI],
        assessment_timeout_s=10.0,
    )


def test_an_unregistered_protocol_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown protocol 'nope'"):
        DeliberationRequest(
            deliberation_id="x", protocol="nope", topic="t", context="c", models=[OPENAI]
        )


async def test_the_echo_protocol_runs_end_to_end_once_registered(
    models: FakeModelServer, registry: ProviderRegistry, echo: None
) -> None:
    assert protocol(NAME).phases[3] == NAME
    assert phases_text(NAME) == "convene(models) assess gate echo resolve-by-assessments synthesize"
    planned = [c.phase for c in planned_calls(NAME, seats=2, rounds=0)]
    assert planned == ["assess", "assess", "merge", "synthesize"]

    models.default(CouncilScript().reply)
    ledger = InMemoryLedger()
    advisory = await Engine(registry, load_catalog(), ledger).deliberate(request())

    assert advisory.protocol == NAME
    assert advisory.resolution is not Resolution.NO_QUORUM
    assert echo_note(2) in advisory.notes
    asked = [c.request.output_name for c in models.calls]
    assert asked.count("submit_assessment") == 2
    assert "submit_synthesis" in asked
    assert not {"submit_vote", "submit_discussion", "submit_ranking"} & set(asked)
    assert NAME in names()
    kinds = [e.kind for e in await ledger.events("echo-1")]
    assert kinds[0] is EventKind.CONVENED and kinds[-1] is EventKind.SYNTHESIZED


def test_the_table_holds_only_the_built_in_protocols_once_echo_is_gone() -> None:
    with installed():
        assert names() == (*NAMES, NAME)
    assert names() == NAMES
