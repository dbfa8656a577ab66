"""The structured answers of the `strategies` protocol's own calls (model-facing schemas).

Kept to what strict JSON schemas accept, as `bot.council.schemas` is: lists not maps,
`extra="forbid"` everywhere, nullable fields written `X | None`. Bounds a model might
overstep (a referee's adjustment) are described, not enforced by the schema: the engine
clamps them (`bot.council.protocols.strategies.rules`), so an eager referee costs no
re-ask. Lists are bounded and each answer has its output budget, sized as
`bot.council.schemas` says.
"""

from __future__ import annotations

from typing import ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from bot.council.protocols import PROTOCOLS
from bot.council.schemas import AssessmentVerdict, Severity, at_most

__all__ = [
    "TASK_TYPES",
    "CritiqueOf",
    "CritiqueReply",
    "Evidence",
    "HunterPoint",
    "ReconciledDrop",
    "ReconciledElement",
    "Reconciliation",
    "RubricScores",
    "TaskType",
    "TaskTypeAnswer",
]

TaskType = Literal[
    "bug-fix",
    "feature",
    "refactor",
    "architecture",
    "performance",
    "security",
    "dependency",
    "docs",
    "tests-only",
]
TASK_TYPES: tuple[TaskType, ...] = get_args(TaskType)
# The members a strategies deliberation seats at most (a critique names the others).
_MEMBERS = PROTOCOLS["strategies"].seats.maximum or 3


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskTypeAnswer(_Strict):
    """The one cheap call made when the change's signals do not say what kind of task it is."""

    task_type: TaskType = Field(description="The kind of change this pull request mainly is")
    reason: str = Field(description="Why, in one sentence")

    # ~60 tokens; the call is sent no more than `CLASSIFY_MAX_TOKENS`
    # (`bot.council.protocols.strategies.seating`).
    OUTPUT_TOKENS: ClassVar[int] = 512


class RubricScores(_Strict):
    """The 100-point rubric: five dimensions, each out of its weight."""

    correctness: int = Field(ge=0, le=30, description="0-30: solves the stated problem")
    completeness: int = Field(ge=0, le=20, description="0-20: edge cases, requirements")
    elegance: int = Field(ge=0, le=15, description="0-15: simple, clean, maintainable")
    robustness: int = Field(ge=0, le=20, description="0-20: errors, performance, security")
    integration: int = Field(ge=0, le=15, description="0-15: fits the codebase's patterns")


class HunterPoint(_Strict):
    severity: Severity = Field(description="critical, major, minor or nit")
    path: str | None = Field(default=None, description="File of the new side, or null")
    line: int | None = Field(default=None, ge=1, description="Line of the new side, or null")
    point: str = Field(description="What the analysis missed, in one sentence")


class CritiqueOf(_Strict):
    """One member's analysis, attacked, checked and scored."""

    member: str = Field(description='The member critiqued, e.g. "Member B"')
    hunter: list[HunterPoint] = at_most(
        5, "HUNTER: what this analysis missed that your strategy catches"
    )
    skeptic: list[str] = at_most(
        5, "SKEPTIC: its claims the diff does not support; empty if all hold"
    )
    referee: RubricScores  # REFEREE: its analysis on the rubric (no description: a $ref)
    adjustment: int = Field(
        description="REFEREE: -15 to +15 points for what the critique showed (undefended "
        "weaknesses lower it, claims that survived raise it)"
    )
    reason: str = Field(description="Why these scores and this adjustment, in 1-2 sentences")


class Evidence(_Strict):
    path: str = Field(description="File of the new side")
    line: int | None = Field(default=None, ge=1, description="Line, or null for file-wide")
    point: str = Field(description="What it shows, in one sentence")


class CritiqueReply(_Strict):
    """A member's cross-critique of the other analyses, and its own position after it."""

    critiques: list[CritiqueOf] = at_most(_MEMBERS, "One entry per other member listed")
    verdict: AssessmentVerdict = Field(
        description="Your verdict now: APPROVE, CONCERNS or REJECT (the same as before, "
        "unless new evidence changed it)"
    )
    position: str = Field(description="Your position now, in 1-2 sentences")
    new_evidence: list[Evidence] = at_most(
        5,
        "Only evidence not cited before (by you or anyone): file and line that "
        "changed or confirmed your position; empty if none",
        default_factory=list,
    )

    # Worst case ~2,300 tokens: 3 critiques (~650 each: 5 hunter points, 5 skeptic claims,
    # the rubric, the reason), the position and 5 pieces of new evidence.
    OUTPUT_TOKENS: ClassVar[int] = 3072


class ReconciledElement(_Strict):
    member: str = Field(description='The member whose element it is, e.g. "Member C"')
    element: str = Field(description="What of its analysis improves the leading plan")


class ReconciledDrop(_Strict):
    member: str = Field(description='The member, e.g. "Member C"')
    reason: str = Field(description="Why its approach is not adopted, in one sentence")


class Reconciliation(_Strict):
    """The chair's reconciliation of close analyses."""

    merged_plan: str = Field(description="The leading plan with the others' best elements")
    complementary: list[ReconciledElement] = at_most(
        6, "Elements of the other analyses merged into the leading one"
    )
    dropped: list[ReconciledDrop] = at_most(_MEMBERS, "Each other analysis not adopted, with why")
    unresolved: str | None = Field(
        default=None, description="A conflict that stays open, with its trade-off; or null"
    )

    # Worst case ~700 tokens: the merged plan, 6 elements and 3 drops of one sentence each.
    OUTPUT_TOKENS: ClassVar[int] = 1024
