"""The completeness gate: valid answers that are not answers get re-asked."""

from __future__ import annotations

import pytest

from bot.council.gate import (
    LENS_MATCH_THRESHOLD,
    check_complete,
    gate_assessment,
    lens_similarity,
    match_lens_names,
)
from bot.council.personas import load_catalog
from bot.council.schemas import Assessment, Finding, LensScore
from tests.support.council_answers import CouncilScript

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


# --- matching lens names ---------------------------------------------------------------------

CATALOG = load_catalog()


def lenses_of(persona_id: str) -> list[str]:
    persona = CATALOG.get(persona_id)
    assert persona is not None
    return list(persona.lenses)


def test_exact_names_match_themselves() -> None:
    assert match_lens_names(["security", "Error handling"], LENSES) == [
        "Security",
        "Error handling",
    ]


@pytest.mark.parametrize(
    ("written", "lens"),
    [
        ("INJECTION AND UNTRUSTED INPUT", "injection and untrusted input"),
        ("Injection & untrusted input.", "injection and untrusted input"),
        ("hot path work & i/o", "hot-path work and I/O"),
        ("hot_path_work_and_io", "hot-path work and I/O"),
        ("Race and shared mutable states", "races and shared mutable state"),
        ("Backwards-Compatibility", "backward compatibility"),
        ("Secret and sensitive data", "secrets and sensitive data"),
        ("Transaction boundary", "transaction boundaries"),
    ],
)
def test_normalised_names_match(written: str, lens: str) -> None:
    brief = next(lenses_of(p) for p in CATALOG.ids() if lens in lenses_of(p))
    assert match_lens_names([written], brief) == [lens]


# Paraphrases real models wrote (or would write) for lenses of the catalog, each matched
# against its persona's whole brief: one entry, so no fallback by order can rescue it.
PARAPHRASES = [
    ("appsec-reviewer", "Security (authn/authz)", "authentication and authorization"),
    ("appsec-reviewer", "AuthN & AuthZ", "authentication and authorization"),
    ("appsec-reviewer", "Input validation and injection", "injection and untrusted input"),
    ("appsec-reviewer", "Secret management", "secrets and sensitive data"),
    ("appsec-reviewer", "Crypto usage", "cryptography use"),
    ("concurrency-analyst", "Race conditions and shared state", "races and shared mutable state"),
    ("concurrency-analyst", "Locking & deadlocks", "locking and deadlock risk"),
    ("database-engineer", "Query performance and indexing", "query efficiency and indexes"),
    ("database-engineer", "Transactions", "transaction boundaries"),
    ("api-contract-reviewer", "API backward-compatibility", "backward compatibility"),
    ("api-contract-reviewer", "Error and resource modeling", "resource and error modelling"),
    ("sre-reliability", "Error handling and timeouts", "failure handling and timeouts"),
    ("sre-reliability", "Observability (logging, metrics, tracing)", "observability"),
    ("sre-reliability", "Rollout/rollback safety", "rollout and rollback safety"),
    ("performance-engineer", "Algorithmic complexity (Big-O)", "algorithmic complexity"),
    ("performance-engineer", "Hot-path performance and I/O", "hot-path work and I/O"),
    ("performance-engineer", "Behavior at scale", "behaviour at scale"),
    ("migration-safety", "Rollback strategy", "rollback plan"),
    ("library-api-designer", "Semver discipline", "semantic versioning discipline"),
    ("library-api-designer", "Deprecation strategy", "deprecation path"),
    ("test-engineer", "Edge cases & failure modes", "edge and failure cases"),
    ("test-engineer", "Test determinism and isolation", "determinism and isolation"),
    (
        "accessibility-reviewer",
        "Keyboard accessibility and focus management",
        "keyboard access and focus",
    ),
    ("frontend-engineer", "Rendering & bundle size", "rendering and bundle cost"),
    ("docs-reviewer", "Accuracy vs. the code", "accuracy against the code"),
    ("software-architect", "Evolvability (future change)", "evolvability"),
]


@pytest.mark.parametrize(("persona", "written", "lens"), PARAPHRASES)
def test_a_paraphrase_matches_its_lens_and_no_other(persona: str, written: str, lens: str) -> None:
    brief = lenses_of(persona)
    assert lens in brief
    assert match_lens_names([written], brief) == [lens]
    assert lens_similarity(written, lens) >= LENS_MATCH_THRESHOLD
    assert all(
        lens_similarity(written, other) < lens_similarity(written, lens)
        for other in brief
        if other != lens
    )


@pytest.mark.parametrize(
    ("written", "lens"),
    [
        ("Performance", "injection and untrusted input"),
        ("Documentation", "cryptography use"),
        ("Code style", "secrets and sensitive data"),
        ("Test coverage", "rollback plan"),
        ("Maintainability", "observability"),
        ("Database migrations", "secrets and sensitive data"),
        # Names that share one of two words but name different things.
        ("Backward compatibility", "browser compatibility"),
        ("Rollout plan", "rollback plan"),
        ("Test maintainability", "tests prove the change"),
        ("User impact", "user-facing copy and errors"),
    ],
)
def test_an_unrelated_name_is_not_matched(written: str, lens: str) -> None:
    assert lens_similarity(written, lens) < LENS_MATCH_THRESHOLD
    # With another lens left over the order cannot pair it either.
    assert match_lens_names([written], [lens, "zzz"]) == [None]


def test_the_order_pairs_what_is_left_only_when_the_counts_are_equal() -> None:
    assert match_lens_names(["Foo", "Bar"], LENSES) == ["Security", "Error handling"]
    assert match_lens_names(["Foo"], LENSES) == [None]
    assert match_lens_names(["Foo", "Bar", "Baz"], LENSES) == [None, None, None]
    # Names first, then the order for the rest: "Foo" takes the one lens left.
    assert match_lens_names(["Foo", "Security (authn/authz)"], LENSES) == [
        "Error handling",
        "Security",
    ]


def test_one_entry_matches_one_lens_and_a_second_score_of_a_lens_is_not_moved() -> None:
    assert match_lens_names(["security", "SECURITY"], LENSES) == ["Security", None]
    # The closer name wins the lens; the other is a second score for it, not "Error handling".
    assert match_lens_names(["Security (authn/authz)", "Security"], LENSES) == [None, "Security"]
    brief = lenses_of("appsec-reviewer")
    written = ["Authentication", "Authorization checks"]
    assert match_lens_names(written, brief).count("authentication and authorization") == 1


def test_the_best_pair_wins_whatever_the_order_of_the_entries() -> None:
    brief = lenses_of("sre-reliability")  # rollout and rollback safety, resource limits, ...
    written = ["Rollback safety", "Rollout and rollback safety"]
    assert match_lens_names(written, brief) == [None, "rollout and rollback safety"]


# --- the gate keeps the brief's names ------------------------------------------------------


def test_paraphrased_lenses_pass_the_gate_renamed_to_the_briefs_in_its_order() -> None:
    a = answer(lenses=("Error handling & resilience", "Security (authn/authz)"))
    gated = gate_assessment(a, LENSES)
    assert gated.reason is None and gated.missing == [] and gated.answered
    assert [s.lens for s in gated.assessment.lens_scores] == LENSES


def test_a_missing_lens_leaves_a_real_answer_to_keep() -> None:
    gated = gate_assessment(answer(lenses=("Security review",)), LENSES)
    assert gated.reason is not None and '"Error handling"' in gated.reason
    assert gated.missing == ["Error handling"] and gated.answered
    assert [s.lens for s in gated.assessment.lens_scores] == ["Security"]


def test_a_deferral_is_no_answer_to_keep() -> None:
    gated = gate_assessment(answer(summary="Please provide the full diff.", lenses=()), LENSES)
    assert gated.reason is not None and not gated.answered


def test_a_lens_marked_not_applicable_counts_as_scored() -> None:
    a = answer()
    a.lens_scores[1] = LensScore(lens="error handling", score=None, analysis="No error paths.")
    gated = gate_assessment(a, LENSES)
    assert gated.reason is None
    assert gated.assessment.lens_scores[1].score is None


def test_a_lens_score_may_be_null_in_the_strict_schema_but_not_out_of_range() -> None:
    from pydantic import ValidationError

    from bot.providers.schema import strict_schema
    from tests.support.model_server import strict_schema_error

    assert strict_schema_error(strict_schema(Assessment)) is None
    assert LensScore.model_validate({"lens": "x", "score": None, "analysis": ""}).score is None
    with pytest.raises(ValidationError):
        LensScore.model_validate({"lens": "x", "score": 0, "analysis": ""})


@pytest.mark.parametrize("limit", [1, 2, 3, None])
def test_the_scripts_paraphrases_of_every_catalog_brief_match_their_lenses(
    limit: int | None,
) -> None:
    """What the fakes answer with `lens_names="paraphrase"` is matched lens for lens."""
    script = CouncilScript(lens_names="paraphrase", lens_limit=limit)
    for persona in CATALOG.ids():
        brief = lenses_of(persona)
        text = "Your lenses (score each one):\n" + "\n".join(f"- {lens}" for lens in brief)
        data = script.answer("submit_assessment", text)
        assert data is not None
        written = [e["lens"] for e in data["lens_scores"]]
        assert not set(written) & set(brief)  # reworded, every one
        meant = [
            e["analysis"].removeprefix("Checked ").removesuffix(" in the diff.")
            for e in data["lens_scores"]
        ]
        assert match_lens_names(written, brief) == meant
