"""Put a review together: a source + the repo's setup + the operator's settings -> what the
engine takes. The App's worker and every form of `council review` call `prepare_review`,
so they send the models the same context, seat the same members and plan the same calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

from bot.context import BuiltContext
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest
from bot.council.prompts import ContextSection, render_context
from bot.council.protocols import BOARD_SIZE
from bot.council.protocols import protocol as protocol_spec
from bot.council.scope import ReviewScope
from bot.council.scoring import ReviewSignals, review_task_type
from bot.providers import ProviderRegistry
from bot.providers.window import discover
from bot.review.inputs import context_budget, council_inputs, review_topic
from bot.review.rereview import FindingTracking
from bot.review.setup import RepoSetup
from bot.review.sources import Source
from bot.settings import Settings
from bot.tokens import default_estimator


class ReviewError(ValueError):
    """The review cannot be put together as asked (a bad option, no model); the message
    says what to change."""


@dataclass(frozen=True)
class ReviewOptions:
    """What the person asking chose; None or empty means "as the repository configures"."""

    protocol: str | None = None
    question: str | None = None
    models: Sequence[str] = ()
    size: int | None = None  # board seats
    rounds: int | None = None  # discussion rounds
    budget_tokens: int | None = None  # the context budget
    debate_mode: str | None = None  # debate: quick, standard or full (None: the config's)
    board_add: Sequence[str] = ()  # board: personas seated for this run
    board_remove: Sequence[str] = ()  # board: personas kept off for this run
    inline: bool = False  # findings as review comments for this run (else the config's)


@dataclass
class PreparedReview:
    """Everything a deliberation needs but its id, its cost cap and a provider."""

    protocol: str
    topic: str
    models: list[str]
    budget: int
    built: BuiltContext
    context_text: str
    context_tokens: int
    signals: ReviewSignals
    omitted: list[str]
    board: BoardConfig
    setup: RepoSetup
    compared: str
    head_sha: str | None
    notes: list[str] = field(default_factory=list)
    debate_mode: str | None = None
    board_add: list[str] = field(default_factory=list)
    board_remove: list[str] = field(default_factory=list)
    inline: bool = False  # post the findings as review comments (the config's or the run's)
    # The PR's diff the review read, kept when inline comments are posted (their lines are
    # checked against it): the inline step does not fetch it, or page the files API, again.
    pr_diff: str | None = None
    # A pull request's: what the review covered (on the advisory), and how its findings
    # are followed after it (bot.review.rereview).
    scope: ReviewScope | None = None
    tracking: FindingTracking | None = None

    @property
    def task_type(self) -> str:
        """The change's task type, by which personas' track records are kept."""
        return review_task_type(self.signals)

    @property
    def included(self) -> list[str]:
        return [s.path for s in self.built.sections if s.kind == "diff" and s.path]

    def request(
        self, deliberation_id: str, settings: Settings, *, max_cost_usd: float | None
    ) -> DeliberationRequest:
        config = self.setup.config
        return DeliberationRequest(
            deliberation_id=deliberation_id,
            topic=self.topic,
            protocol=self.protocol,
            context=self.context_text,
            signals=self.signals,
            models=self.models,
            allowed_models=settings.allowed_models,
            chair_model=config.chair_model,
            board=self.board,
            pinned=config.seats,
            max_cost_usd=max_cost_usd,
            max_spend_tokens=settings.max_spend_tokens,
            assessment_timeout_s=settings.call_deadline_s,
            language=config.language,
            notes=self.notes,
            debate_mode=self.debate_mode,
            board_add=self.board_add,
            board_remove=self.board_remove,
            chair_votes=config.chair_votes,
            model_strengths=settings.model_strengths,
        )


async def prepare_review(
    source: Source,
    setup: RepoSetup,
    settings: Settings,
    options: ReviewOptions,
    *,
    available: Sequence[str],
) -> PreparedReview:
    """The review of `source` as `setup` configures it, with `options` on top. `available`
    is the operator's models (used when neither options nor the repo name any)."""
    config = setup.config
    protocol = options.protocol or config.protocol
    try:
        protocol_spec(protocol)
    except ValueError as error:
        raise ReviewError(str(error)) from None
    models = list(options.models or config.models or available)
    wanted = config.context_max_tokens if options.budget_tokens is None else options.budget_tokens
    budget = await _budget(settings, models, wanted)
    gathered = await source.gather(budget, config.ignore_paths)
    topic = review_topic(options.question)
    sections, signals, omitted = council_inputs(gathered.built, topic)
    for kind, why, text in gathered.extra:  # after the signals: the findings still open
        sections.insert(1, ContextSection(kind=kind, why=why, text=text))
    # The built title is the cleaned one (hidden text removed, secrets redacted).
    context_text = render_context(gathered.built.title, sections, omitted)
    return PreparedReview(
        protocol=protocol,
        topic=topic,
        models=models,
        budget=budget,
        built=gathered.built,
        context_text=context_text,
        context_tokens=default_estimator().estimate(context_text),
        signals=signals,
        omitted=omitted,
        board=_board(config.board, options),
        setup=setup,
        compared=source.compared,
        head_sha=source.head_sha,
        notes=gathered.notes,
        debate_mode=options.debate_mode or config.debate_mode,
        board_add=list(options.board_add),
        board_remove=list(options.board_remove),
        inline=options.inline or config.inline_comments,
        pr_diff=gathered.pr_diff if options.inline or config.inline_comments else None,
        scope=gathered.scope,
        tracking=gathered.tracking,
    )


async def _budget(settings: Settings, models: list[str], wanted: int) -> int:
    """The context budget, from the windows the seated models' servers say (asked first,
    briefly: a server that says nothing gets the default)."""
    if wanted < 1:
        raise ReviewError(f"the context budget must be a positive number of tokens, not {wanted}")
    await discover(ProviderRegistry(settings), models)
    return context_budget(settings, models, wanted)


def _board(board: BoardConfig, options: ReviewOptions) -> BoardConfig:
    changes: dict[str, int] = {}
    if options.size is not None:
        changes["default_size"] = options.size
        if options.size >= BOARD_SIZE[0]:  # a smaller one is reported as --size's error
            changes["min_size"] = min(board.min_size, options.size)
    if options.rounds is not None:
        changes["discussion_rounds"] = options.rounds
    if not changes:
        return board
    try:
        return BoardConfig.model_validate({**board.model_dump(), **changes})
    except ValidationError as error:
        field_name = {"default_size": "--size", "discussion_rounds": "--rounds"}
        problems = "; ".join(
            f"{field_name.get(str(e['loc'][0]), str(e['loc'][0]))}: {e['msg']}"
            for e in error.errors()
        )
        raise ReviewError(problems) from None
