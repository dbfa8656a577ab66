"""Model strengths are tie-breakers, not vetoes (docs/deliberation.md, "Model strengths");
one seat never approves alone; the operator's COUNCIL_MODEL_STRENGTHS and the repo's
chair_votes are validated."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config.load import load_repo_config
from bot.council.advisory import Advisory, Resolution
from bot.council.resolution import ResolutionResult, resolve_assessments, resolve_votes
from bot.council.schemas import Vote
from bot.council.scoring import ReviewSignals
from bot.council.strengths import Voice, disputed_areas, weigh_divergence
from bot.render import conclusion_for
from bot.settings import Settings

A, B, C = "anthropic:claude-sonnet-5-5", "openai:gpt-5.4", "ollama:llama3.1:8b"


def result(resolution: Resolution, approvals: int, rejections: int) -> ResolutionResult:
    return ResolutionResult(
        resolution=resolution,
        approvals=approvals,
        rejections=rejections,
        abstentions=0,
        n=approvals + rejections,
        conditions=[],
        confidence=0.8,
    )


def vote(kind: str) -> Vote:
    return Vote.model_validate(
        {
            "vote": kind,
            "confidence": 0.9,
            "rationale": "because",
            "conditions": [],
            "suggestions": [],
        }
    )


def test_one_seat_never_approves_alone() -> None:
    alone = resolve_votes([vote("APPROVE")])
    assert alone.resolution is Resolution.NO_QUORUM
    ended = Advisory(deliberation_id="d", protocol="board", topic="t", resolution=alone.resolution)
    assert conclusion_for(ended) == "failure"  # no verdict: the gate does not pass
    # Two seats that voted, one abstained: still one ballot, still no quorum.
    assert resolve_votes([vote("APPROVE"), None]).resolution is Resolution.NO_QUORUM
    assert resolve_assessments([None, None]).resolution is Resolution.NO_QUORUM


def test_on_a_tie_the_recommendation_leans_to_the_strong_model_and_the_tie_stands() -> None:
    tie = result(Resolution.ESCALATE, 1, 1)
    voices = [Voice(A, True, 0.8), Voice(B, False, 0.7)]
    said = weigh_divergence(
        tie, voices, strengths={B: ["security"]}, areas=["security"], blocked=False
    )
    assert said is not None and said.startswith(f"Weighted toward {B}, strong in security")
    assert "leans toward rejection (1 to 1.5 at 1.5x)" in said
    assert "the resolution stays ESCALATE" in said
    toward_a = weigh_divergence(
        tie, voices, strengths={A: ["security"]}, areas=["security"], blocked=False
    )
    assert toward_a is not None and "leans toward approval (1.5 to 1 at 1.5x)" in toward_a


def test_strengths_never_overturn_a_majority() -> None:
    majority = result(Resolution.APPROVED, 2, 1)
    voices = [Voice(A, True, 0.8), Voice(C, True, 0.8), Voice(B, False, 0.7)]
    said = weigh_divergence(
        majority, voices, strengths={B: ["security"]}, areas=["security"], blocked=False
    )
    assert said is not None and "is in the minority" in said and "never overturn" in said
    assert "follows the resolution (APPROVED)" in said


def test_a_red_flag_or_critical_finding_keeps_it_from_leaning_toward_approval() -> None:
    tie = result(Resolution.ESCALATE, 1, 1)
    voices = [Voice(A, True, 0.8), Voice(B, False, 0.7)]
    said = weigh_divergence(
        tie, voices, strengths={A: ["security"]}, areas=["security"], blocked=True
    )
    assert said is not None and "does not lean toward approval" in said
    assert "leans toward" not in said


def test_strong_models_on_both_sides_cancel_out() -> None:
    tie = result(Resolution.ESCALATE, 1, 1)
    voices = [Voice(A, True, 0.8), Voice(B, False, 0.7)]
    both = {A: ["security"], B: ["authn"]}  # authn is security too
    said = weigh_divergence(tie, voices, strengths=both, areas=["security"], blocked=False)
    assert said is not None and "cancel out" in said


def test_no_divergence_or_no_strong_seat_says_nothing() -> None:
    tie = result(Resolution.ESCALATE, 1, 1)
    voices = [Voice(A, True, 0.8), Voice(B, False, 0.7)]
    assert (
        weigh_divergence(
            tie, voices, strengths={A: ["frontend"]}, areas=["security"], blocked=False
        )
        is None
    )
    agreed = result(Resolution.APPROVED, 2, 0)
    assert (
        weigh_divergence(
            agreed,
            [Voice(A, True, 0.8), Voice(B, True, 0.8)],
            strengths={A: ["security"]},
            areas=["security"],
            blocked=False,
        )
        is None
    )


def test_the_disputed_area_is_the_dominant_one_else_the_signals_areas() -> None:
    assert disputed_areas(ReviewSignals(areas=("jwt", "sql"), dominant_area="auth")) == ["security"]
    assert disputed_areas(ReviewSignals(areas=("jwt", "sql"))) == ["security", "database"]


def test_model_strengths_setting_is_validated() -> None:
    good = Settings(_env_file=None, model_strengths={A: ["Security", " architecture "]})
    assert good.model_strengths == {A: ["security", "architecture"]}
    with pytest.raises(ValidationError, match="not a model reference"):
        Settings(_env_file=None, model_strengths={"claude": ["security"]})
    with pytest.raises(ValidationError, match="list 1-20 areas"):
        Settings(_env_file=None, model_strengths={A: []})


def test_model_strengths_setting_reads_json_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COUNCIL_MODEL_STRENGTHS", f'{{"{B}": ["performance"]}}')
    assert Settings(_env_file=None).model_strengths == {B: ["performance"]}


def test_chair_votes_is_a_validated_repo_key() -> None:
    settings = Settings(_env_file=None)
    assert load_repo_config(None, settings).config.chair_votes is False
    assert load_repo_config("chair_votes: true\n", settings).config.chair_votes is True
    bad = load_repo_config("chair_votes: sometimes\n", settings)
    assert bad.config.chair_votes is False
    assert [i.key for i in bad.issues] == ["chair_votes"]


def test_a_voting_chair_counts_toward_the_ranking_threshold() -> None:
    from bot.council.protocols import planned_calls

    plain = planned_calls("council", seats=2, rounds=1)
    voting = planned_calls("council", seats=2, rounds=1, chair_votes=True)
    assert not [c for c in plain if c.phase == "rank"]
    # 2 seats and the chair are 3 members: they rank each other, the chair too.
    assert [(c.party, c.seat) for c in voting if c.phase == "rank"] == [
        ("seat", 0),
        ("seat", 1),
        ("chair", None),
    ]
