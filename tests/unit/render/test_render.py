"""Rendering the advisory: the sticky comment and the check run."""

from __future__ import annotations

import pytest

from bot.council.advisory import (
    Advisory,
    JudgeRecord,
    MergedFinding,
    Resolution,
    RoundMessage,
    RoundRecord,
    SeatReport,
    SeatState,
    ShiftRecord,
    TopFinding,
    UsageSummary,
)
from bot.council.schemas import (
    Assessment,
    AssessmentVerdict,
    DiscussionMessage,
    Divergence,
    Finding,
    JudgeDecision,
    LensScore,
    Severity,
    Synthesis,
    TradeoffDimension,
    TradeoffOption,
    Vote,
    VoteChoice,
)
from bot.render import annotation_batches, conclusion_for, render_check_run, render_comment
from bot.render.checks import annotations_for
from bot.render.markdown import COMMENT_MARKER, VISIBLE_TARGET, visible_text

GITHUB_LIMIT = 65_536


def assessment(
    verdict: AssessmentVerdict = "CONCERNS", text: str = "Looks reasonable.", n_findings: int = 1
) -> Assessment:
    return Assessment(
        verdict=verdict,
        score=6,
        summary=text,
        lens_scores=[LensScore(lens="security", score=6, analysis=text)],
        red_flags=[],
        concerns=["Retry loop is unbounded"],
        recommendations=["Cap retries at 5"],
        confidence=75,
        findings=[
            Finding(
                severity="major",
                path="client.py",
                start_line=10 + i,
                title=f"Issue {i}",
                detail=text,
            )
            for i in range(n_findings)
        ],
    )


def seat(
    i: int,
    vote: VoteChoice | None = "APPROVE",
    state: SeatState = SeatState.OK,
    text: str = "Looks reasonable.",
) -> SeatReport:
    valid = state in (SeatState.OK, SeatState.ABSTAINED)
    return SeatReport(
        seat_id=f"seat-{i}",
        label=f"Member {'ABCDEFG'[i]}",
        persona_id=f"persona-{i}",
        persona_name=["Security Reviewer", "Performance Engineer", "API Designer", "SRE", "DBA"][i],
        model=["anthropic:claude-sonnet-4-5", "openai:gpt-5"][i % 2],
        state=state,
        error="deadline of 300 s passed" if state is SeatState.TIMED_OUT else None,
        assessment=assessment(text=text) if valid else None,
        vote=Vote(vote=vote, confidence=0.8, rationale="ok", conditions=["Cap retries at 5"])
        if vote and valid
        else None,
        lenses=["performance"],
    )


def merged_finding(i: int, severity: Severity = "major", raised: int = 1) -> MergedFinding:
    return MergedFinding(
        severity=severity,
        path=f"src/module_{i % 7}.py",
        start_line=10 + i,
        end_line=20 + i,
        title=f"Finding number {i}",
        detail="Detail " * 20,
        suggestion="Do the right thing.",
        raised_by=[f"seat-{k}" for k in range(raised)],
        consensus=raised,
    )


def advisory(resolution: Resolution = Resolution.APPROVED, **kw: object) -> Advisory:
    fields: dict[str, object] = {
        "deliberation_id": "d-1",
        "protocol": "board",
        "topic": "Review this pull request's architecture",
        "resolution": resolution,
        "confidence": 0.82,
        "seats": [seat(0), seat(1), seat(2)],
        "findings": [merged_finding(0, "critical", 2)],
        "top_findings": [
            TopFinding(
                kind="finding",
                severity="critical",
                path="src/module_0.py",
                start_line=10,
                end_line=20,
                title="Finding number 0",
                raised_by=["seat-0", "seat-1"],
            )
        ],
        "synthesis": Synthesis(
            verdict_sentence="Sound change once retries are capped.",
            consensus=["Retries need a cap"],
            divergence=[
                Divergence(
                    point="Cache location", sides=["Member A: Redis", "Member B: in-process"]
                )
            ],
            recommendation="Cap retries, then merge.",
            tradeoff_map=[
                TradeoffDimension(
                    dimension="Latency",
                    options=[
                        TradeoffOption(option="Redis", pro="shared", con="network hop"),
                        TradeoffOption(option="In-process", pro="fast", con="per-pod"),
                    ],
                )
            ],
            action_items=["Cap retries at 5", "Add a test for 429"],
        ),
        "usage": UsageSummary(
            calls=9,
            input_tokens=12_000,
            output_tokens=3_000,
            cached_input_tokens=40_000,
            cost_usd=0.4321,
            wall_ms=61_000,
        ),
    }
    fields.update(kw)
    return Advisory.model_validate(fields)


@pytest.mark.parametrize("resolution", list(Resolution))
def test_every_resolution_renders(resolution: Resolution) -> None:
    reason = None if resolution.is_verdict else "why it stopped"
    text = render_comment(advisory(resolution, reason=reason))
    assert text.startswith(COMMENT_MARKER)
    assert text.count(COMMENT_MARKER) == 1
    assert len(text) < GITHUB_LIMIT
    expected_title = {
        Resolution.APPROVED: "✅ Approved",
        Resolution.APPROVED_WITH_CONDITIONS: "🟡 Approved with conditions",
        Resolution.ESCALATE: "⚖️ Escalate: a person must decide",
        Resolution.REJECTED: "❌ Rejected",
        Resolution.NO_QUORUM: "⚠️ The council could not convene",
        Resolution.COST_LIMIT: "💸 Stopped at the cost limit",
        Resolution.CANCELLED: "⏹️ Deliberation cancelled",
        Resolution.FAILED: "⚠️ The deliberation failed",
        Resolution.NOTHING_TO_REVIEW: "➖ Nothing to review",
    }[resolution]
    assert f"## {expected_title}\n" in text
    if resolution.is_verdict:
        assert "**confidence 82%** · 3 seats" in text
    else:
        assert "**Why:** why it stopped" in text


def test_the_full_advisory_has_every_section() -> None:
    text = render_comment(advisory(conditions=["Cap retries at 5"]))
    visible = visible_text(text)
    for heading in (
        "### Findings",
        "### Recommendation",
        "### Conditions",
        "### Action items",
        "### Votes",
    ):
        assert heading in visible
    # The rest is collapsed, each section once.
    for heading in ("**Consensus**", "**Divergence**", "**Tradeoff map**"):
        assert heading in text and heading not in visible
    assert "<summary>All findings (1: 1 critical)</summary>" in text
    assert (
        "| #1 🔴 critical | src/module_0.py:L10-L20 | **Finding number 0** Detail Detail" in visible
    )
    assert visible.count("Finding number 0") == 1  # no second table of the same finding
    assert "| 2 seats (Member A, Member B) |" in visible
    assert "| Latency | Redis | shared | network hop |" in text
    # An action item that repeats a condition is said once, as the condition.
    assert "- Cap retries at 5\n\n### Action items\n\n1. Add a test for 429" in visible
    # All findings, the synthesis, 3 assessments, the cost.
    assert text.count("<details>") == text.count("</details>") == 6
    assert "| 9 | 12,000 | 40,000 | 0 | 3,000 | $0.4321 | 61.0 s |" in text
    # The approvals do not answer the critical finding: the gate blocks, and says so.
    assert "check `failure` · **confidence 82%** · 3 seats · protocol `board`" in visible
    assert "**Blocked by an open critical finding: the check fails until it is fixed" in visible


def test_vote_table_lists_each_seat() -> None:
    seats = [seat(0), seat(1, vote="REJECT"), seat(2, state=SeatState.TIMED_OUT)]
    text = render_comment(advisory(Resolution.ESCALATE, seats=seats, partial=True))
    assert "| Seat | Persona | Model | Vote | Confidence | Conditions |" in text
    # The cells are short: a seat's conditions are counted here, listed in its details.
    assert (
        "| Member A | Security Reviewer | anthropic:claude-sonnet-4-5 | APPROVE | 80% | 1 |" in text
    )
    assert "| Member B | Performance Engineer | openai:gpt-5 | REJECT | 80% | 1 |" in text
    assert "| Member C | API Designer | anthropic:claude-sonnet-4-5 | - (timed out) | - |" in text
    # Said in the same words as an earlier seat's details: counted, not repeated.
    assert "**Vote:** REJECT (80%). _(the rationale said above)_\n- _(+1 said above)_" in text


def test_without_votes_the_table_shows_assessment_verdicts() -> None:
    seats = [seat(0, vote=None), seat(1, vote=None)]
    text = render_comment(
        advisory(Resolution.APPROVED_WITH_CONDITIONS, protocol="quick", seats=seats)
    )
    assert "### Verdicts by seat" in text
    assert (
        "| Member A | Security Reviewer | anthropic:claude-sonnet-4-5 | CONCERNS | 75% | 1 |"
        in text
    )
    assert "- Retry loop is unbounded" in text  # in the seat's details


def test_partial_advisory_banner_names_the_missing_perspective() -> None:
    seats = [seat(0), seat(1), seat(2, state=SeatState.TIMED_OUT)]
    text = render_comment(advisory(seats=seats, partial=True))
    banner = (
        "> ⚠️ **Partial advisory (2 of 3 seats).** Missing perspectives: "
        "API Designer (timed out; lenses: performance)."
    )
    assert banner in text
    # It comes before anything the remaining seats said.
    assert text.index(banner) < text.index("Sound change once retries are capped.")
    assert "2 of 3 seats · protocol" in text


def test_no_quorum_names_each_seats_state() -> None:
    seats = [seat(0), seat(1, state=SeatState.TIMED_OUT), seat(2, state=SeatState.ERROR)]
    text = render_comment(
        advisory(
            Resolution.NO_QUORUM,
            seats=seats,
            reason="1 of 3 seats answered",
            synthesis=None,
            top_findings=[],
        )
    )
    assert "## ⚠️ The council could not convene" in text
    assert "| Member A | Security Reviewer | anthropic:claude-sonnet-4-5 | ok |" in text
    assert (
        "| Member B | Performance Engineer | openai:gpt-5 | timed out | deadline of 300 s passed |"
        in text
    )
    assert "| Member C | API Designer | anthropic:claude-sonnet-4-5 | error |" in text
    assert "Partial advisory" not in text


def test_cost_limit_says_what_was_gathered() -> None:
    text = render_comment(
        advisory(Resolution.COST_LIMIT, reason="spent $2.00 of $2.00", synthesis=None)
    )
    assert "**Why:** spent $2.00 of $2.00" in text
    assert "_What the council gathered before the limit:_" in text
    assert "### Findings" in text
    assert "<summary>Member A · Security Reviewer" in text


def test_model_text_is_sanitized_everywhere() -> None:
    hostile = f"@alice {COMMENT_MARKER} <img src=x> ![p](http://e/p.png) a|b\nc"
    adv = advisory(seats=[seat(0, text=hostile), seat(1)])
    adv.synthesis.consensus.append(hostile)  # type: ignore[union-attr]
    adv.findings[0].title = hostile
    text = render_comment(adv)
    assert text.count(COMMENT_MARKER) == 1
    assert "<img" not in text and "![p]" not in text
    assert "@alice" not in text and "@\u200balice" in text
    assert "a\\|b c" in text  # table cells escape pipes and stay on one line


def discussion(rounds: int, per_round: int) -> list[RoundRecord]:
    return [
        RoundRecord(
            round=r,
            messages=[
                RoundMessage(
                    seat_id=f"seat-{m % 3}",
                    message=DiscussionMessage(
                        type="CHALLENGE",
                        to_member="Member B",
                        point="P " * 50,
                        reasoning="R " * 200,
                    ),
                )
                for m in range(per_round)
            ],
        )
        for r in range(1, rounds + 1)
    ]


def test_discussion_details_show_messages_shifts_and_judge() -> None:
    adv = advisory(
        rounds=discussion(1, 2),
        shifts=[
            ShiftRecord(
                seat_id="seat-1",
                round=1,
                original_position="REJECT",
                new_position="APPROVE",
                changed_by="the cap",
            )
        ],
        judge_decisions=[
            JudgeRecord(
                cycle=1,
                decision=JudgeDecision(
                    decision="PARTIAL", reasoning="Gap", redebate_members=["Member A"], focus="cost"
                ),
            )
        ],
    )
    text = render_comment(adv)
    assert "<summary>Discussion (1 round, 2 messages, 1 shift)</summary>" in text
    # The same point of one round is said once, by every seat that made it.
    assert "- **Member A, Member B → Member B** · CHALLENGE:" in text
    assert "- Shift, **Member B**, round 1: REJECT → APPROVE (changed by: the cap)" in text
    assert "**Judge, cycle 1: PARTIAL** — Gap Re-debate: Member A. Focus: cost" in text


def test_a_huge_advisory_is_cut_to_size_keeping_verdict_banner_and_findings() -> None:
    huge = "Lorem ipsum dolor sit amet. " * 2_000
    seats = [seat(i, text=huge) for i in range(4)] + [seat(4, state=SeatState.TIMED_OUT)]
    for s in seats[:4]:
        assert s.assessment is not None
        s.assessment.findings = [
            Finding(severity="minor", path="x.py", start_line=i + 1, title=huge[:300], detail=huge)
            for i in range(40)
        ]
    top = [
        TopFinding(
            kind="finding",
            severity="critical",
            path=f"src/f{i}.py",
            start_line=i + 1,
            title=f"Top finding {i}",
            raised_by=["seat-0", "seat-1"],
        )
        for i in range(25)
    ]
    adv = advisory(
        Resolution.REJECTED,
        seats=seats,
        partial=True,
        findings=[merged_finding(i) for i in range(500)],
        top_findings=top,
        rounds=discussion(3, 40),
    )
    text = render_comment(adv)
    assert len(text) <= 65_000 < GITHUB_LIMIT
    assert text.startswith(COMMENT_MARKER)
    assert "## ❌ Rejected" in text
    assert "Partial advisory (4 of 5 seats)" in text
    visible = visible_text(text)
    assert len(visible) <= VISIBLE_TARGET
    assert visible.count("| #") == 7  # max_findings
    assert "…and 493 more findings: see **All findings** below." in visible
    assert text.count("<details>") == text.count("</details>")


def test_a_small_cap_is_respected() -> None:
    text = render_comment(advisory(rounds=discussion(2, 10)), max_chars=3_000)
    assert len(text) <= 3_000
    assert "## ✅ Approved" in text
    assert "| #1 🔴 critical | src/module_0.py:L10-L20 |" in text


# --- check run ----------------------------------------------------------------------------


CONCLUSIONS = [
    (Resolution.APPROVED, "success", "success"),
    (Resolution.APPROVED_WITH_CONDITIONS, "neutral", "neutral"),
    (Resolution.ESCALATE, "action_required", "neutral"),
    (Resolution.REJECTED, "failure", "neutral"),
    # Under `gate: verdict` nothing passes without a verdict.
    (Resolution.NO_QUORUM, "failure", "neutral"),
    (Resolution.COST_LIMIT, "failure", "neutral"),
    (Resolution.FAILED, "failure", "neutral"),
    (Resolution.NOTHING_TO_REVIEW, "failure", "neutral"),
    (Resolution.CANCELLED, "cancelled", "cancelled"),
]


@pytest.mark.parametrize(("resolution", "verdict_gate", "advisory_gate"), CONCLUSIONS)
def test_conclusion_for(resolution: Resolution, verdict_gate: str, advisory_gate: str) -> None:
    ended = Advisory(deliberation_id="d", protocol="board", topic="t", resolution=resolution)
    assert conclusion_for(ended) == verdict_gate
    assert conclusion_for(ended, "verdict") == verdict_gate
    assert conclusion_for(ended, "advisory") == advisory_gate


def test_check_run_carries_verdict_link_and_annotations() -> None:
    out = render_check_run(advisory(), comment_url="https://github.com/o/r/pull/1#issuecomment-9")
    # No approval answers the critical finding: it blocks the gate, first in the title.
    assert out.title == (
        "Blocked by an open critical finding: Finding number 0 (src/module_0.py:L10-L20) · "
        "Approved · confidence 82% · 3 seats"
    )
    assert "- Finding number 0 (src/module_0.py:L10-L20)" in out.summary
    assert "## ✅ Approved" in out.summary
    assert "[the council's comment](https://github.com/o/r/pull/1#issuecomment-9)" in out.summary
    assert "| 🔴 critical | src/module_0.py:L10-L20 | Finding number 0 |" in out.summary
    [ann] = out.annotations
    assert (ann.path, ann.start_line, ann.end_line, ann.annotation_level) == (
        "src/module_0.py",
        10,
        20,
        "failure",
    )
    assert ann.title == "[critical] Finding number 0"
    assert "Raised by 2 seats (Member A, Member B)." in ann.message
    assert ann.raw_details == "Do the right thing."


@pytest.mark.parametrize(
    "resolution", [Resolution.NO_QUORUM, Resolution.COST_LIMIT, Resolution.FAILED]
)
def test_non_verdicts_put_the_reason_in_the_title(resolution: Resolution) -> None:
    out = render_check_run(advisory(resolution, reason="only 1 of 3 seats answered"))
    assert out.title.endswith(": only 1 of 3 seats answered")


def test_advisory_gate_says_it_never_blocks() -> None:
    out = render_check_run(advisory(Resolution.REJECTED), gate="advisory")
    assert "never blocks" in out.summary


def test_annotation_levels_and_unanchored_findings() -> None:
    severities: list[Severity] = ["critical", "major", "minor", "nit"]
    findings = [merged_finding(i, sev) for i, sev in enumerate(severities)]
    findings.append(
        MergedFinding(
            severity="major",
            path="README.md",
            title="Docs",
            detail="d",
            raised_by=["seat-0"],
            consensus=1,
        )
    )
    anns = annotations_for(advisory(findings=findings))
    assert [a.annotation_level for a in anns] == ["failure", "warning", "warning", "notice"]


def test_annotations_go_in_batches_of_50() -> None:
    out = render_check_run(advisory(findings=[merged_finding(i) for i in range(120)]))
    assert len(out.annotations) == 120
    batches = annotation_batches(out.annotations)
    assert [len(b) for b in batches] == [50, 50, 20]
    assert [a for b in batches for a in b] == out.annotations
    assert annotation_batches([]) == []


def test_check_run_summary_stays_under_the_limit() -> None:
    top = [
        TopFinding(kind="red_flag", title="x" * 250 + str(i), raised_by=["seat-0"])
        for i in range(2_000)
    ]
    out = render_check_run(
        advisory(top_findings=top, findings=[merged_finding(i) for i in range(3_000)])
    )
    assert len(out.summary) < 65_535
    assert out.text is not None and len(out.text) < 65_535
    assert "more." in out.summary


HOSTILE_LINKS = (
    "Log in at [the fix](http://evil.example/login?next=/) or <http://x.example/a>, see "
    "https://evil.example/b and www.evil.example/c, read [the docs][1], and compare "
    "[the file](https://github.com/octo/repo/blob/main/app.py#L3).\n\n"
    "[1]: https://evil.example/ref"
)


def _hrefs(markdown: str) -> list[str]:
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(markdown)
    children = [c for t in tokens for c in (t.children or [])]
    return [str(c.attrs["href"]) for c in children if c.type == "link_open"]


def test_links_in_model_text_stay_links_only_into_the_repository() -> None:
    adv = advisory(seats=[seat(0, text=HOSTILE_LINKS), seat(1)])
    assert adv.synthesis is not None
    adv.synthesis.recommendation = HOSTILE_LINKS
    adv.findings[0].title = "See [login](https://evil.example/t) or https://evil.example/u"

    text = render_comment(adv, repo="octo/repo")

    assert "Log in at the fix (evil.example/login?next=/) or x.example/a, see" in text
    assert "evil.example/b and www\u200b.evil.example/c, read [the docs][1]" in text
    assert "\\[1]: evil.example/ref" in text  # the definition is text: `[the docs][1]` too
    assert "[the file](https://github.com/octo/repo/blob/main/app.py#L3)" in text
    assert "| **See login (evil.example/t) or evil.example/u** Detail" in text  # a table cell
    assert "http://" not in text and "https://evil" not in text
    hrefs = _hrefs(text)
    assert hrefs and set(hrefs) == {"https://github.com/octo/repo/blob/main/app.py#L3"}


def test_without_the_repository_no_model_link_stays_a_link() -> None:
    adv = advisory()
    assert adv.synthesis is not None
    adv.synthesis.recommendation = HOSTILE_LINKS

    text = render_comment(adv)

    assert "compare the file (github.com/octo/repo/blob/main/app.py#L3)." in text
    assert _hrefs(text) == []
