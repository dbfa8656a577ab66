"""One workflow run of the action: the event decided, the commenter's permission checked,
and the App's review published with the workflow's token.

    outcome = await run_action(ActionEnv.from_environ(os.environ), Settings())

Everything about the pull request is read through the API: its diff and files at the head
SHA, and `.github/council.yml`, the personas and the guidance from the default branch
(`bot.review.pull`, as the App's worker reads them). Nothing needs Redis: the GitHub client
is the token client (`RepoClient.from_token`: in-memory pacing, no rate-limit watch), the
blob cache is in memory, the providers' concurrency and structured-output modes are held
in the process, the ledger is SQLite in a temporary directory and the spend cap is held in
memory, as for `council review`. The workflow's `concurrency` group stands in for the
App's leases and locks: one run per pull request at a time.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import structlog
from githubkit.rest.paginator import Paginator
from githubkit_schemas.latest.models import CheckRun, IssueComment

from bot.action.event import ActionEnv, Note, decide
from bot.action.transcript import write_transcript
from bot.council.advisory import Advisory, Resolution
from bot.council.convene import ConveneError
from bot.council.personas import load_catalog
from bot.forge import PostedComment, PullInfo
from bot.forge.cache import MemoryBlobCache
from bot.forge.errors import ForgeError
from bot.github.client import RepoClient
from bot.github.errors import github_errors
from bot.github.forge import WORKFLOW, GitHubForge
from bot.github.publish import CheckRunPublisher
from bot.pr.admission import (
    DENIED,
    Admitted,
    Skip,
    acknowledge,
    admit_automatic,
    refuse,
    reply_failure,
)
from bot.pr.comment import COMMENT_WAIT_S, post_advisory
from bot.pr.failures import explain_failure
from bot.pr.followup.step import InlineRequest, follow_up
from bot.pr.notes import help_text, setup_note
from bot.pr.review import available_models, open_record, review_options, without_verdict
from bot.pr.status import StatusRun
from bot.providers import ProviderError, ProviderRegistry
from bot.queue.jobs import JobRequest
from bot.render.checks import CHECK_RUN_NAME
from bot.render.markdown import comment_options
from bot.review.assemble import PreparedReview, ReviewError, prepare_review
from bot.review.inputs import review_topic
from bot.review.local import NothingToReview
from bot.review.pull import pull_setup, read_repo_config
from bot.review.run import deliberate, registry_preflight
from bot.review.setup import RepoSetup, SetupError
from bot.review.sources import PullSource
from bot.settings import Settings
from bot.store.db import Database
from bot.web.routing import InvalidPayload

__all__ = ["ActionFailed", "ActionOutcome", "run_action", "write_summary"]

log = structlog.get_logger(__name__)

SUMMARY_HEADING = "### PR Council"
CANCELLED = "The workflow run was cancelled (a newer run for this pull request, or by hand)."


# Failures `explain_failure` words for people: no traceback in the job's log for these.
EXPLAINED = (ForgeError, ProviderError, ReviewError, ConveneError, SetupError)


@dataclass(frozen=True)
class ActionOutcome:
    """What the run did, as one Markdown paragraph for the job summary."""

    summary: str
    resolution: str | None = None  # the advisory's, when the council convened


class ActionFailed(Exception):
    """The run could not do its work; the message says what failed (the check run, when
    one was opened, says it too). `council action` exits 1."""


def _comment_refused(error: BaseException, delivery_id: str) -> str:
    if isinstance(error, TimeoutError):
        return (
            f"The advisory comment was not posted: GitHub did not take it within "
            f"{round(COMMENT_WAIT_S)} s. The verdict is on the check run."
        )
    said = explain_failure(error, delivery_id=delivery_id, runner="action")
    return f"The advisory comment was not posted. {said} The verdict is on the check run."


def write_summary(env: ActionEnv, text: str) -> None:
    """Append to the job summary (`GITHUB_STEP_SUMMARY`), when the runner gives one."""
    if env.step_summary is None:
        return
    with env.step_summary.open("a", encoding="utf-8") as summary:
        summary.write(f"{SUMMARY_HEADING}\n\n{text.strip()}\n\n")


async def run_action(env: ActionEnv, settings: Settings) -> ActionOutcome:
    try:
        body = env.event_path.read_bytes()
    except OSError as error:
        raise ActionFailed(f"cannot read the event file {env.event_path}: {error}") from None
    has_secrets = bool(ProviderRegistry(settings).configured_models())
    try:
        decision = decide(
            env.event_name, body, delivery_id=env.delivery_id, has_secrets=has_secrets
        )
    except InvalidPayload as error:
        raise ActionFailed(f"the {env.event_name} event payload: {error}") from None
    if isinstance(decision, Note):
        return ActionOutcome(decision.reason)
    request = decision
    if request.pr_number is None:  # the router always sets it for the action's triggers
        return ActionOutcome("Nothing to do: the event names no pull request.")
    async with RepoClient.from_token(env.token, request.repo or env.repository, settings) as client:
        try:
            forge = GitHubForge(client, WORKFLOW)
            return await _handle(env, settings, forge, request, request.pr_number)
        except ForgeError as error:
            reason = explain_failure(error, delivery_id=env.delivery_id, runner="action")
            raise ActionFailed(reason) from error


async def _handle(
    env: ActionEnv, settings: Settings, forge: GitHubForge, request: JobRequest, pr: int
) -> ActionOutcome:
    client = forge.client
    if request.trigger in ("command", "help", "cancel"):
        if not await forge.can_trigger(request.sender_login):
            await refuse(forge, _DeniedWindow(env, settings, client), pr, request.sender_login)
            return ActionOutcome(
                f"@{request.sender_login} may not convene the council (no write access)."
            )
        if request.comment_id is not None:
            await acknowledge(forge, request.comment_id, log)
    pull = await forge.pull(pr)
    if request.trigger == "cancel":
        return await _cancel(forge, request, pull)
    cache = MemoryBlobCache()  # one run: config, personas and files share it
    text, loaded = await read_repo_config(client, pull, settings, cache)
    admitted = Admitted(pull, request.protocol, text, loaded)
    publisher = CheckRunPublisher(client, update_interval_s=settings.check_update_interval_s)
    if request.trigger in ("label", "push"):
        try:
            admit_automatic(request, pull, loaded.config)
        except Skip as skip:
            return ActionOutcome(f"Skipped: {skip}.")
        if await _reviewed(publisher, pull.head_sha):
            return ActionOutcome(f"Skipped: {pull.head_sha[:7]} was already reviewed.")
    setup = await pull_setup(client, pull, settings, load_catalog(), text, cache)
    if request.trigger == "help":
        await forge.reply(pr, help_text(setup))
        return ActionOutcome("Posted the grammar and the effective configuration.")
    review = _Review(env, settings, forge, request, admitted, setup, publisher, cache)
    return await review.run()


@dataclass
class _DeniedWindow:
    """`bot.pr.ports.ReplyThrottle` for a workflow run: the App keeps the window in Redis;
    here the PR's comments say when we last refused (`permission_reply_interval_s`)."""

    env: ActionEnv
    settings: Settings
    client: RepoClient

    async def first_in_window(self, pr: int) -> bool:
        window = timedelta(seconds=self.settings.permission_reply_interval_s)
        since = datetime.now(UTC) - window
        client = self.client
        with github_errors("list the pull request's comments"):
            pages: Paginator[IssueComment] = client.rest.paginate(
                client.rest.issues.async_list_comments,
                owner=client.owner,
                repo=client.name,
                issue_number=pr,
                since=since,
                per_page=100,
            )
            async for comment in pages:
                author = comment.user.login if comment.user else None
                ours = author == self.env.login and DENIED in (comment.body or "")
                if ours and comment.created_at >= since:
                    return False
        return True


async def _council_runs(publisher: CheckRunPublisher, head_sha: str) -> list[CheckRun]:
    c = publisher.client
    with github_errors("list check runs"):
        response = await c.rest.checks.async_list_for_ref(
            c.owner, c.name, head_sha, check_name=CHECK_RUN_NAME, filter_="all", per_page=100
        )
    return list(response.parsed_data.check_runs)


async def _reviewed(publisher: CheckRunPublisher, head_sha: str) -> bool:
    """Label and push reviews run once per head SHA, as in the App (which asks its
    database; the check runs on the SHA are the action's record)."""
    runs = await _council_runs(publisher, head_sha)
    return any(r.status == "completed" and r.conclusion != "cancelled" for r in runs)


async def _cancel(forge: GitHubForge, request: JobRequest, pull: PullInfo) -> ActionOutcome:
    """The running review's workflow run is cancelled by this one starting (the example
    workflow's `concurrency` group); its check run is closed here in case it could not."""
    publisher = CheckRunPublisher(forge.client, update_interval_s=0.0)
    running = [r for r in await _council_runs(publisher, pull.head_sha) if r.status != "completed"]
    for run in running:
        await publisher.cancel(run.id, f"Cancelled by @{request.sender_login}.")
    if not running:
        await forge.reply(
            pull.number,
            "There is no running deliberation to cancel (a review's workflow run is stopped "
            "as soon as another run for this pull request starts).",
        )
    return ActionOutcome(f"Cancelled {len(running)} running review(s).")


@dataclass
class _Review:
    env: ActionEnv
    settings: Settings
    forge: GitHubForge
    request: JobRequest
    admitted: Admitted
    setup: RepoSetup
    publisher: CheckRunPublisher
    cache: MemoryBlobCache

    async def run(self) -> ActionOutcome:
        pull, setup = self.admitted.pull, self.setup
        protocol = self.admitted.protocol_for(setup.config, self.request.trigger)
        deliberation_id = str(uuid.uuid4())  # the record's, once it exists
        topic = review_topic(self.request.question)
        check = StatusRun(
            self.publisher,
            self.forge.capabilities,
            pull.head_sha,
            protocol,
            self.env.run_url,
            gate=setup.config.gate,
        )
        registry = ProviderRegistry(self.settings)
        with tempfile.TemporaryDirectory(prefix="council-") as tmp:
            db = Database(f"sqlite+aiosqlite:///{Path(tmp) / 'council.db'}")
            try:
                await db.connect()
                record = await open_record(
                    db,
                    key=self.env.delivery_id,
                    repo=self.forge.full_name,
                    pull=pull,
                    trigger=self.request.trigger,
                    protocol=protocol,
                    topic=topic,
                )
                deliberation_id = record.id
                await check.open(deliberation_id, setup_note(setup))
                return await self._deliberate(db, registry, check, deliberation_id, protocol, topic)
            except asyncio.CancelledError:  # the runner stops a cancelled job with SIGINT/TERM
                await asyncio.shield(check.cancel(CANCELLED))
                raise
            except Exception as error:  # the check run must never stay in_progress
                if isinstance(error, EXPLAINED):  # our own sentence says it all
                    log.warning("action_review_failed", error=str(error))
                else:
                    log.exception("action_review_failed")
                reason = explain_failure(error, delivery_id=self.env.delivery_id, runner="action")
                failed = without_verdict(
                    deliberation_id, protocol, topic, Resolution.FAILED, reason
                )
                if check.check_run_id is not None and not check.completed:
                    await check.without_verdict(failed)
                await write_transcript(db, deliberation_id, failed)
                await reply_failure(
                    self.forge, self.request, self.admitted.pull.number, error, log, runner="action"
                )
                raise ActionFailed(reason) from error
            finally:
                await registry.aclose()
                await db.dispose()

    async def _deliberate(
        self,
        db: Database,
        registry: ProviderRegistry,
        check: StatusRun,
        deliberation_id: str,
        protocol: str,
        topic: str,
    ) -> ActionOutcome:
        pull, setup, request = self.admitted.pull, self.setup, self.request
        options = review_options(request, protocol, topic)
        available = await available_models(setup, registry, "action")
        source = PullSource(
            self.forge,
            pull,
            cache=self.cache,
            archive_max_bytes=self.settings.archive_max_bytes,
        )
        try:
            prepared = await prepare_review(
                source, setup, self.settings, options, available=available
            )
        except NothingToReview as nothing:
            reason = f"{nothing.compared}: {nothing.reason}"
            await check.without_verdict(
                without_verdict(
                    deliberation_id, protocol, topic, Resolution.NOTHING_TO_REVIEW, reason
                )
            )
            return ActionOutcome(
                f"Nothing to review: {reason}.", Resolution.NOTHING_TO_REVIEW.value
            )
        cap = setup.config.max_cost_usd
        advisory = await deliberate(
            prepared,
            self.settings,
            deliberation_id=deliberation_id,
            providers=registry,
            db=db,
            max_cost_usd=cap,
            on_progress=check.on_progress,
            # The store's budget, as in the App: the caps over this run's own ledger.
            preflight=registry_preflight(registry),
        )
        if prepared.inline:
            advisory = await self._inline(prepared, advisory, db)
        await write_transcript(db, deliberation_id, advisory)  # the workflow's artifact
        return await self._publish(check, advisory)

    async def _inline(self, prepared: PreparedReview, advisory: Advisory, db: Database) -> Advisory:
        """The follow-up step, as in the App (bot/pr/followup/step.py); the workflow token
        cannot resolve a thread, so a fixed finding's thread gets a "Fixed in <sha>" reply.
        The run's store lasts one run: the comments' hidden markers keep duplicates and
        dismissals apart."""
        inline = InlineRequest(
            post=True,
            min_severity=self.setup.config.inline_min_severity,
            changed_lines=prepared.built.hunk_lines,
            pr_diff=prepared.pr_diff,
        )
        pull = self.admitted.pull
        return await follow_up(self.forge, pull, advisory, inline, db, bot_login=self.env.login)

    async def _publish(self, check: StatusRun, advisory: Advisory) -> ActionOutcome:
        """The comment, then the check run with the verdict. A comment GitHub will not
        take (a missing permission, a GitHub that keeps failing) does not keep the verdict
        from the check run: it completes without the comment, saying why."""
        pull = self.admitted.pull
        try:
            comment: PostedComment | None = await asyncio.wait_for(
                post_advisory(
                    self.forge,
                    pull.number,
                    advisory,
                    comment_options(self.setup.config),
                    self.setup.config.gate,
                    self.env.login,
                ),
                COMMENT_WAIT_S,
            )
            missing = None
        except (ForgeError, TimeoutError) as error:
            comment = None
            missing = _comment_refused(error, self.env.delivery_id)
            log.warning("action_comment_failed", pr=pull.number, reason=missing)
        conclusion = await check.verdict(advisory, self.setup, comment, note=missing)
        log.info(
            "action_published",
            repo=self.forge.full_name,
            pr=pull.number,
            resolution=advisory.resolution.value,
            conclusion=conclusion,
        )
        where = f"[The advisory]({comment.html_url})." if comment else f"**{missing}**"
        return ActionOutcome(
            f"The council ({advisory.protocol}) reviewed #{pull.number} at "
            f"`{pull.head_sha[:7]}`: **{advisory.resolution.value}** (check run: "
            f"`{conclusion}`). {where}",
            advisory.resolution.value,
        )
