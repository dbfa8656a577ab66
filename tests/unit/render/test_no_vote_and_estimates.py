"""Issue 23, item 8, in the renderings: a vote that did not come reads "no vote (<why>)"
(never "abstained") and the tokens a server did not report read as estimated, the same in
the comment, the terminal, the check run, the HTML transcript and the JSON's usage. An
advisory stored before (its seat "abstained") still loads and reads as a missing vote."""

from __future__ import annotations

from typing import Any

from bot.council.advisory import Advisory, SeatState, UsageSummary
from bot.render import render_check_run, render_comment
from bot.render.terminal import render_text
from bot.render.transcript import transcript_html
from bot.render.usage import estimated_note, usage_json, usage_notes
from tests.unit.render.test_render import advisory, seat
from tests.unit.render.test_transcript import record


def usage(**kw: Any) -> UsageSummary:
    values: dict[str, Any] = {
        "calls": 16,
        "input_tokens": 10_000,
        "output_tokens": 2_400,
        "estimated_calls": 3,
        "estimated_tokens": 9_800,
    }
    values.update(kw)
    return UsageSummary(**values)


def test_the_estimated_part_of_the_tokens_is_said() -> None:
    assert estimated_note(usage()) == (
        "about 9,800 of the 12,400 tokens are estimated: the server reported no usage for 3 "
        "of 16 calls"
    )
    assert estimated_note(usage(calls=3)) is not None
    assert str(estimated_note(usage(calls=3))).endswith("no usage for all 3 calls")
    assert str(estimated_note(usage(calls=1, estimated_calls=1))).endswith("for the call")
    counted = usage(estimated_calls=0, estimated_tokens=0)
    assert estimated_note(counted) is None and usage_notes(counted) == []


def test_usage_summaries_add_up_the_estimated_counts() -> None:
    total = usage().plus(usage(estimated_calls=1, estimated_tokens=200))
    assert (total.estimated_calls, total.estimated_tokens) == (4, 10_000)


def test_every_rendering_marks_the_estimated_tokens() -> None:
    shown = advisory(usage=usage())
    said = "bout 9,800 of the 12,400 tokens are estimated: the server reported no usage for 3 of"
    comment = render_comment(shown)
    assert f"A{said} 16 calls." in comment  # the cost section's note
    assert f"a{said} 16 calls." in render_check_run(shown).summary
    assert f"a{said} 16 calls" in " ".join(render_text(shown).split())
    page = transcript_html(record(), shown, [])
    assert f"12,400 (10,000 in, 2,400 out, 0 cached, 0 cache writes, 0 reasoning); a{said}" in page
    plain = advisory(usage=usage(estimated_calls=0, estimated_tokens=0))
    for text in (render_comment(plain), render_text(plain), transcript_html(record(), plain, [])):
        assert "estimated" not in text


def test_the_json_usage_has_stable_names_for_the_estimate() -> None:
    """What `--json` shows of the usage (bot/cli/report.py is to take it from here)."""
    said = usage_json(usage(cost_usd=0.0123, unpriced_models=["x:y"]))
    assert said == {
        "calls": 16,
        "input_tokens": 10_000,
        "output_tokens": 2_400,
        "cached_input_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
        "truncated": 0,
        "cost_usd": 0.0123,
        "cost_known": False,
        "unpriced_models": ["x:y"],
        "wall_ms": 0,
        "tokens": 12_400,
        "estimated_calls": 3,
        "estimated_tokens": 9_800,
    }


def no_vote_seat(i: int, why: str | None) -> Any:
    report = seat(i, vote=None)
    state = SeatState.NO_VOTE if why else SeatState.ABSTAINED
    return report.model_copy(update={"state": state, "vote_missing": why})


def test_a_missing_vote_reads_why_in_every_rendering() -> None:
    shown = advisory(seats=[seat(0), seat(1), no_vote_seat(2, "server error")])
    counts = shown.vote_counts()
    assert (counts.approve, counts.missing) == (2, {"server error": 1})
    comment = render_comment(shown)
    assert "| Member C | API Designer | anthropic:claude-sonnet-4-5 | no vote (server error) |" in (
        comment
    )
    assert "Votes: 2 approve, 0 reject, 1 no vote (server error)." in (
        render_check_run(shown).summary
    )
    terminal = render_text(shown, width=200)
    assert any(
        "API Designer" in ln and "no vote (server error)" in ln for ln in terminal.split("\n")
    )
    page = transcript_html(record(), shown, [])
    assert "<p>2 approve, 0 reject, 1 no vote (server error)</p>" in page
    assert "<td>no vote (server error)</td>" in page
    for text in (comment, terminal, page, render_check_run(shown).summary):
        assert "abstain" not in text.lower()


def test_an_advisory_stored_with_an_abstained_seat_loads_and_reads_no_vote() -> None:
    """Stored before "no_vote", the same seat said "abstained" (why was not kept)."""
    stored = advisory(seats=[seat(0), seat(1), seat(2)]).model_dump(mode="json")
    stored["seats"][2].update({"state": "abstained", "vote": None})
    shown = Advisory.model_validate(stored)
    late = shown.seats[2]
    assert late.is_valid and late.no_vote == "no vote" and late.vote_missing is None
    assert shown.vote_counts().text() == "2 approve, 0 reject, 1 no vote"
    assert "| Member C | API Designer | anthropic:claude-sonnet-4-5 | no vote | - | - |" in (
        render_comment(shown)
    )
    assert "Votes: 2 approve, 0 reject, 1 no vote." in render_check_run(shown).summary
    for text in (render_comment(shown), render_text(shown), transcript_html(record(), shown, [])):
        assert "abstain" not in text.lower()
