"""The contract between the webhook receiver and the workers.

The receiver turns a delivery into one `JobRequest` under a deterministic job id and
enqueues it for one of the job functions below; the worker validates it back. arq refuses
a job id while that job or its result is kept, so ten copies of one delivery make one job,
while results are kept only briefly so a second `/council` or a Re-run is never swallowed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from bot.council.protocols import DebateMode, longest_deliberation
from bot.settings import Settings, call_deadline_s


class JobFunction(StrEnum):
    DELIBERATE = "deliberate"  # convene on a PR: command, label, push, re-run, button
    HELP = "reply_help"  # /council help
    CANCEL = "cancel"  # /council cancel
    OUTCOME = "record_outcome"  # pull_request.closed
    INSTALLATION = "record_installation"  # installation, installation_repositories


Trigger = Literal[
    "command",
    "label",
    "push",
    "rerequest",
    "requested_action",
    "help",
    "cancel",
    "closed",
    "installation",
]


class JobRequest(BaseModel):
    """Only what a job needs; every field comes from the webhook payload."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trigger: Trigger
    delivery_id: str
    installation_id: int | None = None
    repo: str = ""  # "owner/name" of the base repository
    pr_number: int | None = None
    head_sha: str | None = None
    sender_login: str = ""
    comment_id: int | None = None
    protocol: str | None = None  # from the command or the button; None: the config's
    question: str | None = None
    debate_mode: DebateMode | None = None  # `/council debate --full`
    board_add: tuple[str, ...] = ()  # `/council board +persona`
    board_remove: tuple[str, ...] = ()  # `/council board -persona`
    inline: bool = False  # `/council --inline`: findings as review comments for this run
    check_run_id: int | None = None
    action: str | None = None  # requested_action identifier: bot.render.checks.BUTTON_*
    label: str | None = None
    merged: bool | None = None
    draft: bool | None = None
    # installation events
    installation_action: str | None = None
    account: str | None = None
    repositories: list[str] = []
    # A resumed deliberation's own key when the job that runs it has a new id (the first
    # job was lost with Redis's data, or arq gave up on it); None: the job id is the key.
    deliberation_key: str | None = None


def job_id(request: JobRequest) -> str:
    """Deterministic: the same delivery always maps to the same id."""
    if request.trigger in ("command", "help", "cancel"):
        return f"comment:{request.comment_id}"
    if request.trigger in ("rerequest", "requested_action"):
        return f"check:{request.check_run_id}:{request.delivery_id}"
    if request.trigger == "label":
        # Per label: a "bug" label must not swallow the "architecture" label added after it;
        # the worker deduplicates reviews of one head SHA.
        label = (request.label or "").casefold()
        return f"pr:{request.repo}:{request.pr_number}:{request.head_sha}:label:{label}"
    if request.trigger == "push":
        return f"pr:{request.repo}:{request.pr_number}:{request.head_sha}:push"
    if request.trigger == "closed":
        return f"closed:{request.repo}:{request.pr_number}"
    return f"installation:{request.delivery_id}"


def function_for(request: JobRequest) -> JobFunction:
    return {
        "help": JobFunction.HELP,
        "cancel": JobFunction.CANCEL,
        "closed": JobFunction.OUTCOME,
        "installation": JobFunction.INSTALLATION,
    }.get(request.trigger, JobFunction.DELIBERATE)


GITHUB_BUDGET_S = 300


def job_timeout_s(settings: Settings) -> int:
    """The job timeout: the longest deliberation any protocol plans (`planned_calls` at its
    largest, every discussion round, the chair voting), each call with its re-asks at the
    longest call deadline (`call_deadline_s`), the seats' calls of a phase queueing for the
    narrowest endpoint (a local server takes one at a time, and a call's deadline starts
    when its turn comes); plus the GitHub work."""
    if settings.job_timeout_s is not None:
        return settings.job_timeout_s
    _, turns = longest_deliberation(
        models=len(settings.models), concurrency=narrowest_concurrency(settings)
    )
    return int(turns * call_deadline_s(settings) + GITHUB_BUDGET_S)


def narrowest_concurrency(settings: Settings) -> int:
    """The fewest calls at once any endpoint a deliberation may use takes."""
    limits = [settings.provider_concurrency]
    limits += [e.slots(settings.provider_concurrency) for e in settings.endpoints.values()]
    models = [*settings.models, *settings.allowed_models]
    keys = settings.anthropic_api_key or settings.openai_api_key
    if any(m.startswith("ollama:") for m in models) or not (models or keys):
        limits.append(1)  # a local Ollama server (the default when nothing else is set)
    return min(limits)
