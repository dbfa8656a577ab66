"""The merge gate's conclusions: what blocks a verdict, what an ending without one says, a
carried verdict, and README's table (checked against the code's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.council.advisory import (
    Advisory,
    CarriedVerdict,
    MergedFinding,
    Resolution,
    SeatReport,
    TopFinding,
)
from bot.council.scope import EarlierFinding, Rereview, ReviewScope
from bot.render import conclusion_for, render_check_run, render_comment
from bot.render.conclusion import GATE_TABLE, PASSING
from tests.unit.render.test_render import seat

README = Path(__file__).resolve().parents[3] / "README.md"
SQL = MergedFinding(
    severity="critical",
    path="app/db.py",
    start_line=12,
    end_line=14,
    title="SQL injection in the order lookup",
    detail="The id is formatted into the query.",
    raised_by=["seat-0"],
    consensus=1,
)


def approved(
    resolution: Resolution = Resolution.APPROVED,
    seats: list[SeatReport] | None = None,
    **fields: object,
) -> Advisory:
    return Advisory.model_validate(
        {
            "deliberation_id": "d",
            "protocol": "board",
            "topic": "t",
            "resolution": resolution,
            "confidence": 0.8,
            "seats": seats if seats is not None else [seat(0), seat(1), seat(2)],
            **fields,
        }
    )


def answering(i: int) -> SeatReport:
    """An approving seat whose vote speaks to the SQL injection."""
    s = seat(i)
    assert s.vote is not None
    vote = s.vote.model_copy(
        update={"rationale": "The SQL injection in the order lookup is fixed by binding."}
    )
    return s.model_copy(update={"vote": vote})


def test_a_plain_approval_passes() -> None:
    assert conclusion_for(approved()) == "success"


@pytest.mark.parametrize(
    "resolution", [Resolution.APPROVED, Resolution.APPROVED_WITH_CONDITIONS, Resolution.ESCALATE]
)
def test_an_unanswered_critical_finding_fails_every_verdict_that_would_not(
    resolution: Resolution,
) -> None:
    advisory = approved(resolution, findings=[SQL])
    assert conclusion_for(advisory) == "failure"
    assert conclusion_for(advisory, "advisory") not in ("failure", "action_required")
    title = render_check_run(advisory).title
    assert title.startswith(
        "Blocked by an open critical finding: SQL injection in the order lookup (app/db.py:L12-L14)"
    )


def test_a_critical_finding_an_approving_vote_answered_does_not_block() -> None:
    advisory = approved(findings=[SQL], seats=[answering(0), seat(1), seat(2)])
    assert conclusion_for(advisory) == "success"


def test_an_unanswered_red_flag_blocks() -> None:
    flag = TopFinding(kind="red_flag", title="Secrets are logged in plain text", raised_by=["s"])
    advisory = approved(top_findings=[flag])
    assert conclusion_for(advisory) == "failure"
    assert "Secrets are logged in plain text" in render_check_run(advisory).title


def test_a_critical_finding_still_open_from_an_earlier_review_blocks() -> None:
    earlier = EarlierFinding(
        path="app/db.py", line=12, title=SQL.title, severity="critical", status="open"
    )
    fixed = earlier.model_copy(update={"status": "fixed", "title": "Another one"})
    scope = ReviewScope(rereview=Rereview(since="a" * 40, commits=1, findings=[earlier, fixed]))
    advisory = approved(scope=scope)
    assert conclusion_for(advisory) == "failure"
    out = render_check_run(advisory)
    assert "raised at aaaaaaa and still open" in out.title + out.summary
    assert "Another one" not in out.title  # fixed: no longer blocks
    # The comment names an earlier blocker (its findings table has only this review's).
    comment = render_comment(advisory)
    assert "check `failure`" in comment and "raised at aaaaaaa and still open" in comment


def test_a_rejection_says_rejected_not_blocked() -> None:
    advisory = approved(Resolution.REJECTED, findings=[SQL])
    out = render_check_run(advisory)
    assert conclusion_for(advisory) == "failure" and out.title.startswith("Rejected")


@pytest.mark.parametrize(
    ("resolution", "heading", "todo"),
    [
        (Resolution.NO_QUORUM, "No verdict: the council could not convene", "re-run the review"),
        (Resolution.COST_LIMIT, "No verdict: stopped at the cost limit", "raises the cap"),
        (Resolution.FAILED, "No verdict: the deliberation failed", "fix what the reason names"),
        (Resolution.NOTHING_TO_REVIEW, "No verdict: nothing to review", "a person reviews"),
    ],
)
def test_an_ending_without_a_verdict_fails_and_says_what_to_do(
    resolution: Resolution, heading: str, todo: str
) -> None:
    advisory = approved(resolution, seats=[], reason="why it stopped")
    out = render_check_run(advisory)
    assert conclusion_for(advisory) == "failure"
    assert out.title == f"{heading}: why it stopped"
    assert todo in out.summary
    advisory_gate = render_check_run(advisory, gate="advisory")
    assert conclusion_for(advisory, "advisory") == "neutral"
    assert todo not in advisory_gate.summary


def test_a_carried_verdict_keeps_its_conclusion_and_names_its_head() -> None:
    given = approved(Resolution.REJECTED, findings=[SQL])
    carried = given.model_copy(
        update={
            "carried_from": CarriedVerdict(
                head_sha="b" * 40, deliberation_id="d0", reason="a merge of the base branch"
            )
        }
    )
    out = render_check_run(carried)
    assert conclusion_for(carried) == "failure"
    assert out.title.startswith("Carried from bbbbbbb: Rejected")
    assert "The verdict given on bbbbbbb stands" in out.summary
    assert out.annotations == []  # its lines were read at the other head
    assert render_check_run(given).annotations  # the original had them


def test_readme_gate_table_is_the_codes() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- gate-table:.*?-->\n(.*?)<!-- /gate-table -->", text, re.S)
    assert block is not None, "README has no gate table"
    rows = [
        [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        for line in block.group(1).strip().splitlines()[2:]
    ]
    expected = [[r.ending, r.verdict_gate, r.passes, r.advisory_gate] for r in GATE_TABLE]
    assert rows == expected
    for row in GATE_TABLE:  # the table's own claim: "passes" is GitHub's rule
        if row.passes in ("yes", "no"):
            assert (row.passes == "yes") == (row.verdict_gate in PASSING)
