"""House rule: a list people read is generated from its table (issue 24, item 7). A protocol
registered at run time (tests/support/echo_protocol.py) appears in `council review --help`,
in the `/council` grammar and its help, and in what a repository's config accepts; an
unknown protocol's error names the registry's protocols; and a protocol with a `button`
gets one on the check run, which the receiver routes to it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.commands import Command, grammar_help, parse_command
from bot.config.load import load_repo_config
from bot.council.protocols import PROTOCOLS, Button, names, register, unregister
from bot.queue.jobs import JobRequest
from bot.render.checks import CHECK_RUN_NAME, button_protocol, check_run_actions
from bot.settings import Settings
from bot.web.routing import Ignored, route
from tests.support.echo_protocol import ECHO, NAME, installed
from tests.support.webhooks import load


@pytest.fixture
def echo() -> Iterator[str]:
    with installed():
        yield NAME


def settings() -> Settings:
    return Settings.model_validate({"models": ["anthropic:claude-sonnet-5-5"]})


def protocol_help() -> str:
    done = CliRunner().invoke(app, ["review", "--help"], env={"COLUMNS": "300"})
    assert done.exit_code == 0, done.output
    (line,) = [line for line in done.output.splitlines() if "--protocol" in line]
    return line


def test_review_help_lists_the_registered_protocols(echo: str) -> None:
    line = protocol_help()
    assert all(name in line for name in names()) and f"strategies or {echo}" in line


def test_review_help_follows_the_table_when_a_protocol_goes() -> None:
    with installed():
        assert NAME in protocol_help()
    assert NAME not in protocol_help()


def test_the_command_grammar_reads_the_registry(echo: str) -> None:
    assert parse_command(f"/council {echo} is it safe?") == Command(
        kind="convene", protocol=echo, question="is it safe?"
    )
    assert f"or `{echo}`" in grammar_help()


def test_without_the_protocol_its_name_is_a_question() -> None:
    assert parse_command(f"/council {NAME}") == Command(kind="convene", question=NAME)


def test_the_config_accepts_a_registered_protocol(echo: str) -> None:
    result = load_repo_config(f"protocol: {echo}\npush_protocol: {echo}\n", settings())
    assert result.issues == []
    assert (result.config.protocol, result.config.push_protocol) == (echo, echo)


def test_an_unknown_protocol_is_refused_naming_the_registrys(echo: str) -> None:
    result = load_repo_config("protocol: nope\n", settings())
    (issue,) = result.issues
    listed = ", ".join(repr(name) for name in names()[:-1])
    assert issue.reason == f"Input should be {listed} or {echo!r}"
    assert result.config.protocol == names()[0]


def pressed(identifier: str) -> JobRequest | Ignored:
    """The receiver's answer to a press of button `identifier` on the App's check run."""
    payload = load("check_run", "requested_action.payload.json")
    payload["check_run"]["name"] = CHECK_RUN_NAME
    payload["requested_action"] = {"identifier": identifier}
    routed = route("check_run", "delivery", json.dumps(payload).encode())
    assert isinstance(routed, JobRequest | Ignored)
    return routed


def test_the_check_runs_buttons_are_the_protocols_that_have_one() -> None:
    actions = check_run_actions()
    with_button = [p for p in PROTOCOLS.values() if p.button is not None]
    assert [a.identifier for a in actions] == ["reconvene", *(p.name for p in with_button)]
    assert ("Full debate", "Convene a full debate") in [(a.label, a.description) for a in actions]
    register(replace(ECHO, button=Button("Echo", "Convene the echo")))
    try:
        assert check_run_actions()[-1].identifier == NAME
        assert button_protocol(NAME) == NAME
        routed = pressed(NAME)
        assert isinstance(routed, JobRequest)
        assert (routed.trigger, routed.action, routed.protocol) == (
            "requested_action",
            NAME,
            NAME,
        )
    finally:
        unregister(NAME)
    assert pressed(NAME) == Ignored(f"unknown button {NAME!r}")
    assert NAME not in [a.identifier for a in check_run_actions()]
