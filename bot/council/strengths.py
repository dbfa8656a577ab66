"""Model strengths on a divergence (docs/deliberation.md, "Model strengths"): the operator says
which models are strong in which areas (`COUNCIL_MODEL_STRENGTHS`), and when the seats
disagree on the verdict, the seat whose model is strong in the disputed area weighs more
in the recommendation, which names it.

The disputed area is the change's dominant area (its concept: "auth" is security), else
the areas its signals name. A seat is strong in it when its model's listed strengths
normalize to that concept (`bot.council.scoring.normalize`).

The rule is bounded, and leaves the resolution alone: docs/deliberation.md says votes are not
weighted and a tie is ESCALATE (a person decides), so the verdict and the check run are
the unweighted rules' whatever the strengths say. What the strengths decide is the
recommendation's lean on the divergence:

- Strengths are tie-breakers, not vetoes: on a tie (ESCALATE) a strong seat's ballot
  counts `STRENGTH_WEIGHT` (1.5) and the recommendation leans to its side for the person
  who decides; a majority is only ever confirmed or noted as opposed, never overturned.
- A red flag or a critical finding keeps the recommendation from leaning toward approval.
- Strong seats on both sides cancel out.

Every case with a strong seat on a divergence is named in the recommendation: "Weighted
toward <model>, strong in security, on the divergence about security: ...".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.council.advisory import MergedFinding, Resolution
from bot.council.resolution import ResolutionResult
from bot.council.schemas import Assessment, Vote
from bot.council.scoring import GENERAL_TASK_TYPE, ReviewSignals, normalize, review_task_type

__all__ = [
    "STRENGTH_WEIGHT",
    "Voice",
    "disputed_areas",
    "voice",
    "weigh_divergence",
    "weigh_resolution",
]

STRENGTH_WEIGHT = 1.5


@dataclass(frozen=True)
class Voice:
    """One seat's ballot, as the resolution counted it."""

    model: str
    approve: bool
    confidence: float  # 0-1
    conditions: tuple[str, ...] = ()


def voice(
    model: str, assessment: Assessment | None, vote: Vote | None, *, by_votes: bool
) -> Voice | None:
    """The ballot a seat cast (None: it cast none), read as `resolve_votes` /
    `resolve_assessments` read it."""
    if by_votes:
        if vote is None:
            return None
        return Voice(model, vote.vote == "APPROVE", vote.confidence, tuple(vote.conditions))
    if assessment is None:
        return None
    approve = assessment.verdict != "REJECT"
    conditions = tuple(assessment.merge_conditions) if approve else ()
    return Voice(model, approve, assessment.confidence / 100, conditions)


def disputed_areas(signals: ReviewSignals) -> list[str]:
    """The concepts a divergence on this change is about: the dominant area, else every
    area the signals name."""
    task_type = review_task_type(signals)
    if task_type != GENERAL_TASK_TYPE:
        return [task_type]
    return list(dict.fromkeys(normalize(a) for a in signals.areas if a.strip()))


def _strong_in(
    model: str, areas: Sequence[str], strengths: Mapping[str, Sequence[str]]
) -> list[str]:
    listed = {normalize(s) for s in strengths.get(model, ())}
    return [a for a in areas if a in listed]


def weigh_divergence(
    result: ResolutionResult,
    voices: Sequence[Voice],
    *,
    strengths: Mapping[str, Sequence[str]],
    areas: Sequence[str],
    blocked: bool,
) -> str | None:
    """The sentence the recommendation adds on a divergence (see the module's doc); None:
    no divergence on the verdict, or no seat strong in its area."""
    if not strengths or not areas:
        return None
    approvers = [v for v in voices if v.approve]
    rejecters = [v for v in voices if not v.approve]
    if not approvers or not rejecters:
        return None  # no divergence on the verdict
    strong = {v.model: _strong_in(v.model, areas, strengths) for v in voices}
    strong_approve = [v for v in approvers if strong[v.model]]
    strong_reject = [v for v in rejecters if strong[v.model]]
    if not strong_approve and not strong_reject:
        return None
    side = strong_approve or strong_reject
    models = list(dict.fromkeys(v.model for v in side))
    shown_areas = list(dict.fromkeys(a for m in models for a in strong[m]))
    head = (
        f"Weighted toward {', '.join(models)}, strong in {', '.join(shown_areas)} "
        f"(the operator's model strengths), on the divergence about {', '.join(areas)} "
        f"({len(approvers)} approve, {len(rejecters)} reject)"
    )
    if strong_approve and strong_reject:
        return f"{head}: models strong in it sit on both sides, so the strengths cancel out."
    toward = "approval" if strong_approve else "rejection"
    if result.resolution is not Resolution.ESCALATE:
        majority = "approval" if len(approvers) > len(rejecters) else "rejection"
        stance = "sides with the majority" if majority == toward else "is in the minority"
        return (
            f"{head}: it {stance}; strengths break ties, they never overturn a majority, so "
            f"the recommendation follows the resolution ({result.resolution.value})."
        )
    if toward == "approval" and blocked:
        return (
            f"{head}: a red flag or a critical finding stands, so the recommendation does not "
            "lean toward approval on its weight; a person must decide."
        )
    weighted_for = len(approvers) + (STRENGTH_WEIGHT - 1) * len(strong_approve)
    weighted_against = len(rejecters) + (STRENGTH_WEIGHT - 1) * len(strong_reject)
    return (
        f"{head}: on this tie the recommendation leans toward {toward} "
        f"({weighted_for:g} to {weighted_against:g} at {STRENGTH_WEIGHT:g}x); the resolution "
        "stays ESCALATE, since votes are not weighted and a person decides."
    )


def weigh_resolution(
    result: ResolutionResult,
    seats: Sequence[tuple[str, Assessment | None, Vote | None]],
    *,
    by_votes: bool,
    strengths: Mapping[str, Sequence[str]],
    signals: ReviewSignals,
    findings: Sequence[MergedFinding],
) -> str | None:
    """`weigh_divergence` over the valid seats' (model, assessment, vote): no lean toward
    approval past any critical finding or any red flag a seat raised."""
    voices = [v for model, a, vote in seats if (v := voice(model, a, vote, by_votes=by_votes))]
    blocked = any(f.severity == "critical" for f in findings) or any(
        a is not None and any(flag.strip() for flag in a.red_flags) for _, a, _ in seats
    )
    return weigh_divergence(
        result,
        voices,
        strengths=strengths,
        areas=disputed_areas(signals),
        blocked=blocked,
    )
