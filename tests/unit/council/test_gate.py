"""The completeness gate: valid answers that are not answers get re-asked."""

from __future__ import annotations

import pytest

from bot.council.gate import check_complete
from bot.council.schemas import Assessment, Finding, LensScore

LENSES = ["Security", "Error handling"]


def answer(
    summary: str = "The retry loop can spin forever when the API returns 429; otherwise sound.",
    lenses: tuple[str, ...] = ("security", "error handling"),
    concerns: tuple[str, ...] = (),
    findings: tuple[Finding, ...] = (),
    analysis: str = "Checked token handling in client.py.",
) -> Assessment:
    return Assessment(
        verdict="CONCERNS",
        score=6,
        summary=summary,
        lens_scores=[LensScore(lens=name, score=6, analysis=analysis) for name in lenses],
        concerns=list(concerns),
        confidence=70,
        findings=list(findings),
    )


def test_a_complete_answer_passes() -> None:
    assert check_complete(answer(concerns=("Unbounded retry",)), LENSES) is None


def test_a_complete_answer_without_concerns_passes() -> None:
    assert check_complete(answer(summary="Clean change; no issues found."), LENSES) is None


@pytest.mark.parametrize(
    "summary",
    [
        "Please provide the full diff so I can review it.",
        "I need more context about the deployment before I can judge.",
        "I will review the change once you share the remaining files.",
        "I cannot review this without the test files.",
        "I'd be happy to review this pull request! Let me know which files matter most.",
        "No code was provided in the request.",
    ],
)
def test_a_deferral_is_reasked(summary: str) -> None:
    reason = check_complete(answer(summary=summary), LENSES)
    assert reason is not None
    assert "review it now" in reason


def test_a_deferral_dressed_as_a_concern_is_still_a_deferral() -> None:
    a = answer(
        summary="Please share the remaining files.", concerns=("Could you provide the tests?",)
    )
    assert check_complete(a, LENSES) is not None


def test_politeness_after_a_real_review_is_not_a_deferral() -> None:
    finding = Finding(
        severity="major",
        path="client.py",
        start_line=40,
        title="Unbounded retry",
        detail="Spins on 429.",
    )
    a = answer(
        summary="Retry loop is unbounded. Let me know if you want a patch.", findings=(finding,)
    )
    assert check_complete(a, LENSES) is None


def test_a_missing_lens_is_named_in_the_reason() -> None:
    reason = check_complete(answer(lenses=("security",)), LENSES)
    assert reason is not None
    assert '"Error handling"' in reason
    assert "Security" not in reason


def test_lens_names_match_case_and_punctuation_insensitively() -> None:
    a = answer(lenses=("SECURITY", "error-handling"))
    assert check_complete(a, LENSES) is None


def test_an_answer_with_no_content_at_all_is_reasked() -> None:
    reason = check_complete(answer(summary="  ", analysis=""), LENSES)
    assert reason is not None
    assert "no summary" in reason


def test_an_answer_with_no_verdict_is_reasked() -> None:
    a = Assessment.model_construct(**{**answer().model_dump(), "verdict": None})
    assert check_complete(a, LENSES) is not None
