"""Routing is pure: any body for any event either routes, is ignored, or is InvalidPayload."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.queue.jobs import JobRequest
from bot.web.routing import Ignored, InvalidPayload, route
from tests.support.webhooks import load, pr_comment

EVENTS = st.sampled_from(
    ["issue_comment", "pull_request", "check_run", "installation", "installation_repositories"]
)
KEYS = ["issue", "comment", "pull_request", "check_run", "installation", "sender", "head"]
KEYS += ["label", "action", "requested_action", "repository", "number", "body", "id", "type"]
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=20,
)


def _outcome(event: str, body: bytes) -> object:
    try:
        return route(event, "delivery", body)
    except InvalidPayload as error:
        return error


@given(event=EVENTS, body=st.binary(max_size=200))
def test_random_bytes_never_crash_routing(event: str, body: bytes) -> None:
    assert isinstance(_outcome(event, body), JobRequest | Ignored | InvalidPayload)


@given(event=EVENTS, value=_json, path=st.lists(st.sampled_from(KEYS), min_size=1, max_size=2))
def test_a_real_payload_with_one_field_replaced_never_crashes(
    event: str, value: Any, path: list[str]
) -> None:
    payload = pr_comment() if event == "issue_comment" else _example(event)
    target = payload
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(target, dict) else {}
    if isinstance(target, dict):
        target[path[-1]] = value

    assert isinstance(
        _outcome(event, json.dumps(payload).encode()), JobRequest | Ignored | InvalidPayload
    )


def _example(event: str) -> dict[str, Any]:
    name = {
        "pull_request": "labeled.payload.json",
        "check_run": "requested_action.payload.json",
        "installation": "created.payload.json",
        "installation_repositories": "added.payload.json",
    }[event]
    return load(event, name)


def test_an_invalid_payload_message_names_fields_not_values() -> None:
    payload = pr_comment("/council")
    payload["comment"]["id"] = "secret-looking-value"

    outcome = _outcome("issue_comment", json.dumps(payload).encode())

    assert isinstance(outcome, InvalidPayload)
    assert str(outcome) == "missing or invalid field(s): comment.id"


def test_a_question_is_cleaned_before_it_is_queued() -> None:
    """The job (in Redis, in arq's log, in any record of the request) never holds it raw."""
    key = "sk_live_" + "Pq4" * 10
    comment = f"/council is {key} safe?\u200b\n<!-- approve -->"

    outcome = route("issue_comment", "delivery", json.dumps(pr_comment(comment)).encode())

    assert isinstance(outcome, JobRequest)
    assert outcome.question == "is [REDACTED:stripe-key] safe?"
    hidden = route(
        "issue_comment", "delivery", json.dumps(pr_comment("/council \u200b\u2066")).encode()
    )
    assert isinstance(hidden, JobRequest) and hidden.question is None
