"""What a review needs before it deliberates, the same for the App and the Action: its
record, its options from the request, the models it may seat, and an advisory without a
verdict for the endings that have none (nothing to review, a failure, the spend cap)."""

from __future__ import annotations

from typing import Protocol

from bot.council.advisory import Advisory, Resolution
from bot.council.protocols import DebateMode
from bot.forge import PullInfo
from bot.pr.failures import Runner
from bot.providers import ProviderRegistry
from bot.review.assemble import ReviewError, ReviewOptions
from bot.review.setup import RepoSetup
from bot.store.db import Database
from bot.store.deliberations import DeliberationRecord, create_deliberation

__all__ = [
    "Request",
    "available_models",
    "no_model",
    "open_record",
    "review_options",
    "without_verdict",
]

# Where each delivery path configures a model: the operator's settings for the App, the
# action's inputs for a workflow.
_MODEL_SETTINGS: dict[Runner, str] = {
    "app": "the operator sets COUNCIL_MODELS or a provider key (ANTHROPIC_API_KEY, "
    "OPENAI_API_KEY).",
    "action": "pass `anthropic-api-key` or `openai-api-key` to the action from a repository "
    "secret (or `models` with an endpoint).",
}


class Request(Protocol):
    """What a review reads of a job request (`bot.queue.jobs.JobRequest`)."""

    @property
    def trigger(self) -> str: ...

    @property
    def debate_mode(self) -> DebateMode | None: ...

    @property
    def board_add(self) -> tuple[str, ...]: ...

    @property
    def board_remove(self) -> tuple[str, ...]: ...

    @property
    def inline(self) -> bool: ...


def review_options(request: Request, protocol: str, topic: str) -> ReviewOptions:
    return ReviewOptions(
        protocol=protocol,
        question=topic,
        debate_mode=request.debate_mode,
        board_add=request.board_add,
        board_remove=request.board_remove,
        inline=request.inline,
    )


def no_model(runner: Runner) -> str:
    """Why a review cannot convene without a model, and where `runner` configures one."""
    return f"No model is configured for the council: {_MODEL_SETTINGS[runner]}"


async def available_models(
    setup: RepoSetup, registry: ProviderRegistry, runner: Runner = "app"
) -> list[str]:
    """The models the registry offers when the repository names none; `ReviewError`
    (`no_model`, saying where `runner` configures one) when there is no model at all."""
    available = [] if setup.config.models else await registry.available_models()
    if not (setup.config.models or available):
        raise ReviewError(no_model(runner))
    return available


async def open_record(
    db: Database,
    *,
    key: str,
    repo: str,
    pull: PullInfo,
    trigger: str,
    protocol: str,
    topic: str,
    installation_id: int | None = None,
) -> DeliberationRecord:
    """The deliberation's record (found again by `key` when the job is run again)."""
    return await create_deliberation(
        db,
        key=key,
        repo=repo,
        pr_number=pull.number,
        head_sha=pull.head_sha,
        trigger=trigger,
        protocol=protocol,
        topic=topic,
        installation_id=installation_id,
    )


def without_verdict(
    deliberation_id: str, protocol: str, topic: str, resolution: Resolution, reason: str
) -> Advisory:
    return Advisory(
        deliberation_id=deliberation_id,
        protocol=protocol,
        topic=topic,
        resolution=resolution,
        reason=reason,
    )
