"""`POST /webhooks/github`: verify, route, deduplicate and enqueue - nothing slower.

The receiver never calls GitHub or a model; one Redis round trip per routed delivery
(`enqueue_once`), so it answers in milliseconds and GitHub's 10-second timeout never bites.
When Redis fails or does not answer within its deadline (a frozen Redis never does), the
delivery is kept in the database and answered 202 `kept`; the drainer in `outbox`
enqueues it once Redis is back. Only if the database fails too is the answer 503.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import UTC, datetime

import structlog
from arq.connections import ArqRedis
from prometheus_client import Counter
from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError
from starlette.types import Receive, Scope, Send

from bot.metrics import DELIVERIES
from bot.queue.enqueue import BodyDigest, EnqueueOutcome
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
_HEADERS = frozenset({b"x-github-event", b"x-github-delivery", b"x-hub-signature-256"})
# The counter child of each (event, outcome) pair, looked up once.
_COUNTERS: dict[tuple[str, str], Counter] = {}
# GitHub caps payloads at 25 MB; anything longer is not GitHub, and is not read into memory.
MAX_BODY_BYTES = 25 * 1024 * 1024


class WebhookReceiver:
    """Holds the secret, the Redis pool and the database; `handle` is the Starlette
    endpoint."""

    def __init__(self, settings: Settings, secret: str) -> None:
        self.settings = settings
        self._key = secret.encode()
        self.redis: ArqRedis | None = None  # set by the app's lifespan
        self.db: Database | None = None  # set by the app's lifespan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The endpoint as a bare ASGI app: the app hands it POSTs to `WEBHOOK_PATH` before
        any middleware, so a delivery costs its own work and little else."""
        try:
            status, answer = await self._respond(scope, receive)
        except _Disconnected:
            return  # nobody is waiting for an answer
        except Exception:
            # As Starlette's ServerErrorMiddleware would: a plain 500, then the error.
            await _send(send, 500, b"Internal Server Error", b"text/plain; charset=utf-8")
            raise
        await _send(send, status, _render(answer), b"application/json")

    async def _respond(self, scope: Scope, receive: Receive) -> tuple[int, Mapping[str, object]]:
        # The three headers, first occurrence of each (as Starlette's `Headers.get`).
        found: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in _HEADERS and name not in found:
                found[name] = value
        event = found.get(b"x-github-event", b"").decode("latin-1")
        delivery_id = found.get(b"x-github-delivery", b"").decode("latin-1")
        body = await _read_body(receive)
        if body is None:
            return _answer(event, "rejected", 413, _status("rejected", "body too large"))
        digest = self._signed(body, found.get(b"x-hub-signature-256"))
        if digest is None:
            log.warning("webhook rejected", reason="bad or missing signature")
            return _answer(event, "rejected", 401, _status("rejected", "bad or missing signature"))
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
        return await self._enqueue(event, delivery_id, digest, routed)

    def _signed(self, body: bytes, signature: bytes | None) -> BodyDigest | None:
        """The body's HMAC-SHA256 under the secret if `signature` is it, else None. Only
        SHA-256 is accepted. The HMAC then stands for the body in deduplication: computed
        here, never read from the header, so one body always has one digest (and the body
        is not hashed a second time)."""
        if not signature or not signature.startswith(b"sha256="):
            return None
        expected = hmac.new(self._key, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(b"sha256=" + expected.encode(), signature):
            return None
        return BodyDigest(expected)

    async def _enqueue(
        self, event: str, delivery_id: str, body: BodyDigest, request: JobRequest
    ) -> tuple[int, Mapping[str, object]]:
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
        body: BodyDigest,
        request: JobRequest,
        received_at: datetime,
        context: Mapping[str, object],
    ) -> tuple[int, Mapping[str, object]]:
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


class _Disconnected(Exception):
    """The client went away before its body arrived."""


async def _read_body(receive: Receive) -> bytes | None:
    """The raw body, or None past `MAX_BODY_BYTES` (the rest is never read)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


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


def _answer(
    event: str, outcome: str, status: int, body: Mapping[str, object]
) -> tuple[int, Mapping[str, object]]:
    key = (event if event in KNOWN_EVENTS else "other", outcome)
    counter = _COUNTERS.get(key)
    if counter is None:
        counter = _COUNTERS[key] = DELIVERIES.labels(event=key[0], outcome=outcome)
    counter.inc()
    return status, body


def _render(body: Mapping[str, object]) -> bytes:
    # As Starlette's JSONResponse renders.
    return json.dumps(
        body, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode()


async def _send(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    headers = [(b"content-length", str(len(body)).encode()), (b"content-type", content_type)]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
