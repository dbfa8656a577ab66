"""The protocol table: its shape, the seat counts and call plans it gives, and that the command
grammar, the repo config, `/council help`, the prompts, the panel schema and the README all
say what it says."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from bot.commands import GRAMMAR_HELP, parse_command
from bot.config.load import load_repo_config
from bot.config.show import render_effective
from bot.council import prompts
from bot.council.protocols import (
    DEBATE_MODES,
    DEFAULT_BOARD_SIZE,
    DEFAULT_DISCUSSION_ROUNDS,
    MAX_JUDGE_CYCLES,
    NAMES,
    PROTOCOLS,
    Discussion,
    PhaseCall,
    Protocol,
    ProtocolName,
    Seats,
    discussion_rounds,
    names,
    phases_text,
    planned_calls,
    protocol,
    seat_count,
)
from bot.council.schemas import PanelDesign
from bot.settings import Settings

ROOT = Path(__file__).resolve().parents[3]


# --- the table ---------------------------------------------------------------------------


def test_the_table_holds_the_five_protocols_and_the_literal_names_them() -> None:
    assert list(PROTOCOLS) == ["board", "council", "debate", "quick", "strategies"]
    assert NAMES == get_args(ProtocolName) == tuple(PROTOCOLS)
    assert all(PROTOCOLS[name].name == name for name in PROTOCOLS)


@pytest.mark.parametrize("name", NAMES)
def test_every_protocol_is_a_pipeline_of_the_same_phases(name: str) -> None:
    p = protocol(name)
    assert p.phases[:3] == ("convene", "assess", "gate")
    assert p.phases[-2:] == ("resolve", "synthesize")
    for text in (p.summary, p.rules, p.default_for, p.seats.rule):
        assert text and "\n" not in text and len(text) <= 160
    assert p.discusses == (p.discussion is not None)
    assert p.resolution == ("votes" if p.votes else "assessments")


def test_what_each_protocol_does() -> None:
    board, council, debate, quick = (PROTOCOLS[n] for n in ("board", "council", "debate", "quick"))
    assert (board.discusses, board.judged, board.votes) == (True, False, True)
    assert (debate.discusses, debate.judged, debate.votes) == (True, True, True)
    assert not (council.discusses or council.votes or quick.discusses or quick.votes)
    assert [p.seats.convene for p in (board, council, debate, quick)] == [
        "board",
        "models",
        "designed",
        "board",
    ]
    assert council.ranks(3) and not council.ranks(2)
    assert not any(p.ranks(9) for p in (board, debate, quick))


def test_phases_render_as_the_deliberation_spec_writes_them() -> None:
    assert phases_text("board") == "convene(board) assess gate discuss(1) vote resolve synthesize"
    # A debate's are its mode's; without one, the default mode's (standard).
    assert (
        phases_text("debate")
        == phases_text("debate", "standard")
        == ("convene(designed) assess gate discuss+judge(<=2 cycles) vote resolve synthesize")
    )
    assert phases_text("debate", "quick") == (
        "convene(designed) assess gate discuss(1) vote resolve synthesize"
    )
    assert phases_text("debate", "full") == (
        "convene(designed) assess gate discuss+judge(<=3 cycles) outside-opinion vote resolve "
        "synthesize"
    )
    assert phases_text("quick") == (
        "convene(board, 3 seats) assess gate resolve-by-assessments synthesize"
    )
    assert phases_text("council") == (
        "convene(models) assess gate rank(3+ seats) resolve-by-assessments synthesize"
    )


def test_an_unknown_protocol_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown protocol 'boardroom'") as raised:
        protocol("boardroom")
    assert "board, council, debate, quick" in str(raised.value)
    for helper in (
        lambda: seat_count("Board", models=2, board_size=5),
        lambda: planned_calls("", seats=3, rounds=1),
        lambda: phases_text("full"),
    ):
        with pytest.raises(ValueError, match="choose one of board, council, debate, quick"):
            helper()


def test_an_entry_that_contradicts_itself_is_refused_when_the_table_is_built() -> None:
    seats = Seats(convene="board", rule="the top 3 personas", default=3)
    with pytest.raises(ValueError, match="discussion setting exactly when it discusses"):
        Protocol(
            name="board",
            summary="s",
            rules="r",
            default_for="d",
            phases=("convene", "assess", "gate", "discuss", "vote", "resolve", "synthesize"),
            seats=seats,
        )
    with pytest.raises(ValueError, match="must end resolve, synthesize"):
        Protocol(
            name="quick",
            summary="s",
            rules="r",
            default_for="d",
            phases=("convene", "assess", "gate", "synthesize"),
            seats=seats,
        )
    with pytest.raises(ValueError, match="judges right after the discussion"):
        Protocol(
            name="debate",
            summary="s",
            rules="r",
            default_for="d",
            phases=("convene", "assess", "gate", "judge", "discuss", "resolve", "synthesize"),
            seats=seats,
            discussion=Discussion(rounds_from="judge", default_rounds=3, max_rounds=3),
        )


def test_the_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        PROTOCOLS["full"] = PROTOCOLS["board"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        PROTOCOLS["board"].phases = ()  # type: ignore[misc]


def test_importing_the_table_pulls_in_no_models_and_no_sdks() -> None:
    code = (
        "import sys, bot.council.protocols, bot.commands\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in "
        "('pydantic', 'anthropic', 'openai', 'httpx', 'yaml') or m in "
        "('bot.council.engine', 'bot.council.schemas', 'bot.providers')]\n"
        "print(heavy)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]"


# --- seats -------------------------------------------------------------------------------


def test_seat_counts() -> None:
    assert seat_count("board", models=1, board_size=5) == 5
    assert seat_count("board", models=3, board_size=7) == 7
    assert [seat_count("quick", models=m, board_size=9) for m in (1, 4)] == [3, 3]
    assert [seat_count("council", models=m, board_size=5) for m in (1, 2, 3, 6)] == [3, 2, 3, 6]
    assert [seat_count("debate", models=m, board_size=9) for m in (1, 2, 3, 4, 7)] == [
        3,
        3,
        3,
        4,
        4,
    ]


def test_seat_counts_outside_the_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="board size 10 is outside 2-9"):
        seat_count("board", models=2, board_size=10)
    with pytest.raises(ValueError, match="board size 1 is outside 2-9"):
        seat_count("board", models=2, board_size=1)
    with pytest.raises(ValueError, match="cannot be negative"):
        seat_count("council", models=-1, board_size=5)


def test_a_plan_without_a_known_model_is_made_for_one() -> None:
    for name in NAMES:
        one = seat_count(name, models=1, board_size=5)
        assert seat_count(name, models=0, board_size=5) == one


def test_the_debate_panel_schema_takes_its_bounds_from_the_table() -> None:
    seats = PROTOCOLS["debate"].seats
    panelist = {"name": "Analyst", "lens": "risk", "stance": "adversarial", "brief": "Judge."}
    assert seats.maximum is not None
    for count in (seats.minimum, seats.maximum):
        assert len(PanelDesign(panelists=[panelist] * count).panelists) == count
    for count in (seats.minimum - 1, seats.maximum + 1):
        with pytest.raises(ValidationError):
            PanelDesign(panelists=[panelist] * count)
    described = PanelDesign.model_json_schema()["properties"]["panelists"]["description"]
    assert described.startswith(f"{seats.minimum}-{seats.maximum} panelists")


# --- the call plan -------------------------------------------------------------------------


def phases(calls: list[PhaseCall]) -> Counter[str]:
    return Counter(c.phase for c in calls)


def test_board_plan_five_seats_one_round() -> None:
    calls = planned_calls("board", seats=5, rounds=1)
    # 5 assess + 5 discuss + 5 vote + at most 1 merge of the findings + 1 synthesize
    assert len(calls) == 17
    assert phases(calls) == {
        "assess": 5,
        "discuss 1": 5,
        "vote": 5,
        "merge": 1,
        "synthesize": 1,
    }
    assert [c.seat for c in calls if c.phase == "vote"] == [0, 1, 2, 3, 4]
    assert calls[-2:] == [PhaseCall("merge", "chair"), PhaseCall("synthesize", "chair")]
    assert [c.phase for c in calls[:6]] == ["assess"] * 5 + ["discuss 1"]


def test_board_plan_follows_the_configured_rounds() -> None:
    assert len(planned_calls("board", seats=5, rounds=0)) == 12
    assert phases(planned_calls("board", seats=3, rounds=3)) == {
        "assess": 3,
        "discuss 1": 3,
        "discuss 2": 3,
        "discuss 3": 3,
        "vote": 3,
        "merge": 1,
        "synthesize": 1,
    }
    with pytest.raises(ValueError, match="4 discussion rounds is outside 0-3"):
        planned_calls("board", seats=5, rounds=4)


def test_quick_plan_is_three_assessments_and_a_synthesis() -> None:
    seats = seat_count("quick", models=2, board_size=5)
    calls = planned_calls("quick", seats=seats, rounds=1)
    assert [(c.phase, c.party) for c in calls] == [("assess", "seat")] * 3 + [
        ("merge", "chair"),
        ("synthesize", "chair"),
    ]


def test_council_plan_ranks_only_with_three_or_more_seats() -> None:
    assert len(planned_calls("council", seats=2, rounds=1)) == 4
    single = seat_count("council", models=1, board_size=5)
    calls = planned_calls("council", seats=single, rounds=1)
    assert phases(calls) == {"assess": 3, "rank": 3, "merge": 1, "synthesize": 1}
    assert len(planned_calls("council", seats=5, rounds=1)) == 12


def test_debate_plan_designs_then_plans_every_judged_cycle() -> None:
    seats = seat_count("debate", models=2, board_size=5)
    # rounds is the board's; ignored
    calls = planned_calls("debate", seats=seats, rounds=1, mode="full", models=2)
    assert calls[0] == PhaseCall("design", "designer")
    # 1 design + 3 assess + 3 x (3 discuss + 1 judge) + 1 outside opinion + 3 vote + 1 merge
    # + 1 synthesize
    assert len(calls) == 22
    judged = [c for c in calls if c.party == "judge"]
    assert [c.phase for c in judged] == [f"judge {n}" for n in range(1, MAX_JUDGE_CYCLES + 1)]
    after_round_1 = [c.phase for c in calls].index("judge 1")
    assert [c.phase for c in calls[after_round_1 - 3 : after_round_1]] == ["discuss 1"] * 3
    # The outside opinion comes after the last judged cycle, before the vote.
    outside = [c.phase for c in calls].index("outside opinion")
    assert calls[outside] == PhaseCall("outside opinion", "outside")
    assert calls[outside - 1].phase == "judge 3" and calls[outside + 1].phase == "vote"
    four = seat_count("debate", models=4, board_size=5)
    assert len(planned_calls("debate", seats=four, rounds=0, mode="full", models=4)) == 27


@pytest.mark.parametrize(
    ("mode", "models", "judges", "cycles", "outside", "total"),
    [
        # design + 3 assess + cycles x 3 discuss (+ a judge each) + outside + 3 vote + 2 chair
        ("quick", 2, 0, 1, 0, 12),
        ("standard", 2, 2, 2, 0, 17),
        (None, 2, 2, 2, 0, 17),  # the default mode: standard
        ("full", 2, 3, 3, 1, 22),
        ("full", 1, 3, 3, 0, 21),  # a single model: no outside opinion
    ],
)
def test_each_debate_mode_plans_its_maximum_calls(
    mode: str | None, models: int, judges: int, cycles: int, outside: int, total: int
) -> None:
    calls = planned_calls("debate", seats=3, rounds=1, mode=mode, models=models)
    assert len(calls) == total
    assert sum(c.party == "judge" for c in calls) == judges
    assert sum(c.party == "outside" for c in calls) == outside
    assert sum(c.phase.startswith("discuss") for c in calls) == 3 * cycles
    assert discussion_rounds("debate", configured=1, mode=mode) == cycles


def test_an_unknown_debate_mode_is_refused_naming_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="choose one of quick, standard, full"):
        planned_calls("debate", seats=3, rounds=1, mode="deep")


def test_discussion_rounds_per_protocol() -> None:
    assert discussion_rounds("board", configured=2) == 2
    assert discussion_rounds("debate", configured=0) == 2  # the default mode's (standard)
    assert discussion_rounds("debate", configured=0, mode="full") == MAX_JUDGE_CYCLES
    assert discussion_rounds("quick", configured=3) == 0
    assert discussion_rounds("council", configured=3) == 0


# --- everything else says what the table says --------------------------------------------


def test_the_command_grammar_accepts_exactly_the_tables_protocols() -> None:
    assert names() == NAMES
    for name in NAMES:
        command = parse_command(f"/council {name.upper()} is this safe?")
        assert command is not None
        assert (command.kind, command.protocol, command.question) == (
            "convene",
            name,
            "is this safe?",
        )
    for word in ("boardroom", "full", "debates"):
        command = parse_command(f"/council {word} is this safe?")
        assert command is not None and command.protocol is None
        assert command.question == f"{word} is this safe?"


def test_the_grammar_help_lists_the_tables_protocols() -> None:
    (row,) = [line for line in GRAMMAR_HELP.splitlines() if "<protocol>" in line]
    assert re.findall(r"`(\w+)`", row) == list(NAMES)


def test_the_grammar_help_lists_the_tables_debate_modes() -> None:
    (row,) = [line for line in GRAMMAR_HELP.splitlines() if "debate --full" in line]
    for name, rule in DEBATE_MODES.items():
        assert f"`--{name}`" in row and f"`{name}` {rule.summary}" in row


def test_review_help_lists_every_protocol_and_debate_mode_of_the_tables() -> None:
    from typer.testing import CliRunner

    from bot.cli import app

    result = CliRunner().invoke(app, ["review", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert f"{', '.join(NAMES[:-1])} or {NAMES[-1]}" in text
    for name, rule in DEBATE_MODES.items():
        assert f"{name} ({' '.join(rule.summary.split())})" in text


def settings() -> Settings:
    return Settings.model_validate(
        {"models": ["openai:gpt-5.4"], "anthropic_api_key": None, "openai_api_key": None}
    )


def test_the_repo_config_refuses_an_unknown_protocol_naming_the_valid_ones() -> None:
    result = load_repo_config("protocol: boardroom\npush_protocol: debate\n", settings())
    (issue,) = result.issues
    assert (issue.key, issue.line) == ("protocol", 1)
    for name in NAMES:
        assert f"'{name}'" in issue.reason
    assert result.config.protocol == "board"  # the default stands in
    assert result.config.push_protocol == "debate"


@pytest.mark.parametrize("name", NAMES)
def test_the_repo_config_accepts_every_protocol_of_the_table(name: str) -> None:
    result = load_repo_config(f"protocol: {name}\npush_protocol: {name}\n", settings())
    assert result.issues == []
    assert (result.config.protocol, result.config.push_protocol) == (name, name)


def test_council_help_lists_every_protocol_and_marks_the_repos() -> None:
    config = load_repo_config("protocol: debate\n", settings()).config
    markdown = render_effective(config)
    listed = re.findall(r"^- `(\w+)`(.*?): (.*)$", markdown, flags=re.M)
    assert [name for name, _, _ in listed] == list(NAMES)
    for name, marks, summary in listed:
        assert summary == PROTOCOLS[name].summary
        expected = {"debate": " (`protocol`)", "quick": " (`push_protocol`)"}.get(name, "")
        assert marks == expected


@pytest.mark.parametrize("name", NAMES)
def test_the_seats_are_told_their_protocols_rules(name: str) -> None:
    rules = prompts.system_blocks(name, "context")[0].text
    assert f"Protocol: {name}. {PROTOCOLS[name].rules}" in rules


@pytest.mark.parametrize("mode", ["quick", "standard", "full"])
def test_a_debates_rules_say_its_mode_and_quick_names_no_judge(mode: str) -> None:
    rules = prompts.system_blocks("debate", "context", mode=mode)[0].text
    protocol_line = next(line for line in rules.splitlines() if line.startswith("Protocol:"))
    assert f"This debate runs in {mode} mode" in protocol_line
    assert ("step-back judge decides" in protocol_line) is (mode != "quick")


def readme_protocols() -> dict[str, list[str]]:
    """The README's protocol table: name -> its cells (phases, what happens, calls)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| protocol | phases |"))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        name = re.fullmatch(r"`(\w+)`( \(default\))?", cells[0])
        assert name is not None, line
        assert name.group(1) not in rows, f"{name.group(1)} listed twice"
        rows[name.group(1)] = cells[1:]
    return rows


def test_the_readme_table_lists_the_tables_protocols_and_phases() -> None:
    rows = readme_protocols()
    assert sorted(rows) == sorted(NAMES)
    for name, (phases_cell, what, _calls) in rows.items():
        assert phases_cell == f"`{phases_text(name)}`", name
        assert what


def test_the_readme_call_counts_are_the_plans() -> None:
    """The first number of each calls cell: one model, the default board."""
    for name, (_, _, calls) in readme_protocols().items():
        seats = seat_count(name, models=1, board_size=DEFAULT_BOARD_SIZE)
        planned = planned_calls(name, seats=seats, rounds=DEFAULT_DISCUSSION_ROUNDS)
        first = re.search(r"\d+", calls)
        assert first is not None and int(first.group()) == len(planned), name
