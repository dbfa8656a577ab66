"""The arms of an evaluation, on one pull request of a benchmark.

Every arm reads the same context: the pull request's three-dot diff in its local clone,
packed over the repository at the head exactly as `council review --base <base>` packs it
(`bot.review.assemble.prepare_review`, the repository's defaults or `--config`).

- a protocol (`board`, `quick`, ...): the engine, as a review runs it, with the chosen models;
- `one-seat`: one assessment call of the same model (the first of `--models`): a neutral
  council member's brief and the assessment task, the same system prompt and context;
- `samples@<protocol>`: independent one-seat samples of that model, drawn until the next
  one would take the total past the protocol's own tokens on this pull request (input,
  cache reads and writes, and output), at least one; their findings are clustered with the
  chair's merge (`bot.council.findings.merge_findings`) and a cluster is kept when at least
  k samples raised it (k capped at the number of samples).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.context import PullRequestMeta, build_context
from bot.council import prompts
from bot.council.budget import InMemoryBudget
from bot.council.engine import Engine
from bot.council.findings import merge_findings
from bot.council.ledger import InMemoryLedger
from bot.council.protocols.roles import SINGLE_SEAT
from bot.council.schemas import Assessment, Finding
from bot.council.seats import neutral_seat
from bot.evaluate.dataset import Sample, git, resolve, three_dot_diff
from bot.providers import ModelCall, ProviderError, ProviderRegistry
from bot.review.anchors import anchor_advisory
from bot.review.assemble import PreparedReview, ReviewOptions, prepare_review
from bot.review.localrepo import LocalRepo
from bot.review.setup import RepoSetup
from bot.review.sources import Gathered
from bot.settings import Settings

ONE_SEAT = "one-seat"
SAMPLES = "samples@"
MAX_TOKENS = 8192


@dataclass
class Predicted:
    """A finding as scored: where, and what it says."""

    path: str
    start_line: int | None
    end_line: int | None
    title: str
    detail: str

    @property
    def text(self) -> str:
        return f"{self.title}\n{self.detail}".strip()

    @classmethod
    def of(cls, f: Any) -> Predicted:
        return cls(f.path, f.start_line, f.end_line or f.start_line, f.title, f.detail)


@dataclass
class ArmResult:
    """What one arm did on one pull request (before scoring)."""

    arm: str
    findings: list[Predicted] = field(default_factory=list)
    input_tokens: int = 0  # uncached input, cache writes and cache reads
    output_tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    calls: int = 0
    samples: int | None = None  # samples@: how many were drawn
    budget_tokens: int | None = None  # samples@: the protocol's tokens
    error: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class ClonedSource:
    """A pull request's change in a local clone: its three-dot diff, and the repository's
    files at its head (a `git cat-file --batch` on the clone, as `council review` reads
    the working repository at HEAD)."""

    git_dir: Path
    base: str
    head: str
    diff: str
    title: str
    description: str

    @property
    def compared(self) -> str:
        return f"{self.base[:7]}...{self.head[:7]}"

    @property
    def head_sha(self) -> str | None:
        return self.head

    async def gather(self, budget_tokens: int, ignore_globs: Sequence[str]) -> Gathered:
        meta = PullRequestMeta(title=self.title, body=self.description)
        async with LocalRepo(self.git_dir, self.head) as repo:
            built = await build_context(
                meta,
                self.diff,
                repo.files,
                repo.read,
                budget_tokens=budget_tokens,
                ignore_globs=ignore_globs,
            )
        return Gathered(built)


def cloned_source(sample: Sample, git_dir: Path) -> ClonedSource:
    base, head = resolve(git_dir, sample.base), resolve(git_dir, sample.head)
    diff = three_dot_diff(git_dir, base, head)
    start = git(git_dir, "merge-base", base, head).strip() or base
    log = git(git_dir, "log", "--format=%s%n%n%b", f"{start}..{head}").strip()
    title = sample.title or (log.splitlines()[0] if log else sample.url)
    return ClonedSource(git_dir, base, head, diff, title, log)


async def prepare(
    sample: Sample,
    git_dir: Path,
    setup: RepoSetup,
    settings: Settings,
    *,
    protocol: str,
    models: Sequence[str],
    budget_tokens: int | None,
) -> PreparedReview:
    source = cloned_source(sample, git_dir)
    options = ReviewOptions(protocol=protocol, models=list(models), budget_tokens=budget_tokens)
    return await prepare_review(source, setup, settings, options, available=[])


async def run_protocol(
    prepared: PreparedReview, protocol: str, settings: Settings, registry: ProviderRegistry
) -> ArmResult:
    """The engine on the prepared review with `protocol`, no cost cap, a ledger in memory."""
    prepared = dataclasses.replace(prepared, protocol=protocol)
    engine = Engine(registry, prepared.setup.catalog, InMemoryLedger())
    request = prepared.request(str(uuid.uuid4()), settings, max_cost_usd=None)
    started = time.monotonic()
    advisory = await engine.deliberate(request, budget=InMemoryBudget(None))
    advisory = anchor_advisory(advisory, prepared.built)
    usage = advisory.usage
    return ArmResult(
        arm=protocol,
        findings=[Predicted.of(f) for f in advisory.findings],
        input_tokens=usage.input_tokens + usage.cache_write_tokens + usage.cached_input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        wall_s=time.monotonic() - started,
        calls=usage.calls,
        error=None if advisory.findings or advisory.valid_seats() else advisory.resolution.value,
    )


def one_seat_call(prepared: PreparedReview, model: str, label: str) -> ModelCall[Assessment]:
    """One neutral member's assessment of the prepared context."""
    seat = neutral_seat(1, model).model_copy(update={"label": "Member A"})
    return ModelCall(
        system=prompts.system_blocks(
            SINGLE_SEAT, prepared.context_text, language=prepared.setup.config.language
        ),
        messages=prompts.messages(
            "", prompts.seat_brief(seat), prompts.assess_task(prepared.topic, questions=False)
        ),
        output=prompts.ASSESS_TOOL,
        tools=(prompts.ASSESS_TOOL,),
        max_tokens=MAX_TOKENS,
        label=f"eval/{label}",
    )


async def _one_sample(
    prepared: PreparedReview, model: str, registry: ProviderRegistry, label: str
) -> tuple[list[Finding], ArmResult]:
    result = ArmResult(arm=label, calls=1)
    started = time.monotonic()
    try:
        answer = await registry.get(model).call(one_seat_call(prepared, model, label))
    except ProviderError as error:
        result.error = f"{type(error).__name__}: {error}"
        result.wall_s = time.monotonic() - started
        return [], result
    result.wall_s = time.monotonic() - started
    result.input_tokens = answer.usage.total_input_tokens
    result.output_tokens = answer.usage.output_tokens
    result.cost_usd = answer.cost_usd
    findings = list(answer.output.findings) if answer.output is not None else []
    result.findings = [Predicted.of(f) for f in findings]
    return findings, result


async def run_one_seat(
    prepared: PreparedReview, model: str, registry: ProviderRegistry
) -> ArmResult:
    _, result = await _one_sample(prepared, model, registry, ONE_SEAT)
    return result


async def run_samples(
    prepared: PreparedReview,
    model: str,
    registry: ProviderRegistry,
    *,
    protocol: str,
    budget_tokens: int,
    k: int,
    max_samples: int,
) -> ArmResult:
    """Samples of one seat until the next would pass `budget_tokens` (at least one), their
    findings merged and kept when raised by at least min(k, N) samples."""
    arm = f"{SAMPLES}{protocol}"
    total = ArmResult(arm=arm, budget_tokens=budget_tokens, calls=0)
    per_sample: list[tuple[str, Sequence[Finding]]] = []
    errors: list[str] = []
    while len(per_sample) < max_samples:
        findings, one = await _one_sample(prepared, model, registry, f"{arm}/{len(per_sample)}")
        per_sample.append((f"sample-{len(per_sample) + 1}", findings))
        total.calls += 1
        total.input_tokens += one.input_tokens
        total.output_tokens += one.output_tokens
        total.cost_usd += one.cost_usd
        total.wall_s += one.wall_s
        if one.error:
            errors.append(one.error)
            if not one.tokens:
                break  # a failing model: sampling on would only fail again
        mean = total.tokens / len(per_sample)
        if total.tokens + mean > budget_tokens:
            break
    n = len(per_sample)
    merged = merge_findings(per_sample)
    total.samples = n
    total.findings = [Predicted.of(f) for f in merged if f.consensus >= min(k, n)]
    total.error = errors[0] if errors and len(errors) == n else None
    return total
