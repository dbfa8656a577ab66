"""A model nobody knows the price of counts $0 but is named in the usage
(`unpriced_models`), so its cost is shown as unknown; a reference that does not resolve
counts as unpriced too. A model priced at $0 (a local server) is priced."""

from __future__ import annotations

import pytest

from bot.council.advisory import SeatState
from bot.council.engine import Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import FAKE_CAPABILITIES, FakeProviders, engine_request

CATALOG = load_catalog()
ALPHA, BETA = "fake:alpha", "fake:beta"
UNPRICED = FAKE_CAPABILITIES.model_copy(
    update={"input_price": 0.0, "output_price": 0.0, "price_source": "unknown"}
)
LOCAL = FAKE_CAPABILITIES.model_copy(
    update={"input_price": 0.0, "output_price": 0.0, "price_source": "local"}
)


async def test_calls_to_an_unpriced_model_are_named_and_replayed_so() -> None:
    fake = FakeProviders(CouncilScript(), model_capabilities={BETA: UNPRICED})
    ledger = InMemoryLedger()
    engine = Engine(fake, CATALOG, ledger)
    first = await engine.deliberate(engine_request(models=[ALPHA, BETA]))
    assert first.usage.unpriced_models == [BETA]
    priced = sum(c.cost_usd for c in fake.calls if c.model == ALPHA)
    assert first.usage.cost_usd == pytest.approx(priced) and priced > 0
    assert all(c.cost_usd == 0 for c in fake.calls if c.model == BETA)
    second = await engine.deliberate(engine_request(models=[ALPHA, BETA]))
    assert second.usage.unpriced_models == [BETA]


async def test_a_local_model_priced_at_zero_is_not_unknown() -> None:
    fake = FakeProviders(CouncilScript(), capabilities=LOCAL)
    advisory = await Engine(fake, CATALOG, InMemoryLedger()).deliberate(engine_request())
    assert advisory.usage.cost_usd == 0 and advisory.usage.unpriced_models == []


async def test_a_reference_that_does_not_resolve_counts_as_unpriced() -> None:
    fake = FakeProviders(CouncilScript(), model_capabilities={BETA: None})
    advisory = await Engine(fake, CATALOG, InMemoryLedger()).deliberate(
        engine_request(models=[ALPHA, BETA])
    )
    assert {s.state for s in advisory.seats if s.model == BETA} == {SeatState.ERROR}
    assert advisory.usage.unpriced_models == [BETA]
