"""The `deliberate` job: from a trigger on a pull request to one comment and one check run.

fetch -> context.build -> council.deliberate -> render -> publish. Every step that costs
money is in the ledger, so a job re-run after a crash finds its deliberation (by job id),
its check run (by external id) and its sticky comment (by marker and login), and pays only
for the calls it had not finished.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

import structlog

from bot.config import ConfigResult, EffectiveConfig, load_repo_config
from bot.context.models import BuiltContext
from bot.council.advisory import Advisory, Resolution
from bot.council.engine import DeliberationRequest, Engine, ProgressEvent
from bot.council.ledger import EventKind
from bot.council.personas import Catalog, load_persona_texts
from bot.council.prompts import render_context
from bot.council.scoring import review_task_type
from bot.github.client import RepoClient
from bot.github.errors import GitHubError
from bot.github.fetch import (
    PullInfo,
    fetch_pull,
    read_agents,
    read_config,
)
from bot.github.permissions import can_trigger
from bot.github.publish import CheckRunPublisher, react, reply, upsert_sticky_comment
from bot.metrics import DELIBERATION_SECONDS, MODEL_COST, MODEL_TOKENS
from bot.review.inputs import (
    DEFAULT_TOPIC,
    context_budget,
    council_inputs,
    pull_context,
    track_records,
)
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobRequest, job_timeout_s
from bot.render import conclusion_for, render_check_run, render_comment
from bot.store.ledger import SqlLedger
from bot.store.records import (
    DeliberationRecord,
    DeliberationStatus,
    add_cost,
    create_deliberation,
    daily_cost,
    find_by_check_run,
    record_publication,
    reviewed_at,
    running_for_pr,
    set_status,
)

log = structlog.get_logger(__name__)

DENIED = (
    "Only people with write or admin access to this repository can convene the council. "
    "(This note is posted at most once an hour per pull request.)"
)
AUTOMATIC = ("label", "push")


class DailyCapReached(Exception):
    """The installation spent its daily model budget (COUNCIL_MAX_DAILY_COST_USD)."""


class Skip(Exception):
    """The trigger does not apply (a label that is not a trigger, a draft, a stale push)."""


class DeliberationJob:
    def __init__(self, deps: WorkerDeps, request: JobRequest, job_id: str) -> None:
        self.deps = deps
        self.request = request
        self.job_id = job_id
        self.settings = deps.settings
        self._started = time.monotonic()
        self._published = False
        self.log = log.bind(
            delivery_id=request.delivery_id, repo=request.repo, pr=request.pr_number, job_id=job_id
        )

    async def run(self) -> str:
        if self.request.installation_id is None:
            return "ignored: no installation"
        github = self.deps.github
        async with github.for_installation(
            self.request.installation_id, self.request.repo
        ) as client:
            return await self._run(client)

    async def _run(self, client: RepoClient) -> str:
        try:
            pr_number, protocol = await self._target()
            pull = await fetch_pull(client, pr_number)
            text = await read_config(client, pull.default_branch)
            await self._gate(client, pull, load_repo_config(text, self.settings).config)
        except Skip as skip:
            self.log.info("job_skipped", reason=str(skip))
            return f"skipped: {skip}"
        # Only now the repo's personas (a directory listing and a read per file): most
        # label and push events are skipped by the gate and need none of it. The config is
        # validated again against them, so a pinned persona that does not exist is reported.
        catalog = await self._catalog(client, pull)
        loaded = load_repo_config(text, self.settings, personas=catalog.ids())
        if protocol is None:
            push = self.request.trigger == "push"
            protocol = loaded.config.push_protocol if push else loaded.config.protocol
        return await self._deliberate(client, pull, loaded, catalog, protocol)

    async def _target(self) -> tuple[int, str | None]:
        """The PR and, for re-runs, the protocol (check_run events from forks carry no PR)."""
        request = self.request
        if request.trigger not in ("rerequest", "requested_action"):
            if request.pr_number is None:
                raise Skip("no pull request in the event")
            return request.pr_number, request.protocol
        previous = (
            await find_by_check_run(self.deps.db, request.check_run_id)
            if request.check_run_id
            else None
        )
        if previous is None or previous.pr_number is None:
            raise Skip("the check run is not one of ours")
        protocol = "debate" if request.action == "debate" else previous.protocol
        return previous.pr_number, protocol

    async def _gate(self, client: RepoClient, pull: PullInfo, config: EffectiveConfig) -> None:
        if self.request.trigger == "command":
            await self._gate_command(client, pull)
        elif self.request.trigger in AUTOMATIC:
            self._gate_automatic(pull, config)

    async def _gate_command(self, client: RepoClient, pull: PullInfo) -> None:
        request = self.request
        if not await can_trigger(client, request.sender_login):
            key = f"denied:{request.repo}:{pull.number}"
            if await self.deps.state.first_in_window(
                key, self.settings.permission_reply_interval_s
            ):
                await reply(client, pull.number, f"@{request.sender_login} {DENIED}")
            raise Skip(f"{request.sender_login} may not convene the council")
        if request.comment_id is not None:
            await _acknowledge(client, request.comment_id)

    def _gate_automatic(self, pull: PullInfo, config: EffectiveConfig) -> None:
        request = self.request
        if pull.state != "open":
            raise Skip("the pull request is closed")
        if pull.draft and not config.review_drafts:
            raise Skip("draft pull request (review_drafts is off)")
        if request.trigger == "label" and not config.is_trigger_label(request.label or ""):
            raise Skip(f"label {request.label!r} is not a trigger label")
        if request.trigger != "push":
            return
        if not config.auto_review_on_push:
            raise Skip("auto_review_on_push is off")
        if not any(config.is_trigger_label(label) for label in pull.labels):
            raise Skip("the pull request carries no trigger label")
        if request.head_sha and request.head_sha != pull.head_sha:
            raise Skip("a newer push exists; its own job reviews it")

    async def _deliberate(
        self,
        client: RepoClient,
        pull: PullInfo,
        loaded: ConfigResult,
        catalog: Catalog,
        protocol: str,
    ) -> str:
        db = self.deps.db
        topic = self.request.question or DEFAULT_TOPIC
        if self.request.trigger in AUTOMATIC and await reviewed_at(
            db, self.request.repo, pull.number, pull.head_sha, AUTOMATIC
        ):
            self.log.info("job_skipped", reason="this head SHA was already reviewed")
            return "skipped: already reviewed at this head SHA"
        record = await create_deliberation(
            db,
            key=self.job_id,
            repo=self.request.repo,
            pr_number=pull.number,
            head_sha=pull.head_sha,
            trigger=self.request.trigger,
            protocol=protocol,
            topic=topic,
            installation_id=self.request.installation_id,
        )
        if record.status != DeliberationStatus.RUNNING.value:
            return f"already {record.status}"
        await self._supersede(record)
        publisher = CheckRunPublisher(
            client, update_interval_s=self.settings.check_update_interval_s
        )
        check_run_id: int | None = None
        started = time.monotonic()
        try:
            check_run_id = await self._check_run(publisher, record, loaded)
            advisory, task_type = await self._convene(
                client, pull, loaded.config, catalog, record, protocol, publisher, check_run_id
            )
            DELIBERATION_SECONDS.labels(protocol).observe(time.monotonic() - started)
            await self._publish(
                client, pull, loaded, record, advisory, publisher, check_run_id, task_type
            )
        except asyncio.CancelledError:
            # Cancel, a newer push, or the job timeout: the check run must say which.
            await self._stopped(publisher, record, check_run_id)
            raise
        except Exception as error:  # the check run must never stay in_progress
            self.log.exception("deliberation_failed")
            reason = f"{type(error).__name__}: {error}"
            await self._failed(publisher, record, check_run_id, reason)
            return "failed"
        return advisory.resolution.value

    async def _supersede(self, record: DeliberationRecord) -> None:
        """A newer head SHA makes older running deliberations on the PR moot."""
        for other in await running_for_pr(self.deps.db, record.repo, record.pr_number or 0):
            if other.id != record.id and other.head_sha != record.head_sha:
                await self.deps.state.request_stop(
                    other.key,
                    f"Superseded by a newer push ({record.head_sha[:7]}).",
                )

    async def _check_run(
        self, publisher: CheckRunPublisher, record: DeliberationRecord, loaded: ConfigResult
    ) -> int:
        """Ours from before a crash (stored, or found by external id), else a new one."""
        check_run_id = record.check_run_id or await publisher.find(record.head_sha, record.id)
        if check_run_id is None:
            summary = f"The council ({record.protocol}) is convening.{_issues_note(loaded)}"
            check_run_id = await publisher.create(
                record.head_sha, external_id=record.id, title="Council convening", summary=summary
            )
        await record_publication(self.deps.db, record.id, check_run_id=check_run_id)
        return check_run_id

    async def _convene(
        self,
        client: RepoClient,
        pull: PullInfo,
        config: EffectiveConfig,
        catalog: Catalog,
        record: DeliberationRecord,
        protocol: str,
        publisher: CheckRunPublisher,
        check_run_id: int,
    ) -> tuple[Advisory, str]:
        deps = self.deps
        try:
            cost_cap = await self._cost_cap(config)
        except DailyCapReached as spent:
            stopped = Advisory(
                deliberation_id=record.id,
                protocol=protocol,
                topic=record.topic,
                resolution=Resolution.COST_LIMIT,
                reason=str(spent),
            )
            return stopped, "general"
        models = config.models or await deps.providers.available_models()
        if not models:
            raise RuntimeError(
                "no model is configured for the council (set COUNCIL_MODELS or a provider key)"
            )
        built, notes = await self._context(client, pull, config, models)
        sections, signals, omitted = council_inputs(built, record.topic)
        task_type = review_task_type(signals)
        records = await track_records(deps.db, signals)
        engine = Engine(
            deps.providers,
            catalog,
            SqlLedger(deps.db),
            track_records=records,
            on_progress=_Progress(publisher, check_run_id, protocol).update,
        )
        request = DeliberationRequest(
            deliberation_id=record.id,
            topic=record.topic,
            protocol=protocol,
            context=render_context(pull.title, sections, omitted),
            signals=signals,
            models=models,
            allowed_models=self.settings.allowed_models,
            chair_model=config.chair_model,
            board=config.board,
            pinned=config.seats,
            max_cost_usd=cost_cap,
            assessment_timeout_s=self.settings.call_deadline_s,
            language=config.language,
            notes=notes,
        )
        return await engine.deliberate(request), task_type

    async def _context(
        self, client: RepoClient, pull: PullInfo, config: EffectiveConfig, models: list[str]
    ) -> tuple[BuiltContext, list[str]]:
        budget = min(config.context_max_tokens, context_budget(self.settings, models))
        found = await pull_context(
            client, pull, budget_tokens=budget, ignore_globs=config.ignore_paths
        )
        return found.built, found.notes

    async def _catalog(self, client: RepoClient, pull: PullInfo) -> Catalog:
        files = await read_agents(client, pull.default_branch)
        if not files:
            return self.deps.catalog
        repo = load_persona_texts(files, builtin=False)
        for issue in repo.issues:
            self.log.warning("repo_persona_invalid", issue=str(issue))
        return self.deps.catalog.overridden_by(repo)

    async def _cost_cap(self, config: EffectiveConfig) -> float | None:
        """The lower of the deliberation cap and what is left of today's installation cap."""
        cap = config.max_cost_usd
        daily = self.settings.max_daily_cost_usd
        if daily is None or self.request.installation_id is None:
            return cap
        spent = await daily_cost(self.deps.db, self.request.installation_id, _today())
        left = daily - spent
        if left <= 0:
            raise DailyCapReached(
                f"The installation's daily model budget (${daily:.2f}) is spent; the council "
                "can convene again after midnight UTC, or when the operator raises "
                "COUNCIL_MAX_DAILY_COST_USD."
            )
        return left if cap is None else min(cap, left)

    async def _publish(
        self,
        client: RepoClient,
        pull: PullInfo,
        loaded: ConfigResult,
        record: DeliberationRecord,
        advisory: Advisory,
        publisher: CheckRunPublisher,
        check_run_id: int,
        task_type: str,
    ) -> None:
        deps = self.deps
        lock = deps.redis.lock(
            f"{self.settings.key_prefix}:sticky:{record.repo}:{pull.number}", timeout=120
        )
        async with lock:
            comment = await upsert_sticky_comment(
                client, pull.number, render_comment(advisory), await deps.github.app_login()
            )
        gate = loaded.config.gate
        output = render_check_run(advisory, gate=gate, comment_url=comment.html_url)
        if loaded.issues:
            output = output.model_copy(
                update={"summary": _issues_note(loaded).strip() + "\n\n" + output.summary}
            )
        conclusion = conclusion_for(advisory.resolution, gate)
        await publisher.complete(check_run_id, output, conclusion, details_url=comment.html_url)
        self._published = True  # from here on the check run says the verdict
        await SqlLedger(deps.db).append(
            record.id,
            EventKind.PUBLISHED,
            {"comment_id": comment.id, "check_run_id": check_run_id, "task_type": task_type},
            step="published",
        )
        await record_publication(deps.db, record.id, comment_id=comment.id)
        await set_status(
            deps.db,
            record.id,
            DeliberationStatus.COMPLETED,
            resolution=advisory.resolution.value,
            conclusion=conclusion,
            advisory_json=advisory.model_dump_json(),
            cost_usd=advisory.usage.cost_usd,
        )
        if self.request.installation_id is not None:
            await add_cost(deps.db, self.request.installation_id, _today(), advisory.usage.cost_usd)
        _count_usage(advisory)
        self.log.info(
            "deliberation_published",
            resolution=advisory.resolution.value,
            cost_usd=round(advisory.usage.cost_usd, 4),
            comment_id=comment.id,
        )

    async def _stopped(
        self, publisher: CheckRunPublisher, record: DeliberationRecord, check_run_id: int | None
    ) -> None:
        """Aborted (cancel, supersede), expired (the job timeout), or interrupted (the worker
        is shutting down: arq runs the job again and it resumes from the ledger)."""
        if self._published:
            return  # the verdict is out; only bookkeeping was left
        reason = await self.deps.state.stop_reason(self.job_id)
        if reason is not None:
            status = (
                DeliberationStatus.SUPERSEDED
                if reason.startswith("Superseded")
                else DeliberationStatus.CANCELLED
            )
            if check_run_id is not None:
                await publisher.cancel(check_run_id, reason)
            await set_status(
                self.deps.db, record.id, status, resolution="CANCELLED", conclusion="cancelled"
            )
            self.log.info("deliberation_stopped", reason=reason)
            return
        elapsed = time.monotonic() - self._started
        if elapsed < job_timeout_s(self.settings) - 1:
            self.log.info("deliberation_interrupted", note="the job runs again and resumes")
            return
        await self._failed(
            publisher, record, check_run_id, "The deliberation ran past the job timeout."
        )

    async def _failed(
        self,
        publisher: CheckRunPublisher,
        record: DeliberationRecord,
        check_run_id: int | None,
        reason: str,
    ) -> None:
        if self._published:
            return
        advisory = Advisory(
            deliberation_id=record.id,
            protocol=record.protocol,
            topic=record.topic,
            resolution=Resolution.FAILED,
            reason=reason,
        )
        if check_run_id is not None:
            output = render_check_run(advisory)
            await publisher.complete(check_run_id, output, "neutral", actions=())
        await set_status(
            self.deps.db,
            record.id,
            DeliberationStatus.FAILED,
            resolution=Resolution.FAILED.value,
            conclusion="neutral",
        )


class _Progress:
    """Engine progress -> a throttled check-run summary (the publisher drops updates that
    come sooner than `check_update_interval_s` after the last)."""

    def __init__(self, publisher: CheckRunPublisher, check_run_id: int, protocol: str) -> None:
        self._publisher = publisher
        self._check_run_id = check_run_id
        self._protocol = protocol
        self._done: list[str] = []
        self._tasks: set[asyncio.Task[bool]] = set()

    def update(self, event: ProgressEvent) -> None:
        if event.seat_id is None and event.status == "started":
            self._done.append(event.phase)
            summary = (
                f"The council ({self._protocol}) is deliberating. Phases so far: "
                + " -> ".join(self._done)
            )
            task = asyncio.create_task(self._publisher.progress(self._check_run_id, summary))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)


async def _acknowledge(client: RepoClient, comment_id: int) -> None:
    """The eyes reaction says "seen"; failing to add it must not stop the deliberation."""
    try:
        await react(client, comment_id, "eyes")
    except GitHubError as error:
        log.warning("reaction_failed", comment_id=comment_id, error=str(error))


def _issues_note(loaded: ConfigResult) -> str:
    if not loaded.issues:
        return ""
    lines = [
        f"- `{i.key}`: {i.reason}" + (f" (line {i.line})" if i.line else "") for i in loaded.issues
    ]
    return (
        "\n\n**`.github/council.yml` has problems; defaults were used for these keys:**\n"
        + "\n".join(lines)
    )


def _today() -> Any:
    return datetime.now(UTC).date()


def _count_usage(advisory: Advisory) -> None:
    usage = advisory.usage
    model = ",".join(sorted({s.model for s in advisory.seats})) or "unknown"
    MODEL_TOKENS.labels(model, "input").inc(usage.input_tokens)
    MODEL_TOKENS.labels(model, "output").inc(usage.output_tokens)
    MODEL_TOKENS.labels(model, "cache_write").inc(usage.cache_write_tokens)
    MODEL_TOKENS.labels(model, "cache_read").inc(usage.cached_input_tokens)
    MODEL_COST.labels(model).inc(usage.cost_usd)
