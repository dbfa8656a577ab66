"""`council review`: the council on a local change, a diff file, stdin, or a pull request.

The review is put together by `bot.review`, exactly as the App's worker puts it together;
this module only reads the options, prints, and chooses the exit code.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import uuid
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from typer.core import TyperCommand, TyperOption

from bot.cli.exits import EXIT_INTERRUPTED, EXIT_NO_QUORUM
from bot.cli.usage import fail as _fail
from bot.cli.usage import settings_or_fail as _settings
from bot.council.protocols import DEBATE_MODES, names

if TYPE_CHECKING:
    from bot.council.advisory import Advisory
    from bot.council.engine import ProgressEvent
    from bot.review.assemble import PreparedReview, ReviewOptions
    from bot.review.setup import RepoSetup
    from bot.review.sources import Source
    from bot.settings import Settings


def protocol_help() -> str:
    """`--protocol`'s help: the protocols of the table."""
    listed = names()
    return f"{', '.join(listed[:-1])} or {listed[-1]} (default: the repository's `protocol`)."


class ReviewCommand(TyperCommand):
    """`council review`, whose `--protocol` help names the protocols registered when the
    help is shown (a protocol registered after this module was loaded too)."""

    def format_help(self, *args: Any, **kwargs: Any) -> None:
        for param in self.params:
            if isinstance(param, TyperOption) and param.name == "protocol":
                param.help = protocol_help()
        super().format_help(*args, **kwargs)


NO_PROVIDER = (
    "No model provider is available, so this is a dry run. To convene the council set "
    "ANTHROPIC_API_KEY and/or OPENAI_API_KEY, or COUNCIL_MODELS with model references "
    "(anthropic:<model>, openai:<model>, <endpoint>:<model> with COUNCIL_ENDPOINTS, or "
    "openai-compatible:<model>@<base_url>), or start Ollama on 127.0.0.1:11434."
)

Format = Literal["markdown", "json", "text"]


def review(
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="Review HEAD against this ref (default: the upstream when it differs from "
            "HEAD, else origin/HEAD, main or master).",
        ),
    ] = None,
    diff: Annotated[
        str | None, typer.Option("--diff", help="Review a diff file; - for stdin.")
    ] = None,
    pr: Annotated[
        str | None,
        typer.Option(
            "--pr",
            help="Review a pull request, OWNER/REPO#N (needs GITHUB_TOKEN); nothing is posted.",
        ),
    ] = None,
    protocol: Annotated[
        str | None,
        typer.Option(
            "--protocol",
            help=protocol_help(),
        ),
    ] = None,
    question: Annotated[
        str | None, typer.Option("--question", help="The question to put to the council.")
    ] = None,
    models: Annotated[
        str | None, typer.Option("--models", help="Comma-separated model references.")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="The council config to use (default: .github/council.yml in the working "
            "tree; with --pr, the repository's default branch).",
        ),
    ] = None,
    size: Annotated[
        int | None, typer.Option("--size", help="Board seats (default: board.default_size).")
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option("--rounds", help="Discussion rounds, 0-3 (default: board.discussion_rounds)."),
    ] = None,
    budget_tokens: Annotated[
        int | None,
        typer.Option(
            "--budget-tokens", help="The context budget in tokens (default: context.max_tokens)."
        ),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="debate: "
            + "; ".join(f"{name} ({rule.summary})" for name, rule in DEBATE_MODES.items())
            + "; default: the repository's debate.mode.",
        ),
    ] = None,
    seat: Annotated[
        list[str] | None,
        typer.Option(
            "--seat",
            help="board: +persona seats it, -persona keeps it off, for this run "
            "(repeatable: --seat +appsec-reviewer --seat -docs-reviewer).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show seats, context and cost; call no model.")
    ] = False,
    show_prompts: Annotated[
        bool, typer.Option("--show-prompts", help="With --dry-run: print the prompts too.")
    ] = False,
    output: Annotated[
        Format | None,
        typer.Option(
            "--format",
            help="markdown, json or text (default: text on a terminal, else markdown).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
) -> None:
    """Convene the council on a change and print its advisory."""
    err = Console(stderr=True)
    settings = _settings(err)
    from bot.logs import configure_logging

    configure_logging(settings.log_level, json_lines=settings.log_json)
    if sum(x is not None for x in (base, diff, pr)) > 1:
        _fail(err, "use one of --base, --diff and --pr")
    if pr is not None and config is not None:
        _fail(err, "--config reads a local file; with --pr the default branch's config is used")
    chosen: Format = (
        "json" if as_json else output or ("text" if _stdout_is_terminal() else "markdown")
    )
    request = _Request(
        base=base,
        diff=diff,
        pr=pr,
        config=config,
        dry_run=dry_run,
        show_prompts=show_prompts,
        output=chosen,
    )
    from bot.review.assemble import ReviewOptions

    options = ReviewOptions(
        protocol=protocol,
        question=question,
        models=[m.strip() for m in (models or "").split(",") if m.strip()],
        size=size,
        rounds=rounds,
        budget_tokens=budget_tokens,
        debate_mode=_mode(err, mode),
        board_add=_seats(err, seat or [], "+"),
        board_remove=_seats(err, seat or [], "-"),
    )
    try:
        code = asyncio.run(_stoppable(_review(settings, request, options, err)))
    except (KeyboardInterrupt, asyncio.CancelledError):
        err.print("council: stopped; the review did not finish (its record: cancelled)")
        code = EXIT_INTERRUPTED
    raise typer.Exit(code)


async def _stoppable(review: Coroutine[Any, Any, int]) -> int:
    """`review`, cancelled by SIGTERM as Ctrl-C cancels it (asyncio's own handling): a
    killed review unwinds, so its record ends `cancelled` rather than `running`."""
    import signal

    task = asyncio.ensure_future(review)
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await task
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


@dataclass(frozen=True, kw_only=True)
class _Request:
    """What the person asked for, besides the review options."""

    base: str | None
    diff: str | None
    pr: str | None
    config: Path | None
    dry_run: bool
    show_prompts: bool
    output: Format


async def _review(
    settings: Settings, request: _Request, options: ReviewOptions, err: Console
) -> int:
    from bot.council.convene import ConveneError
    from bot.providers import ConfigurationError
    from bot.review.assemble import ReviewError
    from bot.review.local import DiffError
    from bot.review.pull import PullRefError
    from bot.review.setup import SetupError

    try:
        async with _open_source(settings, request) as (source, setup):
            _print_setup(setup, err)
            prepared = await _prepare(settings, source, setup, options)
            return await _present(settings, prepared, request, err)
    except (
        ConfigurationError,
        ConveneError,
        DiffError,
        PullRefError,
        ReviewError,
        SetupError,
    ) as error:
        _fail(err, str(error))


@asynccontextmanager
async def _open_source(
    settings: Settings, request: _Request
) -> AsyncIterator[tuple[Source, RepoSetup]]:
    """The change and the setup it is reviewed with: a PR's from its default branch (the
    client stays open while the context is gathered), a local one's from the work tree."""
    from bot.review.setup import local_setup
    from bot.review.sources import LocalSource

    if request.pr is not None:
        from bot.council.personas import load_catalog
        from bot.review.pull import open_pull

        async with open_pull(settings, request.pr, load_catalog()) as opened:
            yield opened.source, opened.setup
        return
    from bot.review.local import read_branch, read_diff_file, work_tree_root

    change = read_diff_file(request.diff) if request.diff else read_branch(request.base)
    setup = local_setup(settings, root=work_tree_root(), config_file=request.config)
    yield LocalSource(change), setup


async def _prepare(
    settings: Settings, source: Source, setup: RepoSetup, options: ReviewOptions
) -> PreparedReview:
    from bot.providers import ProviderRegistry
    from bot.review.assemble import prepare_review

    registry = ProviderRegistry(settings)
    for ref in options.models:
        registry.resolve(ref)  # a malformed reference is a usage error, before any work
    available = [] if options.models or setup.config.models else await registry.available_models()
    return await prepare_review(source, setup, settings, options, available=available)


async def _present(
    settings: Settings, prepared: PreparedReview, request: _Request, err: Console
) -> int:
    from bot.cli.dryrun import RUN_FOR_REAL, emit
    from bot.review.plan import plan_review

    if not prepared.models:
        # JSON is read by a program: the person reads what to set here. The other formats
        # end with it, so stderr only says why this is a dry run (the first sentence).
        why = NO_PROVIDER[: NO_PROVIDER.index(". ") + 1]
        err.print(NO_PROVIDER if request.output == "json" else why, highlight=False)
    if request.dry_run or not prepared.models:
        plan = await plan_review(prepared, settings)
        to_run = NO_PROVIDER if not prepared.models else RUN_FOR_REAL
        emit(plan, request.output, show_prompts=request.show_prompts, to_run=to_run)
        return 0
    advisory = await _run(settings, prepared, err)
    return _emit_advisory(advisory, prepared, request.output, err)


async def _run(settings: Settings, prepared: PreparedReview, err: Console) -> Advisory:
    from bot.cli.progress import ProgressView, convening_line
    from bot.render import conclusion_for
    from bot.review.run import review_and_record

    gate = prepared.setup.config.gate

    err.print(
        convening_line(prepared.protocol, prepared.compared, prepared.models),
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    view = ProgressView(err)

    def progress(event: ProgressEvent) -> None:
        if event.status == "called":
            _started()
        view.update(event)

    with view:
        return await review_and_record(
            settings,
            prepared,
            deliberation_id=str(uuid.uuid4()),
            conclude=lambda advisory: conclusion_for(advisory, gate),
            on_progress=progress,
        )


def _started() -> None:
    """The council has called its first seat (the store is open, the models' clients are
    built, the first request is on its way): what start-up loaded stays for the whole
    process, so it is frozen out of garbage collection, which `bot.cli.main` turned off for
    start-up, and collection runs again for what the review allocates from here."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _emit_advisory(
    advisory: Advisory, prepared: PreparedReview, output: Format, err: Console
) -> int:
    """The advisory on stdout, the one-line summary on stderr; the exit code."""
    from bot.cli.report import emit
    from bot.council.advisory import Resolution

    emit(advisory, prepared, output, err)
    return EXIT_NO_QUORUM if advisory.resolution == Resolution.NO_QUORUM else 0


def _print_setup(setup: RepoSetup, err: Console) -> None:
    # soft_wrap: a path or a reason cut across lines cannot be searched or copied.
    err.print(f"council: {setup.describe()}", highlight=False, markup=False, soft_wrap=True)
    for problem in setup.problems():
        err.print(f"council: {problem}", highlight=False, markup=False, soft_wrap=True)


def _stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def _mode(err: Console, mode: str | None) -> str | None:
    if mode is None:
        return None
    if mode.lower() not in DEBATE_MODES:
        _fail(err, f"--mode {mode!r}: choose one of {', '.join(DEBATE_MODES)}")
    return mode.lower()


def _seats(err: Console, changes: list[str], sign: str) -> list[str]:
    """The personas of `--seat` changes with `sign` (+ or -); a change without a sign is
    an error, since seating and keeping off are both possible readings."""
    for change in changes:
        if change[:1] not in ("+", "-") or len(change) < 2:
            _fail(err, f"--seat {change!r}: write +persona to seat it or -persona to keep it off")
    removed = {c[1:].lower() for c in changes if c[0] == "-"}
    chosen = [c[1:].lower() for c in changes if c[0] == sign]
    if sign == "+":
        chosen = [p for p in chosen if p not in removed]
    return list(dict.fromkeys(chosen))
