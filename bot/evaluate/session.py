"""One evaluation: every pull request of the benchmark through every arm, resumable.

Each (pull request, arm) is scored as soon as it has run and appended as one line to
`results.jsonl` in the output directory; a rerun reads the file and runs only the pairs it
lacks (a `samples@` arm reads its budget from its protocol's recorded line).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bot.evaluate.dataset import Sample, git_dir_of, has_commit
from bot.evaluate.run import (
    ONE_SEAT,
    SAMPLES,
    ArmResult,
    prepare,
    run_one_seat,
    run_protocol,
    run_samples,
)
from bot.evaluate.score import Judge, JudgeSpend, score
from bot.providers import ProviderRegistry
from bot.review.assemble import PreparedReview
from bot.review.setup import RepoSetup
from bot.settings import Settings

RESULTS = "results.jsonl"


@dataclass(frozen=True)
class Plan:
    protocols: Sequence[str]
    models: Sequence[str]
    judge_model: str
    samples_k: int = 2
    max_samples: int = 32
    budget_tokens: int | None = None

    @property
    def model(self) -> str:
        """The baselines' model: the first of the models."""
        return self.models[0]

    def arms(self) -> list[str]:
        return [*self.protocols, ONE_SEAT, *(f"{SAMPLES}{p}" for p in self.protocols)]


@dataclass
class Journal:
    """results.jsonl: the lines written so far, by (PR URL, arm)."""

    path: Path
    done: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def open(cls, out: Path) -> Journal:
        out.mkdir(parents=True, exist_ok=True)
        journal = cls(out / RESULTS)
        if journal.path.is_file():
            for line in journal.path.read_text().splitlines():
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by an interrupted run: that pair runs again
                journal.done[(record["pr"], record["arm"])] = record
        return journal

    def add(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as file:
            file.write(json.dumps(record) + "\n")
        self.done[(record["pr"], record["arm"])] = record


def record_of(
    sample: Sample, result: ArmResult, model: str, judge: JudgeSpend, scored: Any
) -> dict[str, Any]:
    return {
        "pr": sample.url,
        "repo": sample.repo,
        "arm": result.arm,
        "model": model,
        "tokens": result.tokens,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cost_usd": round(result.cost_usd, 6),
        "wall_s": round(result.wall_s, 3),
        "calls": result.calls,
        "samples": result.samples,
        "budget_tokens": result.budget_tokens,
        "error": result.error,
        "findings": [asdict(f) for f in result.findings],
        "counts": scored.counts(),
        "figures": scored.figures(),
        "matches": scored.matches,
        "judge": asdict(judge),
    }


Advance = Callable[[str], None]


async def evaluate(
    samples: Sequence[Sample],
    plan: Plan,
    *,
    repos: Path,
    journal: Journal,
    setup: RepoSetup,
    settings: Settings,
    registry: ProviderRegistry,
    advance: Advance,
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Every arm on every pull request whose clone has its commits; the records in the
    benchmark's order, and the pull requests skipped with why."""
    judge = Judge(registry.get(plan.judge_model), plan.judge_model)
    skipped: list[dict[str, str]] = []
    arms = plan.arms()
    for sample in samples:
        git_dir, why = _clone_of(sample, repos)
        if git_dir is None:
            skipped.append({"pr": sample.url, "why": why})
            for arm in arms:
                advance(arm)
            continue
        prepared: PreparedReview | None = None
        for arm in arms:
            if (sample.url, arm) in journal.done:
                advance(arm)
                continue
            if prepared is None:
                prepared = await prepare(
                    sample,
                    git_dir,
                    setup,
                    settings,
                    protocol=plan.protocols[0],
                    models=plan.models,
                    budget_tokens=plan.budget_tokens,
                )
            result = await _run_arm(arm, prepared, plan, settings, registry, journal, sample)
            spend = JudgeSpend()
            judged = await judge.all_pairs(sample.comments, result.findings, spend)
            scored = score(sample.comments, result.findings, judged)
            model = (
                plan.model
                if arm == ONE_SEAT or arm.startswith(SAMPLES)
                else ",".join(prepared.models)
            )
            journal.add(record_of(sample, result, model, spend, scored))
            advance(arm)
    order = {arm: i for i, arm in enumerate(arms)}
    records = [
        journal.done[(s.url, arm)]
        for s in samples
        for arm in sorted(arms, key=order.__getitem__)
        if (s.url, arm) in journal.done
    ]
    return records, skipped


def _clone_of(sample: Sample, repos: Path) -> tuple[Path | None, str]:
    """The clone under `repos` that holds the sample's base and head, or None and why not."""
    git_dir = git_dir_of(repos, sample.repo)
    if git_dir is None:
        return None, f"no clone of {sample.repo} under {repos}"
    if not (has_commit(git_dir, sample.base) and has_commit(git_dir, sample.head)):
        return None, f"the clone lacks {sample.base} or {sample.head}"
    return git_dir, ""


async def _run_arm(
    arm: str,
    prepared: PreparedReview,
    plan: Plan,
    settings: Settings,
    registry: ProviderRegistry,
    journal: Journal,
    sample: Sample,
) -> ArmResult:
    if arm == ONE_SEAT:
        return await run_one_seat(prepared, plan.model, registry)
    if arm.startswith(SAMPLES):
        protocol = arm.removeprefix(SAMPLES)
        budget = int(journal.done[(sample.url, protocol)]["tokens"])
        return await run_samples(
            prepared,
            plan.model,
            registry,
            protocol=protocol,
            budget_tokens=budget,
            k=plan.samples_k,
            max_samples=plan.max_samples,
        )
    return await run_protocol(prepared, arm, settings, registry)
