"""One screen by default: the visible part of the comment is bounded for every protocol and
board size, the rest is collapsed with its own caps, nothing is cut mid-sentence, and no
finding is listed twice on the screen (issue 11)."""

from __future__ import annotations

import re
from functools import cache

import pytest

from bot.council.advisory import Advisory, MergedFinding, Resolution
from bot.council.protocols import NAMES, ProtocolName
from bot.council.schemas import Severity
from bot.render.blocks import SECTION_CAPS, clip
from bot.render.debate import DEBATE_CAP
from bot.render.markdown import VISIBLE_TARGET, CommentOptions, render_comment, visible_text
from bot.render.strategies import POINTS_CAP, STRATEGIES_CAP
from tests.support.long_answers import all_titles, long_advisory_sync, repetition

SIZES = (3, 5, 9)
_DETAILS = re.compile(r"<details>\n<summary>(.*?)</summary>\n\n(.*?)\n\n</details>", re.DOTALL)


@cache
def realistic(protocol: ProtocolName, seats: int) -> Advisory:
    return long_advisory_sync(protocol, seats)


def sections(text: str) -> list[tuple[str, str]]:
    return _DETAILS.findall(text)


def cap_of(summary: str) -> int:
    if summary.startswith("All findings"):
        return SECTION_CAPS["findings"]
    if summary.startswith("The chair's synthesis"):
        return SECTION_CAPS["synthesis"]
    if summary.startswith("Discussion"):
        return SECTION_CAPS["discussion"]
    if summary.startswith("Cost"):
        return SECTION_CAPS["cost"]
    if summary.startswith("Strategies:"):
        return STRATEGIES_CAP
    if summary.startswith("Cross-critique points"):
        return POINTS_CAP
    if summary.startswith("Debate: "):  # the debate report's sections (bot.render.debate)
        return DEBATE_CAP
    assert summary.startswith("Member "), summary
    return SECTION_CAPS["assessment"]


def assert_no_cut_mid_sentence(text: str) -> None:
    """A "…" only follows a whole sentence (". …") or opens a line saying what was left
    out ("…and 3 more", "_…2 parts left out")."""
    for m in re.finditer("…", text):
        before = text[max(0, m.start() - 2) : m.start()]
        after = text[m.end() : m.end() + 4]
        whole_sentence = before[-1:] == " " and before[:1] in ".!?)"
        says_what_is_left_out = after.startswith("and ") or before.endswith(("_", "\n"))
        assert whole_sentence or says_what_is_left_out, text[m.start() - 80 : m.end() + 20]


@pytest.mark.parametrize("protocol", NAMES)
@pytest.mark.parametrize("seats", SIZES)
def test_the_visible_part_is_one_screen_for_every_protocol_and_size(
    protocol: ProtocolName, seats: int
) -> None:
    advisory = realistic(protocol, seats)
    text = render_comment(advisory)
    visible = visible_text(text)
    assert len(visible) <= VISIBLE_TARGET
    assert len(text) <= 65_000
    for summary, body in sections(text):
        assert len(body) <= cap_of(summary), summary
    assert_no_cut_mid_sentence(text)
    # No finding is listed twice on the screen, nor more than twice in all (the screen and
    # "All findings").
    titles, _ = repetition(visible, all_titles())
    assert titles <= 2  # once in the table; a condition may name a critical one
    assert all(visible.count(f"**{f.title}**") <= 1 for f in advisory.findings)
    assert repetition(text, all_titles())[0] <= 3


def test_a_nine_seat_board_says_each_seats_repeated_concern_once() -> None:
    text = render_comment(realistic("board", 9))
    assert text.count("The retry loop is unbounded and will hold workers during an outage.") == 1
    assert "+3 said above" in text


def test_caps_hold_on_answers_far_longer_than_any_model_writes() -> None:
    advisory = realistic("board", 9).model_copy(deep=True)
    huge = "This sentence is one a model might write about the retry loop. " * 400
    assert advisory.synthesis is not None
    advisory.synthesis.recommendation = huge
    advisory.synthesis.verdict_sentence = huge
    advisory.synthesis.action_items = [huge] * 12
    advisory.synthesis.consensus = [huge] * 12
    advisory.conditions = [huge] * 5
    advisory.topic = huge
    advisory.notes = [huge] * 6
    for f in advisory.findings:
        f.title, f.detail = huge[:400], huge
    for seat in advisory.seats:
        assert seat.assessment is not None
        seat.assessment.summary = huge
        seat.assessment.concerns = [huge + str(i) for i in range(8)]
    text = render_comment(advisory)
    visible = visible_text(text)
    assert len(visible) <= VISIBLE_TARGET
    assert len(text) <= 65_000
    for summary, body in sections(text):
        assert len(body) <= cap_of(summary), summary
    assert_no_cut_mid_sentence(text)
    assert "left out for length" in text


def test_clip_keeps_whole_sentences_and_never_cuts_a_word() -> None:
    text = "First point is here. Second point follows! Third one? Fourth is long enough."
    assert clip(text, 50) == "First point is here. Second point follows! …"
    assert clip(text, 200) == text
    one = "A single sentence that runs on and on without ever stopping for breath"
    cut = clip(one, 30)
    assert len(cut) <= 30 and cut.endswith("…") and one.startswith(cut[:-1])
    assert one[len(cut) - 1] == " "  # the cut is at a word boundary
    lines = "- item one is here\n- item two is here\n- item three is here"
    assert clip(lines, 45) == "- item one is here\n- item two is here …"


def finding(i: int, severity: Severity) -> MergedFinding:
    return MergedFinding(
        severity=severity,
        path="app/x.py",
        start_line=i + 1,
        title=f"Problem {i} ({severity})",
        detail=f"What is wrong with thing {i}. Why it matters.",
        raised_by=["seat-0"],
        consensus=1,
    )


def with_findings(*severities: Severity) -> Advisory:
    base = realistic("quick", 3)
    found = [finding(i, s) for i, s in enumerate(severities)]
    return base.model_copy(update={"findings": found, "top_findings": []})


def test_nits_are_hidden_by_default_and_shown_from_min_severity_nit() -> None:
    advisory = with_findings("major", "nit", "nit")
    visible = visible_text(render_comment(advisory))
    assert "Problem 0 (major)" in visible and "(nit)" not in visible
    assert "…and 2 more findings, 2 of them below `minor`: see **All findings** below." in visible
    shown = visible_text(render_comment(advisory, options=CommentOptions(min_severity="nit")))
    assert "Problem 1 (nit)" in shown and "Problem 2 (nit)" in shown
    assert "more findings" not in shown
    majors = visible_text(render_comment(advisory, options=CommentOptions(min_severity="major")))
    assert "Problem 0 (major)" in majors and "(nit)" not in majors


def test_max_findings_is_respected_with_the_n_more_line() -> None:
    severities: list[Severity] = ["critical", "critical"]
    severities += ["major"] * 10
    advisory = with_findings(*severities)
    text = render_comment(advisory, options=CommentOptions(max_findings=3))
    visible = visible_text(text)
    assert visible.count("| #") == 3
    assert "Problem 0 (critical)" in visible and "Problem 1 (critical)" in visible
    assert "…and 9 more findings: see **All findings** below." in visible
    assert "<summary>All findings (12: 2 critical, 10 major)</summary>" in text
    default = visible_text(render_comment(advisory))
    assert default.count("| #") == 7


def test_compact_is_the_visible_part_and_a_pointer() -> None:
    advisory = realistic("board", 5)
    full = render_comment(advisory)
    compact = render_comment(advisory, options=CommentOptions(comment="compact"))
    assert "<details>" not in compact
    assert "every finding is listed in the **Council** check run" in compact
    assert ": see the check run." in compact  # the "N more" line points there
    assert len(compact) <= VISIBLE_TARGET + 400 < len(full)
    for heading in ("### Findings", "### Recommendation", "### Votes"):
        assert heading in compact


def test_the_verdict_line_has_resolution_conclusion_confidence_and_seats() -> None:
    advisory = realistic("board", 5)
    assert advisory.resolution is Resolution.APPROVED_WITH_CONDITIONS
    first = render_comment(advisory).split("\n\n", 3)[1]
    assert first.startswith("## 🟡 Approved with conditions\ncheck `neutral` · **confidence")
    assert "5 seats · protocol `board`" in first
    escalated = advisory.model_copy(update={"resolution": Resolution.ESCALATE})
    advisory_gate = render_comment(escalated, options=CommentOptions(gate="advisory"))
    assert "check `neutral`" in advisory_gate
    assert "check `action_required`" in render_comment(escalated)


def test_a_refused_comment_still_shrinks_with_options() -> None:
    advisory = realistic("board", 9)
    for limit in (20_000, 8_000, 4_000):
        text = render_comment(advisory, max_chars=limit, options=CommentOptions(max_findings=50))
        assert len(text) <= limit and text.count("<details>") == text.count("</details>")
        assert "## 🟡 Approved with conditions" in text
