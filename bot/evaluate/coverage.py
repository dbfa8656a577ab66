"""The model-free figure: are the lines reviewers commented on inside the packed context?

For each located golden comment (a path and a new-side line range), at a context budget:
covered (every line of the range is in the context: the diff, the widened code around it,
or a file sent whole, at its head-side number), touched (at least one line is), present
(some part of the file is sent) or absent. The context is built as a review builds it
(`bot.context.build_context` over the repository at the head); no model is called.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bot.context import BuiltContext, PullRequestMeta, build_context
from bot.context.shown import shown_lines
from bot.council.prompts import ContextSection, render_context
from bot.evaluate.dataset import Golden, Sample, Tree, three_dot_diff
from bot.tokens import TokenEstimator

Outcome = Literal["covered", "touched", "present", "absent"]


async def build_for(
    sample: Sample, diff: str, tree: Tree, budget: int, estimator: TokenEstimator | None = None
) -> tuple[BuiltContext, str]:
    """The packed context of the PR at `budget` (its URL as the title: benchmarks carry no
    description), and its rendered text."""
    built = await build_context(
        PullRequestMeta(title=sample.title or sample.url),
        diff,
        tree.files,
        tree.read,
        budget_tokens=budget,
        estimator=estimator or TokenEstimator(),
    )
    rendered = render_context(
        built.title,
        [ContextSection(kind=s.kind, path=s.path, why=s.why, text=s.text) for s in built.sections],
        [f"{o.path}: {o.reason}" for o in built.omitted],
    )
    return built, rendered


async def file_lengths(tree: Tree, goldens: Sequence[Golden]) -> dict[str, int]:
    lengths: dict[str, int] = {}
    for golden in goldens:
        if golden.path is not None and golden.path not in lengths:
            data = await tree.read(golden.path)
            lengths[golden.path] = data.count(b"\n") + 1 if data is not None else 0
    return lengths


def outcomes(
    built: BuiltContext, goldens: Sequence[Golden], lengths: dict[str, int]
) -> list[tuple[Golden, Outcome]]:
    """Each located golden comment's outcome in the built context (a range past the end of
    the file is cut at its last line)."""
    shown = shown_lines(built.sections)
    found: list[tuple[Golden, Outcome]] = []
    for golden in goldens:
        if golden.path is None or golden.first is None:
            continue
        lines = shown.get(golden.path)
        end = golden.last if golden.last is not None else golden.first
        last = min(end, max(lengths.get(golden.path, 0), golden.first))
        wanted = set(range(golden.first, last + 1))
        outcome: Outcome
        if lines is None:
            outcome = "absent"
        elif wanted <= lines:
            outcome = "covered"
        elif wanted & lines:
            outcome = "touched"
        else:
            outcome = "present"
        found.append((golden, outcome))
    return found


@dataclass
class Coverage:
    """One PR's figure at one budget."""

    comments: int = 0
    covered: int = 0
    touched: int = 0
    present: int = 0

    def add(self, found: Sequence[tuple[Golden, Outcome]]) -> None:
        for _, outcome in found:
            self.comments += 1
            self.covered += outcome == "covered"
            self.touched += outcome in ("covered", "touched")
            self.present += outcome != "absent"

    def row(self) -> dict[str, float | int | None]:
        n = self.comments

        def share(x: int) -> float | None:
            return round(x / n, 4) if n else None

        return {
            "comments": n,
            "covered": share(self.covered),
            "touched": share(self.touched),
            "file_present": share(self.present),
        }


async def measure(sample: Sample, git_dir: Path, budget: int) -> Coverage:
    """The PR's golden lines against its context packed at `budget`."""
    diff = three_dot_diff(git_dir, sample.base, sample.head)
    with Tree(git_dir, sample.head) as tree:
        lengths = await file_lengths(tree, sample.comments)
        built, _ = await build_for(sample, diff, tree, budget)
        tally = Coverage()
        tally.add(outcomes(built, sample.comments, lengths))
        return tally
