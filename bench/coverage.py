"""Golden-location coverage: does the packed context show the lines real reviewers commented on?

AACR-Bench (github.com/alibaba/aacr-bench) lists public pull requests with the comments their
reviewers left, each anchored to a file and a new-side line range. For each such comment
this counts, at several context budgets:

- covered: every line of the range is in the packed context (in the diff, the widened code
  around it, or a file sent whole), at its head-side line number;
- touched: at least one line of the range is;
- file present: some part of the file is sent.

The context is built exactly as a review builds it (`bot.context.build_context`, the
repository's files at the PR's head, its guidance from the same tree), with the PR's URL
as its title (the dataset carries no description). It also reports how much of each budget
the context uses by the project's estimator: over all PRs, and the least over the PRs whose
material did not all fit (where the budget binds, it should be 90-100%), and the most any
context would be counted at by a tokenizer shaped like the real ones (the fake model
server's, `tests.support.model_server.count_tokens`), as a share of the budget: packed by a
fresh estimator (the CLI's first run) and by one calibrated on the usage of the PRs before
it (a worker's).

Nothing fetched is kept in this repository. Get the data first (README, "Measured figures"):

    git clone https://github.com/alibaba/aacr-bench ~/aacr/aacr-bench
    git clone https://github.com/bluewave-labs/Checkmate ~/aacr/bluewave-labs+Checkmate
    ...one clone per repository, named owner+name (a bare clone, or the .git inside, works)

A PR whose commits a clone lacks is skipped and counted (`git fetch origin pull/N/head`
brings a PR's head). The PRs of four repositories were used to tune the packing; the report
gives them and every other PR found separately.

Run: `python bench/coverage.py --aacr ~/aacr/aacr-bench --repos ~/aacr`.
Writes bench/results/coverage.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.evaluate.coverage import build_for, file_lengths, outcomes
from bot.evaluate.dataset import Golden, Sample, Tree, git_dir_of, has_commit, three_dot_diff
from bot.evaluate.dataset import load as load_dataset
from bot.tokens import TokenEstimator, kinds_of
from tests.support.model_server import count_tokens

BUDGETS = (8_000, 16_000, 32_000, 60_000)
# The repositories whose PRs the packing was tuned on (issue 11 names them).
TUNED = frozenset(
    {"bluewave-labs/Checkmate", "gofr-dev/gofr", "browser-use/browser-use", "wavetermdev/waveterm"}
)


@dataclass
class Tally:
    comments: int = 0
    covered: int = 0
    touched: int = 0
    present: int = 0
    prs: int = 0
    use: list[float] = field(default_factory=list)  # estimated tokens / budget, per PR
    # ...for the PRs whose material did not all fit (where the budget binds)
    pressed: list[float] = field(default_factory=list)
    # the fake model server's count (shaped like a byte-pair tokenizer's) / budget, per PR
    counted: list[float] = field(default_factory=list)
    learned: list[float] = field(default_factory=list)  # ...by a calibrated estimator
    by_level: dict[str, list[int]] = field(default_factory=dict)  # level -> [covered, all]

    def row(self) -> dict[str, Any]:
        n = max(self.comments, 1)
        return {
            "prs": self.prs,
            "comments": self.comments,
            "covered": round(self.covered / n, 4),
            "touched": round(self.touched / n, 4),
            "file_present": round(self.present / n, 4),
            "budget_use_min": round(min(self.use), 3) if self.use else None,
            "budget_use_max": round(max(self.use), 3) if self.use else None,
            "counted_max": round(max(self.counted), 3) if self.counted else None,
            "counted_learned_max": round(max(self.learned), 3) if self.learned else None,
            "pressed_prs": len(self.pressed),
            "pressed_use_min": round(min(self.pressed), 3) if self.pressed else None,
            "by_level": {k: f"{c}/{a}" for k, (c, a) in sorted(self.by_level.items())},
        }


def load(dataset: Path) -> list[Sample]:
    return load_dataset(dataset, "aacr")


@dataclass
class Measured:
    outcomes: list[tuple[Golden, str]]  # each comment: covered / touched / present / absent
    use: float  # the rendered context by the (fresh) estimator, / budget
    pressed: bool  # something other than guidance (which has its own cap) did not fit
    counted: float  # the rendered context by the fake's tokenizer, / budget
    counted_learned: float  # ...packed by an estimator calibrated on the PRs before it


async def measure(
    sample: Sample, git_dir: Path, budgets: Iterable[int], learned: TokenEstimator
) -> dict[int, Measured]:
    """Per budget, what a fresh process packs (an uncalibrated estimator, as the CLI runs),
    and what a worker packs whose estimator has seen the usage of earlier contexts
    (`learned`, which then observes this one as a provider would count it)."""
    # Three dots, as GitHub shows a pull request: from where the branch left its base.
    diff = three_dot_diff(git_dir, sample.base, sample.head)
    tree = Tree(git_dir, sample.head)
    try:
        lengths = await file_lengths(tree, sample.comments)
        results = {}
        for budget in budgets:
            estimator = TokenEstimator()  # a fresh process's estimator: no calibration
            built, rendered = await build_for(sample, diff, tree, budget, estimator)
            pressed = any(
                ("did not fit" in o.reason and not o.reason.startswith("guidance"))
                or o.path.endswith(" more")
                for o in built.omitted
            )
            found = outcomes(built, sample.comments, lengths)
            _, again = await build_for(sample, diff, tree, budget, learned)
            learned.observe(kinds_of(again), count_tokens(again))
            results[budget] = Measured(
                list(found),
                estimator.estimate(rendered) / budget,
                pressed,
                count_tokens(rendered) / budget,
                count_tokens(again) / budget,
            )
        return results
    finally:
        tree.close()


def _fold(tally: Tally, measured: Measured) -> None:
    tally.prs += 1
    tally.use.append(measured.use)
    tally.counted.append(measured.counted)
    tally.learned.append(measured.counted_learned)
    if measured.pressed:
        tally.pressed.append(measured.use)
    for golden, outcome in measured.outcomes:
        tally.comments += 1
        tally.covered += outcome == "covered"
        tally.touched += outcome in ("covered", "touched")
        tally.present += outcome != "absent"
        level = tally.by_level.setdefault(golden.level or "?", [0, 0])
        level[0] += outcome == "covered"
        level[1] += 1


def _pressed(row: dict[str, Any]) -> str:
    if not row["pressed_prs"]:
        return "-"
    return f"{row['pressed_prs']} PRs, >= {row['pressed_use_min']:.0%}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aacr", type=Path, required=True, help="a clone of aacr-bench")
    parser.add_argument("--repos", type=Path, required=True, help="the PR repositories' clones")
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--only", default="", help="comma-separated owner/name to measure")
    parser.add_argument("--misses", action="store_true", help="list what was not covered")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    samples = load(args.aacr / "dataset" / "positive_samples.json")
    only = {r for r in args.only.split(",") if r}
    tallies: dict[tuple[str, int], Tally] = {}
    skipped: list[str] = []
    started = time.perf_counter()
    learned = TokenEstimator()  # one worker's estimator, learning as the PRs go by
    for sample in samples:
        if only and sample.repo not in only:
            continue
        git_dir = git_dir_of(args.repos, sample.repo)
        if git_dir is None:
            continue  # not cloned: not part of this run
        if not (has_commit(git_dir, sample.base) and has_commit(git_dir, sample.head)):
            skipped.append(sample.url)
            continue
        group = "tuned" if sample.repo in TUNED else "held out"
        for budget, measured in (await measure(sample, git_dir, budgets, learned)).items():
            _fold(tallies.setdefault((group, budget), Tally()), measured)
            if args.misses:
                for golden, outcome in measured.outcomes:
                    if outcome != "covered":
                        print(
                            f"  {budget:>6} {outcome:<8} {golden.level:<10} {sample.url} "
                            f"{golden.path}:{golden.first}-{golden.last}"
                        )
    report = {
        f"{group} @ {budget}": tally.row() for (group, budget), tally in sorted(tallies.items())
    }
    print(f"{'set':<10} {'budget':>7} {'PRs':>4} {'comments':>8} {'covered':>8} "
          f"{'touched':>8} {'file':>6} {'budget use':>12} {'under pressure':>16} "
          f"{'fake count':>10} {'calibrated':>10}")  # fmt: skip
    for (group, budget), tally in sorted(tallies.items()):
        row = tally.row()
        print(
            f"{group:<10} {budget:>7,} {row['prs']:>4} {row['comments']:>8} "
            f"{row['covered']:>8.1%} {row['touched']:>8.1%} {row['file_present']:>6.1%} "
            f"{row['budget_use_min']:>5.0%}-{row['budget_use_max']:.0%} "
            f"{_pressed(row):>16} {row['counted_max']:>10.0%} "
            f"{row['counted_learned_max']:>10.0%}"
        )
    print(
        f"skipped (commits not in the clone): {len(skipped)}; {time.perf_counter() - started:.1f} s"
    )
    out = Path(__file__).parent / "results" / "coverage.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"results": report, "skipped": skipped}, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
