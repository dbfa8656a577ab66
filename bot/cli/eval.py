"""`council eval DATASET`: the council measured on a code-review benchmark.

The arms (the chosen protocols, one seat of the same model, and N samples of it at each
protocol's token budget) run on every pull request of the benchmark, in its local clone;
a judge model matches their findings to the golden comments. `--coverage` gives the
model-free figure instead: the golden lines inside the packed context. See `bot.evaluate`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console

from bot.cli.usage import fail as _fail
from bot.council.protocols.roles import DEFAULT

if TYPE_CHECKING:
    from bot.evaluate.dataset import Sample
    from bot.evaluate.session import Journal, Plan
    from bot.providers import ProviderRegistry
    from bot.review.setup import RepoSetup
    from bot.settings import Settings

DatasetFormat = Literal["auto", "aacr", "martian"]


def evaluate(
    dataset: Annotated[
        Path, typer.Argument(help="The benchmark file: AACR-Bench's or Martian's JSON.")
    ],
    repos: Annotated[
        Path,
        typer.Option(
            "--repos",
            help="Where the clones are: DIR/owner+name/repo (as mirrors are laid out), "
            "DIR/owner+name, DIR/owner/name.",
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", help="The results directory (a rerun resumes it).")
    ] = Path("council-eval"),
    protocol: Annotated[
        str, typer.Option("--protocol", help="Comma-separated protocols to evaluate.")
    ] = DEFAULT,
    models: Annotated[
        str | None,
        typer.Option(
            "--models",
            help="Comma-separated model references (default: the configured or available "
            "ones); the baselines use the first.",
        ),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option("--judge-model", help="The judge's model (default: the first model)."),
    ] = None,
    samples_k: Annotated[
        int,
        typer.Option("--samples-k", min=1, help="N samples: keep a finding raised by >= k."),
    ] = 2,
    max_samples: Annotated[
        int, typer.Option("--max-samples", min=1, help="N samples: at most this many.")
    ] = 32,
    budget_tokens: Annotated[
        int | None,
        typer.Option("--budget-tokens", help="The context budget (default: context.max_tokens)."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="A council config for every PR (default: the defaults)."),
    ] = None,
    kind: Annotated[
        DatasetFormat, typer.Option("--format", help="The dataset's format (auto: by fields).")
    ] = "auto",
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N pull requests.")
    ] = None,
    only: Annotated[
        str | None, typer.Option("--only", help="Comma-separated owner/name to evaluate.")
    ] = None,
    coverage: Annotated[
        bool,
        typer.Option("--coverage", help="Model-free: golden lines inside the packed context."),
    ] = False,
    plot: Annotated[bool, typer.Option("--plot/--no-plot", help="Write f1_cost.png.")] = True,
) -> None:
    """Run protocols and baselines over a benchmark and score them against its comments."""
    err = Console(stderr=True)
    from bot.evaluate.dataset import DatasetError, load
    from bot.settings import Settings

    try:
        samples = load(dataset, None if kind == "auto" else kind)
    except DatasetError as error:
        _fail(err, str(error))
    wanted = {r.strip() for r in (only or "").split(",") if r.strip()}
    samples = [s for s in samples if not wanted or s.repo in wanted][:limit]
    if not samples:
        _fail(err, f"no pull request to evaluate in {dataset}")
    try:
        settings = Settings()
    except ValueError as error:
        _fail(err, f"invalid settings: {error}")
    setup = _setup(settings, config, out, err)
    budget = budget_tokens if budget_tokens is not None else setup.config.context_max_tokens
    if coverage:
        document = asyncio.run(_coverage(samples, repos, budget, dataset))
        raise typer.Exit(_write_coverage(document, out, budget, err))
    from bot.evaluate.session import Plan

    protocols = [p.strip() for p in protocol.split(",") if p.strip()]
    _check_protocols(err, protocols)
    chosen = [m.strip() for m in (models or "").split(",") if m.strip()]
    code = asyncio.run(
        _evaluate(
            samples,
            settings,
            setup,
            chosen,
            lambda ms: Plan(
                protocols=protocols,
                models=ms,
                judge_model=judge_model or ms[0],
                samples_k=samples_k,
                max_samples=max_samples,
                budget_tokens=budget_tokens,
            ),
            judge_model,
            repos=repos,
            out=out,
            dataset=dataset,
            plot=plot,
            err=err,
        )
    )
    raise typer.Exit(code)


def _setup(settings: Settings, config: Path | None, out: Path, err: Console) -> RepoSetup:
    from bot.review.setup import SetupError, local_setup

    try:
        # Without --config: the defaults (the results directory holds no .github/).
        return local_setup(settings, root=out, config_file=config)
    except SetupError as error:
        _fail(err, str(error))


def _check_protocols(err: Console, protocols: list[str]) -> None:
    from bot.council.protocols import protocol as protocol_spec

    if not protocols:
        _fail(err, "--protocol names no protocol")
    for name in protocols:
        try:
            protocol_spec(name)
        except ValueError as error:
            _fail(err, str(error))


async def _evaluate(
    samples: list[Sample],
    settings: Settings,
    setup: RepoSetup,
    models: list[str],
    make_plan: Callable[[list[str]], Plan],
    judge: str | None,
    *,
    repos: Path,
    out: Path,
    dataset: Path,
    plot: bool,
    err: Console,
) -> int:
    from bot.evaluate.session import Journal
    from bot.providers import ProviderRegistry

    registry = ProviderRegistry(settings)
    try:
        try:
            for ref in [*models, *([judge] if judge else [])]:
                registry.resolve(ref)
        except ValueError as error:
            _fail(err, str(error))
        chosen = models or list(setup.config.models) or await registry.available_models()
        if not chosen:
            _fail(err, "no model to evaluate: pass --models or set a provider key")
        plan = make_plan(chosen)
        journal = Journal.open(out)
        started = time.monotonic()
        records, skipped = await _run_arms(
            samples, plan, registry, journal, repos=repos, setup=setup, settings=settings, err=err
        )
    finally:
        await registry.aclose()
    meta = {
        "dataset": str(dataset),
        "protocols": list(plan.protocols),
        "models": list(plan.models),
        "baseline_model": plan.model,
        "judge_model": plan.judge_model,
        "samples_k": plan.samples_k,
        "skipped": skipped,
        "wall_s": round(time.monotonic() - started, 3),
    }
    _summarize(out, records, meta, plot=plot, err=err)
    return 0


async def _run_arms(
    samples: list[Sample],
    plan: Plan,
    registry: ProviderRegistry,
    journal: Journal,
    *,
    repos: Path,
    setup: RepoSetup,
    settings: Settings,
    err: Console,
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Every arm on every sample, with a progress bar on `err`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from bot.evaluate.session import evaluate

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task("evaluating", total=len(samples) * len(plan.arms()))

        def advance(arm: str) -> None:
            progress.update(task, advance=1, description=f"evaluating ({arm})")

        return await evaluate(
            samples,
            plan,
            repos=repos,
            journal=journal,
            setup=setup,
            settings=settings,
            registry=registry,
            advance=advance,
        )


def _summarize(
    out: Path, records: list[dict[str, Any]], meta: dict[str, Any], *, plot: bool, err: Console
) -> None:
    """results.json (and the plot) written to `out`, each arm's figures told on `err`."""
    from bot.evaluate import report

    document = report.write(out, records, meta=meta, plot=plot)
    for arm, s in document["arms"].items():
        err.print(
            f"{arm}: {s['prs']} PRs, precision {s['precision']:.1%}, recall {s['recall']:.1%}, "
            f"F1 {s['f1']:.1%}, ${s['cost_usd_per_pr']:.4f} and {s['wall_s_per_pr']:.1f} s per PR",
            highlight=False,
            markup=False,
        )
    if skipped := meta["skipped"]:
        err.print(f"skipped {len(skipped)} pull requests (see results.json)", highlight=False)
    err.print(f"results in {out}", highlight=False, markup=False)


async def _coverage(
    samples: list[Sample], repos: Path, budget: int, dataset: Path
) -> dict[str, Any]:
    """Each PR's golden lines against its context packed at `budget`; no model is called."""
    from bot.evaluate.coverage import Coverage, measure
    from bot.evaluate.dataset import git_dir_of, has_commit

    total = Coverage()
    rows: list[dict[str, object]] = []
    skipped: list[str] = []
    unlocated = 0
    for sample in samples:
        git_dir = git_dir_of(repos, sample.repo)
        if git_dir is None or not (
            has_commit(git_dir, sample.base) and has_commit(git_dir, sample.head)
        ):
            skipped.append(sample.url)
            continue
        unlocated += sum(1 for g in sample.comments if not g.located)
        one = await measure(sample, git_dir, budget)
        total.comments += one.comments
        total.covered += one.covered
        total.touched += one.touched
        total.present += one.present
        rows.append({"pr": sample.url, **one.row()})
    return {
        "dataset": str(dataset),
        "budget_tokens": budget,
        "overall": total.row(),
        "unlocated_comments": unlocated,
        "prs": rows,
        "skipped": skipped,
    }


def _write_coverage(document: dict[str, Any], out: Path, budget: int, err: Console) -> int:
    out.mkdir(parents=True, exist_ok=True)
    (out / "coverage.json").write_text(json.dumps(document, indent=2) + "\n")
    row = document["overall"]
    if row["comments"]:
        err.print(
            f"coverage at {budget:,} tokens: {row['comments']} located golden comments in "
            f"{len(document['prs'])} PRs; covered {row['covered']:.1%}, "
            f"touched {row['touched']:.1%}, file present {row['file_present']:.1%}",
            highlight=False,
        )
    else:
        err.print("no located golden comment to measure (Martian's have no lines)")
    sys.stdout.write(json.dumps(document["overall"]) + "\n")
    return 0
