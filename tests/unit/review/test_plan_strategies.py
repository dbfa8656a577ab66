"""The dry run of `strategies`: the lenses it would seat, every call it plans (the
classification, both critique rounds, the reconciliation) and their cost, with no call."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from bot.cli.dryrun import print_dry_run
from bot.council.protocols import planned_calls
from bot.review.assemble import ReviewOptions, prepare_review
from bot.review.local import read_diff_file
from bot.review.plan import ReviewPlan, plan_review
from bot.review.setup import local_setup
from bot.review.sources import LocalSource
from bot.settings import Settings
from tests.support.diffs import AUTH_DIFF

COLD = "openai:gpt-5.4"


async def plan(tmp_path: Path, models: list[str]) -> ReviewPlan:
    settings = Settings.model_validate(
        {
            "models": models,
            "anthropic_api_key": None,
            "openai_api_key": None,
            "database_url": f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",
        }
    )
    (tmp_path / "change.diff").write_text(AUTH_DIFF)
    (tmp_path / "council.yml").write_text("protocol: strategies\n")
    setup = local_setup(settings, config_file=tmp_path / "council.yml")
    source = LocalSource(read_diff_file(str(tmp_path / "change.diff")))
    prepared = await prepare_review(
        source, setup, settings, ReviewOptions(protocol="strategies"), available=models
    )
    return await plan_review(prepared, settings)


async def test_the_dry_run_plans_every_strategies_call(tmp_path: Path) -> None:
    found = await plan(tmp_path, [COLD])
    assert [s.name for s in found.seats] == [
        "Threat model strategy",
        "Least privilege strategy",
        "Defense in depth strategy",
    ]
    assert all(s.temperature is None for s in found.seats)
    phases = [c.phase for c in found.calls]
    assert phases == [c.phase for c in planned_calls("strategies", seats=3, rounds=1)]
    assert {"classify", "critique 1", "critique 2", "reconcile"} <= set(phases)
    assert found.estimate_cost_usd is not None and found.estimate_cost_usd > 0
    assert "Strategies: temperatures not accepted by openai:gpt-5.4: the styles alone vary." in (
        found.notes
    )
    console = Console(width=200, color_system=None, highlight=False, emoji=False)
    with console.capture() as captured:
        print_dry_run(found, console, show_prompts=False)
    text = captured.get()
    assert "critique 2" in text and "reconcile" in text
    assert "Single-model council" not in text


async def test_the_dry_run_without_a_model_does_not_call_the_lenses_samples(
    tmp_path: Path,
) -> None:
    found = await plan(tmp_path, [])
    assert len(found.seats) == 3
    assert not any("Single-model council" in n for n in found.notes)
    assert len(found.calls) == len(planned_calls("strategies", seats=3, rounds=1))
