"""The webhook receiver on uvicorn with real Redis, driven by GitHub's example payloads."""

from __future__ import annotations

import asyncio
import hmac
import json
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from arq.connections import ArqRedis
from prometheus_client.parser import text_string_to_metric_families

from bot.queue.enqueue import delivery_key
from bot.queue.jobs import JobRequest, job_id
from bot.settings import Settings
from bot.web.app import create_app
from tests.support.webhooks import (
    SECRET,
    cleanup,
    headers,
    load,
    make_settings,
    open_redis,
    pr_comment,
    queued_jobs,
    serve,
    sign,
    unique_id,
)


@dataclass
class Receiver:
    client: httpx.AsyncClient
    redis: ArqRedis
    settings: Settings

    async def post(
        self, event: str, payload: dict[str, Any] | bytes, delivery_id: str | None = None
    ) -> httpx.Response:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return await self.client.post(
            "/webhooks/github", content=body, headers=headers(event, body, delivery_id)
        )

    async def jobs(self) -> dict[str, tuple[str, JobRequest]]:
        return await queued_jobs(self.redis, self.settings)


@pytest.fixture(scope="module")
async def running() -> AsyncIterator[Receiver]:
    """One server per module (start-up and shutdown cost ~0.2 s); tests clean up after."""
    settings = make_settings()
    redis = await open_redis(settings)
    try:
        async with (
            serve(create_app(settings)) as url,
            httpx.AsyncClient(base_url=url, timeout=5) as client,
        ):
            yield Receiver(client, redis, settings)
    finally:
        await redis.aclose()


@pytest.fixture
async def receiver(running: Receiver) -> AsyncIterator[Receiver]:
    await cleanup(running.redis, running.settings)
    yield running
    await cleanup(running.redis, running.settings)


def _pull_request(name: str) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        payload = load("pull_request", name)
        payload["pull_request"]["number"] = unique_id()
        payload["pull_request"]["head"]["sha"] = uuid.uuid4().hex + "00000000"
        return payload

    return build


def _check_run(name: str, identifier: str | None = None) -> Callable[[], dict[str, Any]]:
    def build() -> dict[str, Any]:
        payload = load("check_run", name)
        payload["check_run"]["name"] = "Council"
        payload["check_run"]["id"] = unique_id()
        if identifier is not None:
            payload["requested_action"]["identifier"] = identifier
        return payload

    return build


def _bot_comment() -> dict[str, Any]:
    payload = pr_comment("/council")
    payload["sender"].update(type="Bot", login="some-app[bot]")
    return payload


def _fixture(event: str, name: str) -> Callable[[], dict[str, Any]]:
    return lambda: load(event, name)


def _pr_fields(payload: dict[str, Any]) -> dict[str, Any]:
    pull = payload["pull_request"]
    return {
        "repo": "Codertocat/Hello-World",
        "pr_number": pull["number"],
        "head_sha": pull["head"]["sha"],
        "installation_id": 1,
        "sender_login": "Codertocat",
        "draft": False,
    }


def _comment_fields(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "repo": "Codertocat/Hello-World",
        "pr_number": 1,
        "installation_id": 1,
        "sender_login": "Codertocat",
        "comment_id": payload["comment"]["id"],
    }


def _check_fields(payload: dict[str, Any]) -> dict[str, Any]:
    run = payload["check_run"]
    prs = run["pull_requests"]
    return {
        "repo": payload["repository"]["full_name"],
        "pr_number": prs[0]["number"] if prs else None,
        "head_sha": run["head_sha"],
        "installation_id": payload["installation"]["id"],
        "sender_login": payload["sender"]["login"],
        "check_run_id": run["id"],
    }


# event, payload builder, expected function, expected JobRequest fields (beyond delivery_id)
ROUTED: list[
    tuple[str, Callable[[], dict[str, Any]], str, Callable[[dict[str, Any]], dict[str, Any]]]
] = [
    (
        "issue_comment",
        lambda: pr_comment("/council"),
        "deliberate",
        lambda p: {"trigger": "command", **_comment_fields(p)},
    ),
    (
        "issue_comment",
        lambda: pr_comment("Thanks!\r\n\r\n/COUNCIL Debate should this cache live in Redis?"),
        "deliberate",
        lambda p: {
            "trigger": "command",
            "protocol": "debate",
            "question": "should this cache live in Redis?",
            **_comment_fields(p),
        },
    ),
    (
        "issue_comment",
        lambda: pr_comment("/council help"),
        "reply_help",
        lambda p: {"trigger": "help", **_comment_fields(p)},
    ),
    (
        "issue_comment",
        lambda: pr_comment("/council cancel"),
        "cancel",
        lambda p: {"trigger": "cancel", **_comment_fields(p)},
    ),
    (
        "pull_request",
        _pull_request("labeled.payload.json"),
        "deliberate",
        lambda p: {"trigger": "label", "label": "bug", **_pr_fields(p)},
    ),
    (
        "pull_request",
        _pull_request("labeled.with-organization.payload.json"),
        "deliberate",
        lambda p: {"trigger": "label", "label": "bug", **_pr_fields(p)},
    ),
    *[
        (
            "pull_request",
            _pull_request(name),
            "deliberate",
            lambda p: {"trigger": "push", **_pr_fields(p)},
        )
        for name in (
            "synchronize.payload.json",
            "ready_for_review.with-installation.payload.json",
            "reopened.payload.json",
        )
    ],
    (
        "pull_request",
        _pull_request("closed.payload.json"),
        "record_outcome",
        lambda p: {"trigger": "closed", "merged": False, **_pr_fields(p)},
    ),
    (
        "check_run",
        _check_run("rerequested.payload.json"),
        "deliberate",
        lambda p: {"trigger": "rerequest", **_check_fields(p)},
    ),
    (
        "check_run",
        _check_run("requested_action.payload.json", "debate"),
        "deliberate",
        lambda p: {
            "trigger": "requested_action",
            "action": "debate",
            "protocol": "debate",
            **_check_fields(p),
        },
    ),
    (
        "check_run",
        _check_run("requested_action.payload.json", "reconvene"),
        "deliberate",
        lambda p: {"trigger": "requested_action", "action": "reconvene", **_check_fields(p)},
    ),
    (
        "installation",
        _fixture("installation", "created.payload.json"),
        "record_installation",
        lambda p: {
            "trigger": "installation",
            "installation_id": 957387,
            "installation_action": "created",
            "account": "Codertocat",
            "sender_login": "Codertocat",
            "repositories": ["Codertocat/Hello-World"],
        },
    ),
    (
        "installation",
        _fixture("installation", "suspend.payload.json"),
        "record_installation",
        lambda p: {
            "trigger": "installation",
            "installation_id": 16598467,
            "installation_action": "suspend",
            "account": "Codertocat",
            "sender_login": "Codertocat",
        },
    ),
    (
        "installation_repositories",
        _fixture("installation_repositories", "added.payload.json"),
        "record_installation",
        lambda p: {
            "trigger": "installation",
            "installation_id": 957387,
            "installation_action": "added",
            "account": "Codertocat",
            "sender_login": "Codertocat",
            "repositories": ["Codertocat/Space"],
        },
    ),
]


@pytest.mark.parametrize(
    ("event", "build", "function", "expected"),
    ROUTED,
    ids=[f"{case[0]}-{index}" for index, case in enumerate(ROUTED)],
)
async def test_each_routed_event_queues_its_job(
    receiver: Receiver,
    event: str,
    build: Callable[[], dict[str, Any]],
    function: str,
    expected: Callable[[dict[str, Any]], dict[str, Any]],
) -> None:
    payload = build()
    delivery_id = str(uuid.uuid4())
    want = JobRequest(delivery_id=delivery_id, **expected(payload))

    response = await receiver.post(event, payload, delivery_id)

    assert response.status_code == 202, response.text
    assert response.json() == {"status": "queued", "job_id": job_id(want)}
    assert await receiver.jobs() == {job_id(want): (function, want)}


async def test_bad_signature_is_401_and_touches_nothing(receiver: Receiver) -> None:
    body = json.dumps(pr_comment()).encode()
    wrong = headers("issue_comment", body) | {"X-Hub-Signature-256": sign(body, "not-the-secret")}

    response = await receiver.client.post("/webhooks/github", content=body, headers=wrong)

    assert response.status_code == 401
    assert response.json() == {"status": "rejected", "detail": "bad or missing signature"}
    assert await receiver.jobs() == {}
    assert not await receiver.redis.exists(
        delivery_key(receiver.settings, wrong["X-GitHub-Delivery"])
    )
    assert [key async for key in receiver.redis.scan_iter(f"{receiver.settings.queue_name}*")] == []


@pytest.mark.parametrize("signature", [None, "", "sha256=", "sha1=0123abcd", "sha256=00ff"])
async def test_missing_or_malformed_signature_is_401(
    receiver: Receiver, signature: str | None
) -> None:
    body = json.dumps(pr_comment()).encode()
    sent = headers("issue_comment", body)
    del sent["X-Hub-Signature-256"]
    if signature is not None:
        sent["X-Hub-Signature-256"] = signature

    response = await receiver.client.post("/webhooks/github", content=body, headers=sent)

    assert response.status_code == 401
    assert await receiver.jobs() == {}


async def test_a_sha1_signature_in_the_sha256_header_is_refused(receiver: Receiver) -> None:
    body = json.dumps(pr_comment()).encode()
    sha1 = "sha1=" + hmac.new(SECRET.encode(), body, "sha1").hexdigest()
    sent = headers("issue_comment", body) | {"X-Hub-Signature-256": sha1}

    response = await receiver.client.post("/webhooks/github", content=body, headers=sent)

    assert response.status_code == 401


async def test_a_signature_is_compared_exactly(receiver: Receiver) -> None:
    """Only GitHub's own spelling (lower-case hex) of the right HMAC: the HMAC is also the
    body's identity for replay detection, so no second spelling of it may pass."""
    body = json.dumps(pr_comment()).encode()
    digest = hmac.new(SECRET.encode(), body, "sha256").hexdigest()
    for signature in ("sha256=" + digest.upper(), "SHA256=" + digest, "sha256=" + digest + "00"):
        sent = headers("issue_comment", body) | {"X-Hub-Signature-256": signature}

        response = await receiver.client.post("/webhooks/github", content=body, headers=sent)

        assert response.status_code == 401, signature
    assert await receiver.jobs() == {}


async def test_malformed_json_is_400(receiver: Receiver) -> None:
    response = await receiver.post("issue_comment", b'{"action": "created", "issue": ')

    assert response.status_code == 400
    assert response.json() == {"status": "invalid", "detail": "body is not valid JSON"}
    assert await receiver.jobs() == {}


async def test_missing_routing_field_is_400_naming_it(receiver: Receiver) -> None:
    payload = pr_comment()
    del payload["comment"]["id"]

    response = await receiver.post("issue_comment", payload)

    assert response.status_code == 400
    assert response.json() == {
        "status": "invalid",
        "detail": "missing or invalid field(s): comment.id",
    }


async def test_labeled_without_a_label_is_400(receiver: Receiver) -> None:
    payload = _pull_request("labeled.payload.json")()
    del payload["label"]

    response = await receiver.post("pull_request", payload)

    assert response.status_code == 400
    assert "label" in response.json()["detail"]


async def test_missing_event_or_delivery_header_is_400(receiver: Receiver) -> None:
    body = json.dumps(pr_comment()).encode()
    for missing in ("X-GitHub-Event", "X-GitHub-Delivery"):
        sent = headers("issue_comment", body)
        del sent[missing]
        response = await receiver.client.post("/webhooks/github", content=body, headers=sent)
        assert response.status_code == 400
        assert missing in response.json()["detail"]


async def test_ping_is_200(receiver: Receiver) -> None:
    response = await receiver.post("ping", load("ping", "with-app_id.payload.json"))

    assert response.status_code == 200
    assert response.json() == {"status": "pong"}


@pytest.mark.parametrize(
    ("event", "build", "reason"),
    [
        ("check_suite", _fixture("check_suite", "requested.payload.json"), "not handled"),
        ("issue_comment", _bot_comment, "comment by a bot"),
        (
            "issue_comment",
            lambda: pr_comment("/council") | {"action": "edited"},
            "issue_comment.edited",
        ),
        (
            "issue_comment",
            lambda: pr_comment("/council") | {"action": "deleted"},
            "issue_comment.deleted",
        ),
        ("issue_comment", _fixture("issue_comment", "created.payload.json"), "not a pull request"),
        ("issue_comment", lambda: pr_comment("LGTM, thanks"), "no /council command"),
        ("issue_comment", lambda: pr_comment("```\n/council\n```"), "no /council command"),
        ("issue_comment", lambda: pr_comment("> /council"), "no /council command"),
        ("pull_request", _pull_request("opened.payload.json"), "pull_request.opened"),
        ("pull_request", _pull_request("unlabeled.payload.json"), "pull_request.unlabeled"),
        ("check_run", _fixture("check_run", "rerequested.payload.json"), "not the App's"),
        ("check_run", _check_run("created.payload.json"), "check_run.created"),
        ("check_run", _check_run("requested_action.payload.json"), "unknown button"),
    ],
    ids=lambda value: value if isinstance(value, str) and " " not in value else None,
)
async def test_deliveries_that_are_not_triggers_are_ignored(
    receiver: Receiver, event: str, build: Callable[[], dict[str, Any]], reason: str
) -> None:
    response = await receiver.post(event, build())

    assert response.status_code == 202
    assert response.json()["status"] == "ignored"
    assert reason in response.json()["reason"]
    assert await receiver.jobs() == {}


async def test_ten_concurrent_copies_of_one_delivery_make_one_job(receiver: Receiver) -> None:
    payload = pr_comment("/council quick")
    delivery_id = str(uuid.uuid4())

    responses = await asyncio.gather(
        *(receiver.post("issue_comment", payload, delivery_id) for _ in range(10))
    )

    statuses = sorted(response.json()["status"] for response in responses)
    assert statuses == ["duplicate"] * 9 + ["queued"]
    assert list(await receiver.jobs()) == [f"comment:{payload['comment']['id']}"]


async def test_a_redelivery_is_a_duplicate_and_a_second_comment_is_a_second_job(
    receiver: Receiver,
) -> None:
    first, second = pr_comment("/council"), pr_comment("/council")
    delivery_id = str(uuid.uuid4())

    assert (await receiver.post("issue_comment", first, delivery_id)).status_code == 202
    again = await receiver.post("issue_comment", first, delivery_id)
    assert (await receiver.post("issue_comment", second)).status_code == 202

    assert again.status_code == 200
    assert again.json()["status"] == "duplicate"
    assert sorted(await receiver.jobs()) == sorted(
        f"comment:{payload['comment']['id']}" for payload in (first, second)
    )


async def test_a_signed_body_replayed_under_a_new_delivery_id_makes_no_second_job(
    receiver: Receiver,
) -> None:
    body = json.dumps(pr_comment("/council")).encode()
    other = json.dumps(pr_comment("/council")).encode()

    first = await receiver.post("issue_comment", body, str(uuid.uuid4()))
    replayed = await receiver.post("issue_comment", body, str(uuid.uuid4()))
    second = await receiver.post("issue_comment", other, str(uuid.uuid4()))

    assert first.json()["status"] == second.json()["status"] == "queued"
    assert replayed.status_code == 200
    assert replayed.json() == {
        "status": "duplicate",
        "job_id": first.json()["job_id"],
        "reason": "body seen",
    }
    assert sorted(await receiver.jobs()) == sorted(
        [first.json()["job_id"], second.json()["job_id"]]
    )


async def test_health_readiness_and_metrics(receiver: Receiver) -> None:
    before = await _delivery_counts(receiver.client)
    payload = pr_comment("/council")
    delivery_id = str(uuid.uuid4())
    await receiver.post("issue_comment", payload, delivery_id)
    await receiver.post("issue_comment", payload, delivery_id)
    await receiver.post("issue_comment", pr_comment("no command here"))

    assert (await receiver.client.get("/healthz")).json() == {"status": "ok"}
    assert (await receiver.client.get("/readyz")).status_code == 200
    after = await _delivery_counts(receiver.client)
    for outcome in ("queued", "duplicate", "ignored"):
        key = ("issue_comment", outcome)
        assert after.get(key, 0) - before.get(key, 0) == 1, outcome


async def _delivery_counts(client: httpx.AsyncClient) -> dict[tuple[str, str], float]:
    response = await client.get("/metrics")
    assert response.status_code == 200
    counts = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name == "council_webhook_deliveries_total":
                counts[(sample.labels["event"], sample.labels["outcome"])] = sample.value
    return counts


async def test_without_redis_it_is_degraded_and_a_routed_delivery_is_kept() -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings = make_settings(redis_url=f"redis://127.0.0.1:{port}/0")
    dead = ArqRedis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
    async with (
        serve(create_app(settings, redis=dead)) as url,
        httpx.AsyncClient(base_url=url, timeout=5) as client,
    ):
        ready = await client.get("/readyz")
        body = json.dumps(pr_comment()).encode()
        response = await client.post(
            "/webhooks/github", content=body, headers=headers("issue_comment", body)
        )
        assert (await client.get("/healthz")).status_code == 200
    await dead.aclose()

    # Still ready to take deliveries (GitHub must reach it), and it says why it is degraded.
    assert ready.status_code == 200 and ready.json()["status"] == "degraded"
    # Kept in the database, for the drainer to enqueue once Redis is back (test_receiver_outage).
    assert response.status_code == 202
    assert response.json()["status"] == "kept"


async def test_a_second_delivery_for_a_kept_job_is_a_duplicate(receiver: Receiver) -> None:
    reopened = _pull_request("reopened.payload.json")()
    ready = load("pull_request", "ready_for_review.with-installation.payload.json")
    ready["pull_request"].update(number=reopened["pull_request"]["number"])
    ready["pull_request"]["head"]["sha"] = reopened["pull_request"]["head"]["sha"]

    first = await receiver.post("pull_request", reopened)
    second = await receiver.post("pull_request", ready)

    assert first.json()["status"] == "queued"
    assert second.status_code == 200
    assert second.json() == {
        "status": "duplicate",
        "job_id": first.json()["job_id"],
        "reason": "job exists",
    }
    assert list(await receiver.jobs()) == [first.json()["job_id"]]


async def test_a_body_longer_than_githubs_cap_is_refused_unread(receiver: Receiver) -> None:
    body = b"{" + b" " * (25 * 1024 * 1024) + b"}"

    response = await receiver.post("issue_comment", body)

    assert response.status_code == 413
    assert response.json()["status"] == "rejected"
