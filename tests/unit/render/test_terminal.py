"""The advisory as text for a terminal: verdict first, aligned tables, no Markdown or HTML."""

from __future__ import annotations

from bot.council.advisory import (
    Advisory,
    MergedFinding,
    Resolution,
    SeatReport,
    SeatState,
    TopFinding,
    UsageSummary,
)
from bot.council.schemas import Assessment, Divergence, LensScore, Synthesis, Vote
from bot.render.blocks import place
from bot.render.terminal import render_text, summary_line

PERSONAS = ["Security Reviewer", "Performance Engineer", "API Designer"]
MODELS = ["anthropic:claude-sonnet-4-5", "openai:gpt-5", "anthropic:claude-sonnet-4-5"]


def seat(i: int, state: SeatState = SeatState.OK, title: str = "Looks reasonable.") -> SeatReport:
    valid = state is SeatState.OK
    return SeatReport(
        seat_id=f"seat-{i}",
        label=f"Member {'ABC'[i]}",
        persona_id=f"persona-{i}",
        persona_name=PERSONAS[i],
        model=MODELS[i],
        state=state,
        error=None if valid else "deadline of 300 s passed",
        assessment=Assessment(
            verdict="CONCERNS",
            score=6,
            summary=title,
            lens_scores=[LensScore(lens="security", score=6, analysis="ok")],
            red_flags=[],
            concerns=["Retry loop is unbounded"],
            recommendations=[],
            confidence=75,
            findings=[],
        )
        if valid
        else None,
        vote=Vote(vote="APPROVE", confidence=0.8, rationale="ok", conditions=["Cap retries at 5"])
        if valid
        else None,
    )


def advisory(
    resolution: Resolution = Resolution.APPROVED_WITH_CONDITIONS, **kw: object
) -> Advisory:
    fields: dict[str, object] = {
        "deliberation_id": "d-1",
        "protocol": "board",
        "topic": "Review this change",
        "resolution": resolution,
        "confidence": 0.82,
        "seats": [seat(0), seat(1), seat(2)],
        "findings": [
            MergedFinding(
                severity="critical",
                path="src/auth.py",
                start_line=10,
                end_line=12,
                title="Hard-coded admin password",
                detail="Anyone who types admin logs in.",
                raised_by=["seat-0", "seat-1"],
                consensus=2,
            ),
            MergedFinding(
                severity="minor",
                path="src/retry.py",
                start_line=4,
                title="Retry loop is unbounded",
                detail="It spins forever on a 500.",
                raised_by=["seat-2"],
                consensus=1,
            ),
        ],
        "top_findings": [
            TopFinding(kind="red_flag", title="Secrets in the log", raised_by=["seat-1"])
        ],
        "conditions": ["Cap retries at 5"],
        "synthesis": Synthesis(
            verdict_sentence="Sound once retries are capped.",
            consensus=["Retries need a cap"],
            divergence=[Divergence(point="Cache location", sides=["Member A: Redis"])],
            recommendation="Cap retries, then merge.",
            action_items=["Cap retries at 5"],
        ),
        "usage": UsageSummary(calls=9, input_tokens=12_000, cost_usd=0.4321, wall_ms=61_000),
    }
    fields.update(kw)
    return Advisory.model_validate(fields)


def test_the_verdict_comes_first_then_the_findings() -> None:
    text = render_text(advisory(), width=160)  # wide enough that no cell wraps
    lines = text.splitlines()
    assert lines[0] == "🟡 Approved with conditions · confidence 82% · 3 seats · protocol board"
    critical = next(line for line in lines if "Hard-coded admin password" in line)
    assert "critical" in critical and "src/auth.py:10-12" in critical
    assert "2 seats (Security Reviewer, Performance Engineer)" in critical
    minor = next(line for line in lines if "Retry loop is unbounded" in line and "minor" in line)
    assert "src/retry.py:4" in minor and "1 seat (API Designer)" in minor
    flag = next(line for line in lines if "Secrets in the log" in line)
    assert "red flag" in flag
    assert lines.index("Findings") < lines.index("Consensus")


def test_sections_are_headings_and_votes_a_table() -> None:
    lines = render_text(advisory()).splitlines()
    order = [
        "Findings",
        "Consensus",
        "Divergence",
        "Recommendation",
        "Action items",
        "Conditions",
        "Votes",
    ]
    assert [lines.index(h) for h in order] == sorted(lines.index(h) for h in order)
    vote = next(line for line in lines if line.startswith("Performance Engineer"))
    assert "openai:gpt-5" in vote and "APPROVE" in vote and "80%" in vote
    assert "Cap retries at 5" in vote
    cost = next(line for line in lines if line.startswith("Cost: "))
    assert "$0.4321" in cost and "9 calls" in cost and "61.0 s" in cost


def test_no_markdown_no_html_no_marker() -> None:
    text = render_text(advisory())
    for markup in ("<details", "<summary", "<br", "<!--", "|---", "| ", "**", "###", "`"):
        assert markup not in text


def test_model_text_cannot_drive_the_terminal() -> None:
    hostile = "\x1b[2J\x1b]0;pwned\x07[bold red]fake[/] \u202eoverride"
    text = render_text(advisory(seats=[seat(0, title=hostile), seat(1), seat(2)]))
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "[bold red]fake[/]" in text  # markup in model text is printed, not applied


def test_a_lost_seat_is_said_up_front_and_in_the_summary() -> None:
    partial = advisory(seats=[seat(0), seat(1), seat(2, SeatState.TIMED_OUT)], partial=True)
    lines = render_text(partial).splitlines()
    assert "2 of 3 seats" in lines[0]
    assert lines[1].startswith("Partial advisory (2 of 3 seats). Missing perspectives: API")
    assert summary_line(partial) == "APPROVED_WITH_CONDITIONS · 2/3 seats · $0.4321 · 61.0 s"


def test_no_quorum_shows_why_and_each_seat() -> None:
    lost = [seat(0), seat(1, SeatState.ERROR), seat(2, SeatState.TIMED_OUT)]
    text = render_text(advisory(Resolution.NO_QUORUM, seats=lost, reason="one seat answered"))
    lines = text.splitlines()
    assert lines[0].startswith("⚠️ The council could not convene · 1 of 3 seats")
    assert "confidence" not in lines[0]
    assert "Why: one seat answered" in lines
    row = next(line for line in lines if line.startswith("Member C"))
    assert "timed out" in row and "deadline of 300 s passed" in row


def test_locations_are_what_an_editor_opens() -> None:
    assert place("a.py", 3, None) == "a.py:3"
    assert place("a.py", 3, 3) == "a.py:3"
    assert place("a.py", 3, 9) == "a.py:3-9"
    assert place("a.py", None, None) == "a.py"
    assert place(None, None, None) == "-"
