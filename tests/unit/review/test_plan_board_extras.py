"""The dry run of issue 12, part 4: it says why this board sits, what `--seat +x --seat -y`
changed for this run, and plans the voting chair's calls (`chair_votes`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from bot.cli.dryrun import dry_run_json, print_dry_run
from bot.review.assemble import ReviewOptions, prepare_review
from bot.review.local import read_diff_file
from bot.review.plan import ReviewPlan, plan_review
from bot.review.setup import local_setup
from bot.review.sources import LocalSource
from bot.settings import Settings
from tests.support.diffs import AUTH_DIFF

MODELS = ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4"]


async def plan(
    tmp_path: Path,
    config: str = "",
    *,
    board_add: Sequence[str] = (),
    board_remove: Sequence[str] = (),
) -> ReviewPlan:
    settings = Settings.model_validate(
        {
            "models": MODELS,
            "anthropic_api_key": None,
            "openai_api_key": None,
            "database_url": f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",
        }
    )
    (tmp_path / "change.diff").write_text(AUTH_DIFF)
    (tmp_path / "council.yml").write_text(config or "protocol: board\n")
    setup = local_setup(settings, config_file=tmp_path / "council.yml")
    source = LocalSource(read_diff_file(str(tmp_path / "change.diff")))
    prepared = await prepare_review(
        source,
        setup,
        settings,
        ReviewOptions(board_add=board_add, board_remove=board_remove),
        available=MODELS,
    )
    return await plan_review(prepared, settings)


def printed(found: ReviewPlan) -> str:
    console = Console(width=240, color_system=None, highlight=False, emoji=False)
    with console.capture() as captured:
        print_dry_run(found, console, show_prompts=False)
    return captured.get()


async def test_the_dry_run_says_why_this_board(tmp_path: Path) -> None:
    found = await plan(tmp_path)
    why = next(n for n in found.notes if n.startswith("Why this board: "))
    for seat in found.seats:
        assert seat.persona_id in why
    assert "signals seated" in why and "owns correctness" in why
    assert "Why this board: " in " ".join(printed(found).split())


async def test_the_dry_run_shows_this_runs_board_adjustments(tmp_path: Path) -> None:
    plain = await plan(tmp_path)
    gone = plain.seats[0].persona_id
    found = await plan(tmp_path, board_add=["docs-reviewer"], board_remove=[gone])
    ids = [s.persona_id for s in found.seats]
    assert "docs-reviewer" in ids and gone not in ids
    adjusted = next(n for n in found.notes if n.startswith("Adjusted for this run: "))
    assert "+docs-reviewer" in adjusted and f"-{gone}" in adjusted
    assert adjusted in dry_run_json(found)["notes"]


async def test_the_dry_run_plans_the_voting_chairs_calls(tmp_path: Path) -> None:
    plain = await plan(tmp_path)
    found = await plan(tmp_path, "protocol: board\nchair_votes: true\n")
    assert len(found.seats) == len(plain.seats) + 1
    assert "Chair (voting member)" in [s.name for s in found.seats]
    # One assessment, one discussion reply and one vote more, by the chair's model.
    assert len(found.calls) == len(plain.calls) + 3
    chair = [c for c in found.calls if c.seat == "chair"]
    assert [c.phase for c in chair] == ["assess", "discuss 1", "vote", "merge", "synthesize"]
    assert found.estimate_cost_usd is not None and plain.estimate_cost_usd is not None
    assert found.estimate_cost_usd > plain.estimate_cost_usd
