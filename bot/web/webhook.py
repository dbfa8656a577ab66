"""`POST /webhooks/github`: verify, route, deduplicate and enqueue - nothing slower.

The receiver never calls GitHub or a model; one Redis round trip per routed delivery
(`enqueue_once`), so it answers in milliseconds and GitHub's 10-second timeout never bites.
When Redis fails or does not answer within its deadline (a frozen Redis never does), the
delivery is kept in the database and answered 202 `kept`; the drainer in `outbox`
enqueues it once Redis is back. Only if the database fails too is the answer 503.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import structlog
from arq.connections import ArqRedis
from githubkit.webhooks import verify
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.metrics import DELIVERIES
from bot.queue.enqueue import EnqueueOutcome
from bot.queue.jobs import JobRequest, job_id
from bot.settings import Settings
from bot.store.db import Database
from bot.web.outbox import enqueue_bounded, keep
from bot.web.routing import Ignored, InvalidPayload, route

log = structlog.get_logger("bot.web")

# Metric label values come from this set only: the event header is not signed, and an
# attacker must not be able to create unbounded metric series.
KNOWN_EVENTS = frozenset(
    {"issue_comment", "pull_request", "check_run", "installation", "installation_repositories"}
    | {"ping", "check_suite", "push"}
)
_MAX_DELIVERY_ID = 128
_REASONS = {
    EnqueueOutcome.DUPLICATE_DELIVERY: "delivery seen",
    EnqueueOutcome.DUPLICATE_BODY: "body seen",  # the same signed body, replayed
    EnqueueOutcome.JOB_EXISTS: "job exists",
}
# GitHub caps payloads at 25 MB; anything longer is not GitHub, and is not read into memory.
MAX_BODY_BYTES = 25 * 1024 * 1024


class WebhookReceiver:
    """Holds the secret, the Redis pool and the database; `handle` is the Starlette
    endpoint."""

    def __init__(self, settings: Settings, secret: str) -> None:
        self.settings = settings
        self._secret = secret
        self.redis: ArqRedis | None = None  # set by the app's lifespan
        self.db: Database | None = None  # set by the app's lifespan

    async def handle(self, request: Request) -> Response:
        headers = request.headers
        event = headers.get("x-github-event", "")
        body = await _read_body(request)
        if body is None:
            return _answer(event, "rejected", 413, _status("rejected", "body too large"))
        if not self._signed(body, headers.get("x-hub-signature-256")):
            log.warning("webhook rejected", reason="bad or missing signature")
            return _answer(event, "rejected", 401, _status("rejected", "bad or missing signature"))
        delivery_id = headers.get("x-github-delivery", "")
        problem = _header_problem(event, delivery_id)
        if problem is not None:
            log.info("webhook invalid", delivery_id=delivery_id, gh_event=event, detail=problem)
            return _answer(event, "invalid", 400, _status("invalid", problem))
        if event == "ping":
            return _answer(event, "ignored", 200, {"status": "pong"})
        try:
            routed = route(event, delivery_id, body)
        except InvalidPayload as error:
            log.info("webhook invalid", delivery_id=delivery_id, gh_event=event, detail=str(error))
            return _answer(event, "invalid", 400, _status("invalid", str(error)))
        if isinstance(routed, Ignored):
            log.info(
                "webhook ignored", delivery_id=delivery_id, gh_event=event, reason=routed.reason
            )
            return _answer(event, "ignored", 202, {"status": "ignored", "reason": routed.reason})
        return await self._enqueue(event, delivery_id, body, routed)

    def _signed(self, body: bytes, signature: str | None) -> bool:
        # githubkit's verify falls back to SHA-1 for other prefixes; only SHA-256 is accepted.
        if not signature or not signature.startswith("sha256="):
            return False
        return verify(self._secret, body, signature)

    async def _enqueue(
        self, event: str, delivery_id: str, body: bytes, request: JobRequest
    ) -> Response:
        identifier = job_id(request)
        context = {
            "delivery_id": delivery_id,
            "gh_event": event,
            "repo": request.repo,
            "pr": request.pr_number,
            "trigger": request.trigger,
            "job_id": identifier,
        }
        if self.redis is None:
            raise RuntimeError("the webhook receiver has no Redis pool (app not started)")
        received_at = datetime.now(UTC)
        try:
            outcome = await enqueue_bounded(
                self.redis, self.settings, delivery_id=delivery_id, body=body, request=request
            )
        except (RedisError, OSError, TimeoutError) as error:
            context["redis_error"] = type(error).__name__
            return await self._keep(event, delivery_id, body, request, received_at, context)
        log.info("webhook " + outcome.value, **context)
        if outcome is EnqueueOutcome.QUEUED:
            return _answer(event, "queued", 202, {"status": "queued", "job_id": identifier})
        answer = {"status": "duplicate", "job_id": identifier, "reason": _REASONS[outcome]}
        return _answer(event, "duplicate", 200, answer)

    async def _keep(
        self,
        event: str,
        delivery_id: str,
        body: bytes,
        request: JobRequest,
        received_at: datetime,
        context: Mapping[str, object],
    ) -> Response:
        """Redis did not take the delivery: keep it for the drainer, and answer 202."""
        if self.db is None:
            raise RuntimeError("the webhook receiver has no database (app not started)")
        try:
            new = await keep(
                self.db,
                delivery_id=delivery_id,
                body=body,
                request=request,
                received_at=received_at,
            )
        except (SQLAlchemyError, OSError, TimeoutError) as error:
            # 503 so GitHub records a failed delivery that an operator can redeliver.
            log.error("webhook not queued", error=type(error).__name__, **context)
            return _answer(event, "unavailable", 503, _status("unavailable", "redis and database"))
        log.warning("webhook kept", already_kept=not new, **context)
        answer = {"status": "kept", "job_id": job_id(request)}
        return _answer(event, "kept", 202, answer)


async def _read_body(request: Request) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _header_problem(event: str, delivery_id: str) -> str | None:
    if not event:
        return "missing X-GitHub-Event header"
    if not delivery_id:
        return "missing X-GitHub-Delivery header"
    if len(delivery_id) > _MAX_DELIVERY_ID or not delivery_id.isprintable():
        return "invalid X-GitHub-Delivery header"
    return None


def _status(status: str, detail: str) -> dict[str, str]:
    return {"status": status, "detail": detail}


def _answer(event: str, outcome: str, status: int, body: Mapping[str, object]) -> Response:
    DELIVERIES.labels(event=event if event in KNOWN_EVENTS else "other", outcome=outcome).inc()
    return JSONResponse(dict(body), status_code=status)
