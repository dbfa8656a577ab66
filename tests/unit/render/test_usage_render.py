"""Unknown cost is shown as unknown, never as $0: in the comment, the terminal, the check
run and the JSON. A model priced at $0 (a local one) is simply $0. Reasoning tokens and
answers cut off at the output limit are said where usage is shown, when there are any."""

from __future__ import annotations

from typing import Any

import pytest

from bot.cli.report import advisory_json
from bot.council.advisory import Advisory, Resolution, UsageSummary
from bot.render import render_check_run, render_comment
from bot.render.terminal import render_text, summary_line
from bot.render.usage import cost_known, cost_text, usage_notes

UNKNOWN = "ollama-less:foo"


def usage(**kw: Any) -> UsageSummary:
    values: dict[str, Any] = {
        "calls": 7,
        "input_tokens": 9_000,
        "output_tokens": 2_500,
        "cost_usd": 0.0123,
        "wall_ms": 12_000,
    }
    values.update(kw)
    return UsageSummary(**values)


def advisory(u: UsageSummary) -> Advisory:
    return Advisory(
        deliberation_id="d-1",
        protocol="quick",
        topic="Review this pull request",
        resolution=Resolution.APPROVED,
        confidence=0.8,
        usage=u,
    )


PARTLY = usage(unpriced_models=[UNKNOWN])
NOTHING = usage(cost_usd=0.0, unpriced_models=[UNKNOWN])
LOCAL = usage(cost_usd=0.0)  # priced at $0 (a local server): priced, and free
PARTLY_TEXT = f"$0.0123 + unknown (no price for {UNKNOWN})"
NOTHING_TEXT = f"unknown (no price for {UNKNOWN})"


def test_cost_text_says_what_is_known() -> None:
    assert cost_text(usage()) == "$0.0123"
    assert cost_text(PARTLY) == PARTLY_TEXT
    assert cost_text(NOTHING) == NOTHING_TEXT
    assert cost_text(LOCAL) == "$0.0000"
    assert cost_text(usage(unpriced_models=["a:x", "b:y"])).endswith("(no price for a:x, b:y)")
    assert cost_known(usage()) and cost_known(LOCAL)
    assert not cost_known(PARTLY) and not cost_known(NOTHING)


def test_usage_summaries_add_up_the_new_counts() -> None:
    a = usage(reasoning_tokens=100, truncated=1, unpriced_models=["a:x"])
    b = usage(reasoning_tokens=50, truncated=2, unpriced_models=["b:y", "a:x"])
    total = a.plus(b)
    assert (total.reasoning_tokens, total.truncated) == (150, 3)
    assert total.unpriced_models == ["a:x", "b:y"]


@pytest.mark.parametrize(
    ("u", "expected"),
    [(PARTLY, PARTLY_TEXT), (NOTHING, NOTHING_TEXT), (LOCAL, "$0.0000")],
    ids=["partly-unpriced", "all-unpriced", "local"],
)
def test_the_comment_shows_unknown_cost(u: UsageSummary, expected: str) -> None:
    text = render_comment(advisory(u))
    assert f"| {expected} |" in text  # the cost table's cell
    if u.unpriced_models:
        assert "<summary>Cost: " in text and f"no price for {UNKNOWN})</summary>" in text
    else:
        assert "<summary>Cost: $0.00</summary>" in text and "unknown" not in text


@pytest.mark.parametrize(
    ("u", "expected"),
    [(PARTLY, PARTLY_TEXT), (NOTHING, NOTHING_TEXT), (LOCAL, "$0.0000")],
    ids=["partly-unpriced", "all-unpriced", "local"],
)
def test_the_terminal_shows_unknown_cost(u: UsageSummary, expected: str) -> None:
    lines = render_text(advisory(u)).splitlines()
    cost = next(line for line in lines if line.startswith("Cost: "))
    assert cost.startswith(f"Cost: {expected} · 7 calls")
    line = summary_line(advisory(u))
    if u is NOTHING:
        assert f"· cost {NOTHING_TEXT} ·" in line
    else:
        assert f"· {expected} ·" in line


@pytest.mark.parametrize(
    ("u", "expected"),
    [(PARTLY, PARTLY_TEXT), (NOTHING, NOTHING_TEXT), (LOCAL, "$0.0000")],
    ids=["partly-unpriced", "all-unpriced", "local"],
)
def test_the_check_run_summary_shows_unknown_cost(u: UsageSummary, expected: str) -> None:
    summary = render_check_run(advisory(u)).summary
    assert f"Cost: {expected} · 7 calls." in summary
    if not u.unpriced_models:
        assert "unknown" not in summary


def test_the_json_says_whether_the_cost_is_known() -> None:
    partly = advisory_json(advisory(PARTLY), "")["usage"]
    assert partly["cost_usd"] == 0.0123 and partly["cost_known"] is False
    assert partly["unpriced_models"] == [UNKNOWN]
    local = advisory_json(advisory(LOCAL), "")["usage"]
    assert local["cost_usd"] == 0 and local["cost_known"] is True
    assert local["unpriced_models"] == []


def test_reasoning_tokens_and_cut_off_answers_are_said_only_when_there_are_some() -> None:
    assert usage_notes(usage()) == []
    some = usage(reasoning_tokens=1_234, truncated=1)
    assert usage_notes(some) == [
        "1,234 of the output tokens were reasoning",
        "1 answer cut off at the output limit (re-asked for a shorter one while re-asks remained)",
    ]
    assert "2 answers cut off" in usage_notes(usage(truncated=2))[0]
    comment = render_comment(advisory(some))
    assert "1,234 of the output tokens were reasoning" in comment
    assert "1 answer cut off at the output limit" in comment
    terminal = render_text(advisory(some), width=400)
    assert "1,234 of the output tokens were reasoning" in terminal
    assert "1 answer cut off at the output limit" in terminal
    check = render_check_run(advisory(some)).summary
    assert "1 answer cut off at the output limit" in check
    json_usage = advisory_json(advisory(some), "")["usage"]
    assert (json_usage["reasoning_tokens"], json_usage["truncated"]) == (1_234, 1)
    plain = render_comment(advisory(usage()))
    assert "reasoning" not in plain and "cut off" not in plain
