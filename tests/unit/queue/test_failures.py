"""What a failed deliberation's check run says: a sentence for people, never the exception."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy.exc import OperationalError

from bot.council.convene import ConveneError
from bot.forge.errors import ForgeAuthError, ForgeNotFound, ForgeRateLimited, ForgeUnavailable
from bot.pr.failures import explain_failure
from bot.providers import ConfigurationError, ProviderTimeout, ServerError

DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
AGAIN = "It will not retry this run; comment `/council` on the pull request to try again."


def _sql_error() -> OperationalError:
    """A real one: SQLAlchemy puts the statement and its parameters in the message."""
    engine = sqlalchemy.create_engine("sqlite://")
    with engine.connect() as connection, pytest.raises(OperationalError) as caught:
        connection.execute(sqlalchemy.text("SELECT token FROM installations WHERE id = 7"))
    return caught.value


def test_a_github_server_error_says_what_could_not_be_read_and_what_to_do() -> None:
    error = ForgeUnavailable(
        "Internal Server Error", status=502, method="GET", path="/repos/octo/repo/pulls/12"
    )

    assert explain_failure(error, delivery_id=DELIVERY) == (
        f"The council could not read the pull request from GitHub (server error). {AGAIN}"
    )


@pytest.mark.parametrize(
    ("error", "sentence"),
    [
        (
            ForgeNotFound("Not Found", status=404, method="GET", path="/repos/o/r/git/trees/ab"),
            "The council could not read the repository's file tree from GitHub (not found: "
            "it may have been deleted, or the App cannot see it).",
        ),
        (
            ForgeAuthError(
                "Resource not accessible by integration",
                status=403,
                method="POST",
                path="/repos/o/r/check-runs",
            ),
            "The council could not create the check run on GitHub (access refused: the App's "
            "installation lacks Checks: write, which an owner grants in the installation's "
            "settings).",
        ),
        (
            ForgeRateLimited(
                "API rate limit exceeded",
                retry_after=timedelta(minutes=30),
                status=403,
                method="PATCH",
                path="/repos/o/r/issues/comments/9",
            ),
            "The council could not update the council's comment on GitHub (the App's rate "
            "limit was reached).",
        ),
        (
            ForgeUnavailable("timed out", method="GET", path="/repos/o/r/contents/a.py"),
            "The council could not read a file of the repository from GitHub (no answer in time).",
        ),
        (
            ForgeUnavailable("request failed (ConnectError)"),
            "The council could not reach GitHub (no connection).",
        ),
    ],
)
def test_github_errors_name_the_object_and_the_cause(error: Exception, sentence: str) -> None:
    assert explain_failure(error, delivery_id=DELIVERY) == f"{sentence} {AGAIN}"


def test_a_database_error_shows_no_sql_and_points_the_operator_at_the_log() -> None:
    text = explain_failure(_sql_error(), delivery_id=DELIVERY)

    assert text.startswith("The council could not read or write its database. " + AGAIN)
    assert f"under delivery `{DELIVERY}`" in text
    for leak in ("SELECT", "installations", "sqlite", "OperationalError", "[SQL"):
        assert leak not in text


def test_provider_errors_say_what_went_wrong_without_hosts_keys_or_models() -> None:
    server = ServerError(
        "500 from https://llm.internal.example/v1/messages", model="anthropic:claude-x"
    )
    timeout = ProviderTimeout("no answer after 120 s", model="openai:gpt-x")
    missing = ConfigurationError("ANTHROPIC_API_KEY is not set")

    assert explain_failure(server, delivery_id=DELIVERY) == (
        f"The deliberation stopped because a model provider had a server error. {AGAIN}"
    )
    assert explain_failure(timeout, delivery_id=DELIVERY) == (
        f"The deliberation stopped because a model did not answer in time. {AGAIN}"
    )
    said = explain_failure(missing, delivery_id=DELIVERY)
    assert said.startswith(
        "The council could not call a model: the App's model settings are incomplete"
    )
    assert "operator must fix them" in said and DELIVERY in said
    for error in (server, timeout, missing):
        text = explain_failure(error, delivery_id=DELIVERY)
        for leak in ("https://", "internal", "claude", "gpt", "API_KEY"):
            assert leak not in text


def test_a_configuration_the_council_cannot_convene_keeps_its_message_for_the_user() -> None:
    error = ConveneError("pinned persona(s) not in the catalog: rust-wizard")

    assert explain_failure(error, delivery_id=DELIVERY) == (
        "The council could not be convened as configured: pinned persona(s) not in the "
        "catalog: rust-wizard. Fix `.github/council.yml` (or the command), then comment "
        "`/council` to try again."
    )


def test_redis_timeouts_and_anything_else_get_a_sentence_not_a_traceback() -> None:
    redis = RedisConnectionError("Error 111 connecting to 10.0.0.5:6379. Connection refused.")
    strange = KeyError("advisory_json")

    assert explain_failure(redis, delivery_id=DELIVERY).startswith(
        f"The council lost its connection to its job queue. {AGAIN}"
    )
    assert explain_failure(TimeoutError(), delivery_id=DELIVERY) == (
        f"A step of the deliberation took too long and was stopped. {AGAIN}"
    )
    assert explain_failure(strange, delivery_id=DELIVERY) == (
        f"The council failed with an internal error. {AGAIN} If it fails again, the App's "
        f"operator can find the details in the worker's log under delivery `{DELIVERY}`."
    )
    assert "10.0.0.5" not in explain_failure(redis, delivery_id=DELIVERY)


def test_a_refused_workflow_token_gets_the_workflow_permissions_hint() -> None:
    """The Action's 403 names the job's `permissions:` and the one missing, not the App's
    installation settings, which a workflow does not have."""
    refused = ForgeAuthError(
        "Resource not accessible by integration",
        status=403,
        method="POST",
        path="/repos/o/r/check-runs",
    )
    said = explain_failure(refused, delivery_id="d", runner="action")
    assert "the workflow's token lacks `checks: write`" in said
    assert "`permissions:`" in said
    assert "installation" not in said
