"""Publishing an advisory: the sticky comment, the completed check run, and the books
(ledger, record, metrics). The installation's daily spend is not added here: every call
was charged in the store when it was paid (`bot.store.spend`)."""

from __future__ import annotations

from bot.github.fetch import PullInfo
from bot.github.publish import upsert_sticky_comment
from bot.metrics import MODEL_COST, MODEL_TOKENS
from bot.queue.checkrun import CheckRunLifecycle
from bot.queue.jobcontext import JobContext
from bot.queue.problems import setup_note
from bot.render import conclusion_for, render_check_run, render_comment
from bot.review import Advisory
from bot.review.run import record_published
from bot.review.setup import RepoSetup
from bot.store.records import (
    DeliberationStatus,
    record_publication,
    set_status,
)


async def publish(
    ctx: JobContext,
    lifecycle: CheckRunLifecycle,
    pull: PullInfo,
    setup: RepoSetup,
    advisory: Advisory,
    task_type: str,
) -> None:
    deps, record = ctx.deps, lifecycle.record
    lock = deps.redis.lock(
        f"{ctx.settings.key_prefix}:sticky:{record.repo}:{pull.number}", timeout=120
    )
    async with lock:
        comment = await upsert_sticky_comment(
            ctx.client,
            pull.number,
            render_comment(advisory, repo=record.repo),
            await deps.github.app_login(),
        )
    gate = setup.config.gate
    output = render_check_run(advisory, gate=gate, comment_url=comment.html_url)
    note = setup_note(setup)  # config problems and persona files that did not load
    if note:
        output = output.model_copy(update={"summary": note.strip() + "\n\n" + output.summary})
    conclusion = conclusion_for(advisory.resolution, gate)
    await lifecycle.complete(output, conclusion, details_url=comment.html_url)
    await record_published(
        deps.db,
        record.id,
        comment_id=comment.id,
        check_run_id=lifecycle.check_run_id,
        task_type=task_type,
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
    _count_usage(advisory)
    ctx.log.info(
        "deliberation_published",
        resolution=advisory.resolution.value,
        cost_usd=round(advisory.usage.cost_usd, 4),
        comment_id=comment.id,
    )


def _count_usage(advisory: Advisory) -> None:
    usage = advisory.usage
    model = ",".join(sorted({s.model for s in advisory.seats})) or "unknown"
    MODEL_TOKENS.labels(model, "input").inc(usage.input_tokens)
    MODEL_TOKENS.labels(model, "output").inc(usage.output_tokens)
    MODEL_TOKENS.labels(model, "cache_write").inc(usage.cache_write_tokens)
    MODEL_TOKENS.labels(model, "cache_read").inc(usage.cached_input_tokens)
    MODEL_COST.labels(model).inc(usage.cost_usd)
