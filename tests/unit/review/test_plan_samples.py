"""The dry run says what actually varies between a single-model council's samples: their
reviewing strategies always, temperatures only where the model takes one (gpt-5.4 takes
none; claude-sonnet-4-5 does)."""

from __future__ import annotations

import re
from pathlib import Path

from rich.console import Console

from bot.cli.dryrun import dry_run_json, print_dry_run
from bot.council.seats import SAMPLE_STRATEGIES
from bot.review.assemble import ReviewOptions, prepare_review
from bot.review.local import read_diff_file
from bot.review.plan import ReviewPlan, estimate_cost, plan_review
from bot.review.setup import local_setup
from bot.review.sources import LocalSource
from bot.settings import Settings
from tests.support.diffs import AUTH_DIFF

NO_TEMPERATURE = "openai:gpt-5.4"
TEMPERATURE = "anthropic:claude-sonnet-4-5"


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
    (tmp_path / "council.yml").write_text("protocol: council\n")
    setup = local_setup(settings, config_file=tmp_path / "council.yml")
    source = LocalSource(read_diff_file(str(tmp_path / "change.diff")))
    prepared = await prepare_review(
        source, setup, settings, ReviewOptions(protocol="council"), available=models
    )
    return await plan_review(prepared, settings)


def printed(found: ReviewPlan) -> str:
    console = Console(width=200, color_system=None, highlight=False, emoji=False)
    with console.capture() as captured:
        print_dry_run(found, console, show_prompts=True)
    return captured.get()


async def test_the_dry_run_of_a_model_without_temperature_names_only_strategies(
    tmp_path: Path,
) -> None:
    found = await plan(tmp_path, [NO_TEMPERATURE])
    assert (
        f"Single-model council: 3 samples of {NO_TEMPERATURE}, each with a distinct reviewing "
        "strategy (the model takes no temperature)."
    ) in found.notes
    assert [s.temperature for s in found.seats] == [None, None, None]
    assert [s.strategy for s in found.seats] == [s.name for s in SAMPLE_STRATEGIES]
    text = printed(found)
    assert "varies by" in text
    assert all(f"strategy: {s.name}" in text for s in SAMPLE_STRATEGIES)
    # The one mention of a temperature says there is none.
    mentions = [m.start() for m in re.finditer("temperature", text)]
    assert mentions and all(text[i - len("takes no ") : i] == "takes no " for i in mentions), text
    seats = dry_run_json(found)["seats"]
    assert [s["temperature"] for s in seats] == [None, None, None]
    assert {s["strategy"] for s in seats} == {s.name for s in SAMPLE_STRATEGIES}
    # The prompt preview shows the first sample's strategy.
    assert SAMPLE_STRATEGIES[0].text in dry_run_json(found)["prompts"]["seat"]


async def test_the_dry_run_of_a_model_with_temperature_names_both(tmp_path: Path) -> None:
    found = await plan(tmp_path, [TEMPERATURE])
    assert (
        f"Single-model council: 3 samples of {TEMPERATURE} at temperatures 0.3/0.7/1.0 and with "
        "distinct reviewing strategies."
    ) in found.notes
    assert [s.temperature for s in found.seats] == [0.3, 0.7, 1.0]
    text = printed(found)
    assert "strategy: data and control flow; temperature 0.3" in text


async def test_the_dry_run_without_a_model_does_not_guess_the_temperature(
    tmp_path: Path,
) -> None:
    found = await plan(tmp_path, [])
    assert not any("(none)" in n for n in found.notes)
    assert any(
        "each with a distinct reviewing strategy (and at distinct temperatures only if that "
        "model accepts one)" in n
        for n in found.notes
    )


async def test_the_plan_counts_the_chairs_merge_of_the_findings_at_most_once(
    tmp_path: Path,
) -> None:
    found = await plan(tmp_path, [TEMPERATURE])
    phases = [c.phase for c in found.calls]
    # 3 assessments, 3 rankings, then the chair: the merge (at most one call) and synthesis.
    assert phases == ["assess"] * 3 + ["rank"] * 3 + ["merge", "synthesize"]
    merge = found.calls[phases.index("merge")]
    assert (merge.seat, merge.model) == ("chair", TEMPERATURE)
    assert dry_run_json(found)["estimate"]["calls"] == 8
    # Its cost is in the estimate like any call's.
    settings = Settings.model_validate(
        {"models": [TEMPERATURE], "anthropic_api_key": None, "openai_api_key": None}
    )
    tokens = found.prepared.context_tokens
    without = [c for c in found.calls if c.phase != "merge"]
    assert estimate_cost(settings, found.calls, tokens) > estimate_cost(settings, without, tokens)
    assert "merge" in printed(found)
