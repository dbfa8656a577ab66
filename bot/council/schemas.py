"""The structured answers a seat, judge or chair returns: the model-facing schemas.

These models are sent to providers as strict JSON schemas (OpenAI `json_schema` with
`strict: true`, Anthropic tool input schemas), so they keep to what strict mode accepts:
lists instead of maps, `extra="forbid"` on every object (`additionalProperties: false`), no
open dicts, nullable fields written `X | None` (the provider layer makes every property
required-but-nullable). Field descriptions are what the model reads: keep them short.

Every answer is validated locally with these same models whatever the provider claims.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.council.protocols import PROTOCOLS

__all__ = [
    "Assessment",
    "AssessmentVerdict",
    "DecisionPath",
    "DiscussionMessage",
    "DiscussionReply",
    "Divergence",
    "Finding",
    "JudgeDecision",
    "LensScore",
    "MergeDecision",
    "MergeGroup",
    "MessageType",
    "OutsideOpinion",
    "PanelDesign",
    "PanelistDesign",
    "PeerRanking",
    "Question",
    "Severity",
    "Synthesis",
    "TradeoffDimension",
    "TradeoffOption",
    "Vote",
    "VoteChoice",
]

Severity = Literal["critical", "major", "minor", "nit"]
AssessmentVerdict = Literal["APPROVE", "CONCERNS", "REJECT"]
VoteChoice = Literal["APPROVE", "REJECT"]
MessageType = Literal["CHALLENGE", "AGREE", "QUESTION", "CLARIFY", "SHIFT"]
JudgeVerdict = Literal["CONVERGED", "PARTIAL", "FULL"]
Stance = Literal["adversarial", "constructive", "neutral"]
_PANEL = PROTOCOLS["debate"].seats  # the designed panel's bounds


class _Strict(BaseModel):
    # `additionalProperties: false` in the schema; strict mode refuses objects without it.
    model_config = ConfigDict(extra="forbid")


class Finding(_Strict):
    """One issue anchored to the new side of the diff."""

    severity: Severity = Field(
        description="critical: must not merge; major: should fix before merge; "
        "minor: worth fixing; nit: cosmetic"
    )
    path: str = Field(description="File path relative to the repository root, as in the diff")
    start_line: int | None = Field(
        default=None, ge=1, description="First line on the new side of the diff; null if file-wide"
    )
    end_line: int | None = Field(
        default=None, ge=1, description="Last line (inclusive); null for a single line"
    )
    title: str = Field(description="The issue in under 12 words")
    detail: str = Field(description="What is wrong and why it matters")
    suggestion: str | None = Field(default=None, description="A concrete fix, or null")
    replacement: str | None = Field(
        default=None,
        description="Only when sure: the exact new code replacing lines start_line-end_line "
        "(all of them, indentation kept), shown as a suggested change; else null",
    )

    @model_validator(mode="after")
    def _ordered_lines(self) -> Finding:
        # Models sometimes swap the ends of a range; that is not worth a re-ask.
        if self.start_line is None and self.end_line is not None:
            self.start_line, self.end_line = self.end_line, None
        if self.start_line and self.end_line and self.end_line < self.start_line:
            self.start_line, self.end_line = self.end_line, self.start_line
        return self


class LensScore(_Strict):
    lens: str = Field(description="The lens name exactly as given in your brief")
    score: int | None = Field(
        ge=1, le=10, description="1-10; null when this lens does not apply to this change"
    )
    analysis: str = Field(description="Why this score, citing the code")


class Question(_Strict):
    to_member: str | None = Field(
        default=None, description='The member asked, e.g. "Member B"; null for everyone'
    )
    question: str


class Assessment(_Strict):
    """A seat's independent review of the pull request."""

    verdict: AssessmentVerdict = Field(
        description="APPROVE: mergeable; CONCERNS: mergeable, with concerns worth handling; "
        "REJECT: must not merge. Anything that must be done before merging goes in "
        "merge_conditions"
    )
    score: int = Field(ge=1, le=10, description="Overall quality, 1-10")
    summary: str = Field(description="Your judgement in 2-4 sentences")
    lens_scores: list[LensScore] = Field(description="One entry for every lens in your brief")
    red_flags: list[str] = Field(
        default_factory=list, description="Problems that alone should block the merge"
    )
    concerns: list[str] = Field(
        default_factory=list, description="Problems to handle before or soon after merging"
    )
    recommendations: list[str] = Field(default_factory=list)
    merge_conditions: list[str] = Field(
        default_factory=list,
        description="Only what must be done before merging, each one a checkable action; "
        "empty if it can merge as is. Not concerns, questions or things you could not verify",
    )
    questions: list[Question] = Field(
        default_factory=list, description="Questions for other members"
    )
    confidence: int = Field(ge=0, le=100, description="How sure you are, 0-100")
    findings: list[Finding] = Field(
        default_factory=list, description="Line-anchored issues; empty if none"
    )


class DiscussionMessage(_Strict):
    type: MessageType = Field(
        description="CHALLENGE a member's point; AGREE; QUESTION; CLARIFY (answer a question "
        "put to you); SHIFT (you changed your position)"
    )
    to_member: str | None = Field(
        default=None, description='The member addressed, e.g. "Member A"; null for all'
    )
    point: str = Field(description="The point in one sentence")
    reasoning: str = Field(description="Why, citing the code or the record")
    original_position: str | None = Field(default=None, description="SHIFT only: before")
    new_position: str | None = Field(default=None, description="SHIFT only: after")
    changed_by: str | None = Field(default=None, description="SHIFT only: what changed it")


class DiscussionReply(_Strict):
    messages: list[DiscussionMessage] = Field(description="Your messages this round")
    # Debate: where each panelist stands after each cycle (the position history).
    position: str | None = Field(
        default=None,
        description="Your position after this round: APPROVE, CONCERNS or REJECT, or the "
        "option you favour when the question is a choice",
    )
    confidence: int | None = Field(
        default=None, ge=0, le=100, description="How sure you are of it, 0-100"
    )
    dimensions: list[str] = Field(
        default_factory=list,
        description="The tradeoff dimensions that matter most to you, e.g. latency, cost",
    )


class Vote(_Strict):
    vote: VoteChoice
    confidence: float = Field(ge=0.0, le=1.0, description="0.0-1.0")
    rationale: str = Field(description="Why, in 1-3 sentences")
    conditions: list[str] = Field(
        default_factory=list,
        description="APPROVE: what must be true before merging (any condition makes the "
        "approval conditional; empty: approve as is); REJECT: what would change your vote",
    )
    suggestions: list[str] = Field(
        default_factory=list, description="Nice to have; never blocks the merge"
    )


class JudgeDecision(_Strict):
    """The step-back judge's call after a debate round."""

    decision: JudgeVerdict = Field(
        description="CONVERGED: debate is sufficient; PARTIAL: named members must re-debate; "
        "FULL: everyone must re-debate"
    )
    reasoning: str = Field(description="Framing issues, hidden assumptions, blind spots")
    redebate_members: list[str] = Field(
        default_factory=list, description='PARTIAL only: members to re-debate, e.g. "Member A"'
    )
    focus: str | None = Field(default=None, description="The question the re-debate must address")
    option_c: str | None = Field(default=None, description="An alternative nobody raised, or null")
    confidence: int | None = Field(
        default=None, ge=0, le=100, description="How sure you are of this decision, 0-100"
    )
    framing_issues: list[str] = Field(
        default_factory=list, description="Is the debate solving the right problem?"
    )
    hidden_assumptions: list[str] = Field(
        default_factory=list, description="Dangerous assumptions the members share"
    )
    blind_spots: list[str] = Field(
        default_factory=list, description="Dimensions that matter and nobody discusses"
    )
    meta_insight: str | None = Field(
        default=None, description="One or two sentences on the debate as a whole"
    )


class PanelistDesign(_Strict):
    name: str = Field(description='A name that says the lens, e.g. "Security Analyst"')
    lens: str = Field(description="What this panelist judges by; distinct from the others")
    stance: Stance = Field(description="adversarial finds problems; constructive finds value")
    brief: str = Field(description="Instructions for the panelist, 2-5 sentences")


class PanelDesign(_Strict):
    panelists: list[PanelistDesign] = Field(
        min_length=_PANEL.minimum,
        max_length=_PANEL.maximum,
        description=f"{_PANEL.minimum}-{_PANEL.maximum} panelists; at least one adversarial "
        "and one constructive",
    )
    is_choice: bool = Field(
        default=False,
        description="Whether the question names 2 or more options to choose between (e.g. "
        "'Redis or Postgres?'); a yes/no question such as 'should it merge?' is not",
    )
    options: list[str] = Field(
        default_factory=list, description="The options of a choice, 2-4; empty otherwise"
    )


class PeerRanking(_Strict):
    ranking: list[str] = Field(
        description='Member labels best answer first, e.g. ["Member B", "Member A"]'
    )
    reasoning: str


class MergeGroup(_Strict):
    findings: list[str] = Field(
        description='Ids of two or more findings that report the same issue, e.g. ["F1", "F4"]'
    )
    reason: str = Field(description="Why they are one issue, in one sentence")


class MergeDecision(_Strict):
    """The chair's answer: which of the candidate findings are the same issue."""

    groups: list[MergeGroup] = Field(
        description="One group per issue raised more than once; leave out every finding "
        "that stands alone; empty if every finding is a different issue"
    )


class Divergence(_Strict):
    point: str = Field(description="What the members disagree on")
    sides: list[str] = Field(description="Each side with who holds it, e.g. 'Member A: ...'")


class TradeoffOption(_Strict):
    option: str
    pro: str
    con: str


class TradeoffDimension(_Strict):
    dimension: str = Field(description="e.g. latency, operability, cost")
    options: list[TradeoffOption]


class DecisionPath(_Strict):
    condition: str = Field(description='e.g. "If latency is the top priority"')
    path: str = Field(description="What to do then, e.g. one of the options")


class OutsideOpinion(_Strict):
    """An independent opinion on the debate from a model that did not sit on it."""

    position: str = Field(
        description="APPROVE, CONCERNS or REJECT, or the option you favour for a choice"
    )
    key_argument: str = Field(description="Your strongest argument, 1-2 sentences")
    risks: list[str] = Field(default_factory=list, description="Risks the panel missed")
    conditions: list[str] = Field(default_factory=list, description="What would change your mind")
    agrees_with_panel: bool = Field(description="Whether you agree with the panel's lean")


class Synthesis(_Strict):
    """The chair's report, written from the anonymized record."""

    verdict_sentence: str = Field(description="The outcome in one sentence")
    consensus: list[str] = Field(description="Points most members share")
    divergence: list[Divergence] = Field(
        description="Every disagreement with each side, not only the majority's"
    )
    recommendation: str
    tradeoff_map: list[TradeoffDimension] = Field(
        default_factory=list, description="Only when the topic is a choice between options"
    )
    action_items: list[str] = Field(description="Concrete next steps, most important first")
    conditions: list[str] = Field(
        default_factory=list,
        description="APPROVED_WITH_CONDITIONS only: the members' conditions merged, at most 5, "
        "each a must-do before merging; empty for any other resolution",
    )
    decision_guide: list[DecisionPath] = Field(
        default_factory=list,
        description="Debate only: which path to take under which condition; empty otherwise",
    )
