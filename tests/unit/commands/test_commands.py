"""The `/council` grammar: what is a command, and what it asks for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.commands import GRAMMAR_HELP, Command, parse_command
from bot.council.protocols import names


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/council", Command("convene")),
        ("/council   ", Command("convene")),
        ("/COUNCIL", Command("convene")),
        ("/council help", Command("help")),
        ("/Council HELP", Command("help")),
        ("/council help me please", Command("help")),
        ("/council cancel", Command("cancel")),
        ("/council Cancel", Command("cancel")),
        ("/council board", Command("convene", protocol="board")),
        ("/council QUICK", Command("convene", protocol="quick")),
        ("/council council", Command("convene", protocol="council")),
        (
            "/council debate should this cache live in Redis?",
            Command("convene", protocol="debate", question="should this cache live in Redis?"),
        ),
        (
            "/council why is this slow",
            Command("convene", question="why is this slow"),
        ),
        ("/council\tquick  is it safe?  ", Command("convene", "quick", "is it safe?")),
        ("   /council", Command("convene")),
        ("Looks good to me.\n\n/council quick", Command("convene", protocol="quick")),
        ("Thanks!\r\n/council help\r\n", Command("help")),
        ("/council cancel\n/council help", Command("cancel")),  # the first line wins
        ("```\n/council help\n```\n/council cancel", Command("cancel")),
        ("~~~~\n/council help\n~~~\n/council quick\n~~~~\n/council", Command("convene")),
        ("<!-- /council help -->\n/council cancel", Command("cancel")),
        ("<!--\n/council help\n-->\n/council cancel", Command("cancel")),
    ],
)
def test_commands(body: str, expected: Command) -> None:
    assert parse_command(body) == expected


@pytest.mark.parametrize(
    "body",
    [
        "",
        "council",
        "please run /council",
        "/councilor",
        "/council, please",
        "/councils help",
        "> /council",
        ">/council help",
        "- /council",
        "`/council`",
        "    /council",  # indented code
        "\t/council",
        "```\n/council\n```",
        "```python\n/council\n```",
        "~~~\n/council\n~~~",
        "````\n```\n/council\n````",  # a shorter fence does not close a longer one
        "```\nunclosed fence\n/council",
        "<!--\n/council\n-->",
        "council please",
    ],
)
def test_not_commands(body: str) -> None:
    assert parse_command(body) is None


def test_protocol_names_are_the_tables() -> None:
    from bot.council.protocols import PROTOCOLS

    assert tuple(PROTOCOLS) == names()


def test_help_text_names_every_command_and_protocol() -> None:
    for word in ("/council help", "/council cancel", *names()):
        assert word in GRAMMAR_HELP


@given(st.text())
def test_any_text_parses_without_error(body: str) -> None:
    result = parse_command(body)
    assert result is None or result.kind in ("convene", "help", "cancel")


_plain_line = st.text(
    alphabet=st.characters(blacklist_characters="`~\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
    max_size=40,
)
_command_line = st.tuples(
    st.sampled_from(["", " ", "  ", "   "]),
    st.sampled_from(["/council", "/COUNCIL", "/Council"]),
    st.sampled_from(["", " help", " cancel", " debate why?", " why is this slow"]),
).map("".join)


@given(
    before=st.lists(_plain_line, max_size=4),
    inside=st.lists(st.one_of(_plain_line, _command_line), max_size=6),
    command=_command_line,
    fence=st.sampled_from(["```", "~~~", "````", "~~~~~", "```python"]),
)
def test_a_command_inside_a_fenced_block_never_parses(
    before: list[str], inside: list[str], command: str, fence: str
) -> None:
    before = [line for line in before if parse_command(line) is None]
    closing = fence.rstrip("python")
    body = "\n".join([*before, fence, *inside, command, *inside, closing])

    assert parse_command(body) is None


@given(lines=st.lists(st.one_of(_plain_line, _command_line), min_size=1, max_size=6))
def test_indented_code_never_parses(lines: list[str]) -> None:
    assert parse_command("\n".join("    " + line for line in lines)) is None


@given(
    before=st.lists(_plain_line, max_size=4),
    command=_command_line,
    after=st.lists(st.one_of(_plain_line, _command_line), max_size=4),
)
def test_the_first_command_line_wins(before: list[str], command: str, after: list[str]) -> None:
    before = [line for line in before if parse_command(line) is None and "<!--" not in line]
    body = "\r\n".join([*before, command, *after])

    assert parse_command(body) == parse_command(command) is not None


# --- debate modes and board adjustments ------------------------------------------------


@pytest.mark.parametrize(
    ("body", "mode", "question"),
    [
        (
            "/council debate --full should this cache live in Redis?",
            "full",
            "should this cache live in Redis?",
        ),
        ("/council debate --QUICK", "quick", None),
        ("/council debate --standard is the lock needed", "standard", "is the lock needed"),
        (
            "/council debate should this cache live in Redis?",
            None,
            "should this cache live in Redis?",
        ),
        # Not a mode: an unknown flag is part of the question, as any text is.
        ("/council debate --fast paths", None, "--fast paths"),
    ],
)
def test_a_debate_mode_comes_first_after_debate(
    body: str, mode: str | None, question: str | None
) -> None:
    command = parse_command(body)
    assert command == Command(kind="convene", protocol="debate", question=question, mode=mode)  # type: ignore[arg-type]


def test_a_mode_flag_after_another_protocol_is_its_question() -> None:
    command = parse_command("/council quick --full")
    assert command == Command(kind="convene", protocol="quick", question="--full")


@pytest.mark.parametrize(
    ("body", "add", "remove", "question"),
    [
        (
            "/council board +appsec-reviewer -docs-reviewer",
            ("appsec-reviewer",),
            ("docs-reviewer",),
            None,
        ),
        (
            "/council board +sre-reliability is the retry safe?",
            ("sre-reliability",),
            (),
            "is the retry safe?",
        ),
        # +1 is a reaction, not a persona: the words are the question.
        ("/council board +1 to this", (), (), "+1 to this"),
        # Added and removed: kept off, the safer reading of a contradiction.
        ("/council board +docs-reviewer -docs-reviewer", (), ("docs-reviewer",), None),
        ("/council board +Test-Engineer +test-engineer", ("test-engineer",), (), None),
        # A change after the question starts is part of the question.
        ("/council board why -docs-reviewer", (), (), "why -docs-reviewer"),
    ],
)
def test_board_adjustments_come_first_after_board(
    body: str, add: tuple[str, ...], remove: tuple[str, ...], question: str | None
) -> None:
    command = parse_command(body)
    assert command == Command(
        kind="convene", protocol="board", question=question, board_add=add, board_remove=remove
    )


def test_the_help_names_the_modes_and_the_board_adjustments() -> None:
    assert "`/council debate --full [question]`" in GRAMMAR_HELP
    assert "`--quick`, `--standard` or `--full`" in GRAMMAR_HELP
    assert "`/council board +persona -persona [question]`" in GRAMMAR_HELP
