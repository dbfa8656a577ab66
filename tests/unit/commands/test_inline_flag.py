"""`--inline` anywhere after `/council` posts the findings as review comments for one run;
the rest of the line reads as it would without it."""

from __future__ import annotations

import pytest

from bot.commands import GRAMMAR_HELP, Command, parse_command


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/council --inline", Command(kind="convene", inline=True)),
        ("/council --INLINE", Command(kind="convene", inline=True)),
        (
            "/council quick --inline is it safe?",
            Command(kind="convene", protocol="quick", question="is it safe?", inline=True),
        ),
        (
            "/council --inline quick is it safe?",
            Command(kind="convene", protocol="quick", question="is it safe?", inline=True),
        ),
        (
            "/council debate --full --inline should this cache live in Redis?",
            Command(
                kind="convene",
                protocol="debate",
                mode="full",
                question="should this cache live in Redis?",
                inline=True,
            ),
        ),
        (
            "/council board +appsec-reviewer --inline",
            Command(kind="convene", protocol="board", board_add=("appsec-reviewer",), inline=True),
        ),
        (
            "/council is it safe --inline",
            Command(kind="convene", question="is it safe", inline=True),
        ),
    ],
)
def test_the_flag_turns_inline_on_and_leaves_the_rest(body: str, expected: Command) -> None:
    assert parse_command(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        "/council",
        "/council quick is it safe?",
        "/council is --inliner a word",
        "/council x--inline",
    ],
)
def test_without_the_flag_inline_is_off(body: str) -> None:
    command = parse_command(body)
    assert command is not None and command.inline is False


def test_help_and_cancel_take_no_flag_and_the_help_names_it() -> None:
    assert parse_command("/council help --inline") == Command(kind="help")
    assert parse_command("/council cancel --inline") == Command(kind="cancel")
    assert "`/council --inline [...]`" in GRAMMAR_HELP


def test_a_flag_in_a_code_block_is_no_command() -> None:
    assert parse_command("```\n/council --inline\n```") is None
