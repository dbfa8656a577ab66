"""The structured answers a seat, judge or chair returns: the model-facing schemas.

These models are sent to providers as strict JSON schemas (OpenAI `json_schema` with
`strict: true`, Anthropic tool input schemas), so they keep to what strict mode accepts:
lists instead of maps, `extra="forbid"` on every object (`additionalProperties: false`), no
open dicts, nullable fields written `X | None` (the provider layer makes every property
required-but-nullable). Field descriptions are what the model reads: keep them short.

Every answer is validated locally with these same models whatever the provider claims.

Lists are bounded (`at_most`: `maxItems` in the schema sent, so a grammar-constrained server
stops a list there) and each answer has an output budget (`OUTPUT_TOKENS`, what its call
asks for: `OutputTool.output_tokens`), so a small model that repeats one item cannot write
until its window runs out. Each budget is the schema's worst case - every list full, every
text at a typical length - and a fifth more, rounded up to 256 (512 at least);
tests/unit/council/test_output_budgets.py recomputes the worst case and holds each budget
above it.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.council.protocols.debate import DEBATE

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
    "at_most",
]

Severity = Literal["critical", "major", "minor", "nit"]
AssessmentVerdict = Literal["APPROVE", "CONCERNS", "REJECT"]
VoteChoice = Literal["APPROVE", "REJECT"]
MessageType = Literal["CHALLENGE", "AGREE", "QUESTION", "CLARIFY", "SHIFT"]
JudgeVerdict = Literal["CONVERGED", "PARTIAL", "FULL"]
Stance = Literal["adversarial", "constructive", "neutral"]
_PANEL = DEBATE.seats  # the designed panel's bounds
# Lenses a seat's brief can list: a built-in persona has 4, a neutral seat 3, a strategy
# lens 2-3; a custom persona's lenses past 12 are left unscored (bot/council/gate.py).
MAX_LENSES = 12
# Members a seat can name (a board seats at most 9; a council one per model).
MAX_MEMBERS = 12


def at_most(n: int, description: str | None = None, **kw: Any) -> Any:
    """A list field of at most `n` items: `maxItems` in the schema the model is sent (a
    grammar stops the list there). An answer past it is cut to the first `n` with a note
    (bot/providers/ranges.py `within_items`), never refused; validation does not hold the
    bound, so a record kept before it was set still loads."""
    return Field(json_schema_extra={"maxItems": n}, description=description, **kw)


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
    lens_scores: list[LensScore] = at_most(MAX_LENSES, "One entry for every lens in your brief")
    red_flags: list[str] = at_most(
        5, "Problems that alone should block the merge", default_factory=list
    )
    concerns: list[str] = at_most(
        8, "Problems to handle before or soon after merging", default_factory=list
    )
    recommendations: list[str] = at_most(8, default_factory=list)
    merge_conditions: list[str] = at_most(
        5,
        "Only what must be done before merging, each one a checkable action; "
        "empty if it can merge as is. Not concerns, questions or things you could not verify",
        default_factory=list,
    )
    questions: list[Question] = at_most(3, "Questions for other members", default_factory=list)
    confidence: int = Field(ge=0, le=100, description="How sure you are, 0-100")
    findings: list[Finding] = at_most(
        15, "Line-anchored issues, the most important first; empty if none", default_factory=list
    )

    # Worst case ~5,400 tokens: 15 findings (~210 each, a replacement included), 12 lens
    # scores (~85), 26 one-sentence items (~40), 3 questions, the summary.
    OUTPUT_TOKENS: ClassVar[int] = 6656


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
    messages: list[DiscussionMessage] = at_most(6, "Your messages this round")
    # Debate: where each panelist stands after each cycle (the position history).
    position: str | None = Field(
        default=None,
        description="Your position after this round: APPROVE, CONCERNS or REJECT, or the "
        "option you favour when the question is a choice",
    )
    confidence: int | None = Field(
        default=None, ge=0, le=100, description="How sure you are of it, 0-100"
    )
    dimensions: list[str] = at_most(
        5,
        "The tradeoff dimensions that matter most to you, e.g. latency, cost",
        default_factory=list,
    )

    # Worst case ~1,800 tokens: 6 messages (~290 each, a SHIFT's three fields included).
    OUTPUT_TOKENS: ClassVar[int] = 2304


class Vote(_Strict):
    vote: VoteChoice
    confidence: float = Field(ge=0.0, le=1.0, description="0.0-1.0")
    rationale: str = Field(description="Why, in 1-3 sentences")
    conditions: list[str] = at_most(
        5,
        "APPROVE: what must be true before merging (any condition makes the "
        "approval conditional; empty: approve as is); REJECT: what would change your vote",
        default_factory=list,
    )
    suggestions: list[str] = at_most(
        5, "Nice to have; never blocks the merge", default_factory=list
    )

    # Worst case ~450 tokens: the rationale and 10 one-sentence items.
    OUTPUT_TOKENS: ClassVar[int] = 768


class JudgeDecision(_Strict):
    """The step-back judge's call after a debate round."""

    decision: JudgeVerdict = Field(
        description="CONVERGED: debate is sufficient; PARTIAL: named members must re-debate; "
        "FULL: everyone must re-debate"
    )
    reasoning: str = Field(description="Framing issues, hidden assumptions, blind spots")
    redebate_members: list[str] = at_most(
        _PANEL.maximum or MAX_MEMBERS,
        'PARTIAL only: members to re-debate, e.g. "Member A"',
        default_factory=list,
    )
    focus: str | None = Field(default=None, description="The question the re-debate must address")
    option_c: str | None = Field(default=None, description="An alternative nobody raised, or null")
    confidence: int | None = Field(
        default=None, ge=0, le=100, description="How sure you are of this decision, 0-100"
    )
    framing_issues: list[str] = at_most(
        5, "Is the debate solving the right problem?", default_factory=list
    )
    hidden_assumptions: list[str] = at_most(
        5, "Dangerous assumptions the members share", default_factory=list
    )
    blind_spots: list[str] = at_most(
        5, "Dimensions that matter and nobody discusses", default_factory=list
    )
    meta_insight: str | None = Field(
        default=None, description="One or two sentences on the debate as a whole"
    )

    # Worst case ~850 tokens: the reasoning, focus and option C, 15 one-sentence items.
    OUTPUT_TOKENS: ClassVar[int] = 1024


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
    options: list[str] = at_most(
        4, "The options of a choice, 2-4; empty otherwise", default_factory=list
    )

    # Worst case ~650 tokens: 4 panelists (~150 each, the brief most of it) and 4 options.
    OUTPUT_TOKENS: ClassVar[int] = 1024


class PeerRanking(_Strict):
    ranking: list[str] = at_most(
        MAX_MEMBERS, 'Member labels best answer first, e.g. ["Member B", "Member A"]'
    )
    reasoning: str

    # Worst case ~150 tokens: 12 labels and the reasoning.
    OUTPUT_TOKENS: ClassVar[int] = 512


class MergeGroup(_Strict):
    findings: list[str] = at_most(
        10, 'Ids of two or more findings that report the same issue, e.g. ["F1", "F4"]'
    )
    reason: str = Field(description="Why they are one issue, in one sentence")


class MergeDecision(_Strict):
    """The chair's answer: which of the candidate findings are the same issue."""

    groups: list[MergeGroup] = at_most(
        30,
        "One group per issue raised more than once; leave out every finding "
        "that stands alone; empty if every finding is a different issue",
    )

    # Worst case ~2,300 tokens: 30 groups of 10 ids with a one-sentence reason.
    OUTPUT_TOKENS: ClassVar[int] = 3072


class Divergence(_Strict):
    point: str = Field(description="What the members disagree on")
    sides: list[str] = at_most(4, "Each side with who holds it, e.g. 'Member A: ...'")


class TradeoffOption(_Strict):
    option: str
    pro: str
    con: str


class TradeoffDimension(_Strict):
    dimension: str = Field(description="e.g. latency, operability, cost")
    options: list[TradeoffOption] = at_most(4)


class DecisionPath(_Strict):
    condition: str = Field(description='e.g. "If latency is the top priority"')
    path: str = Field(description="What to do then, e.g. one of the options")


class OutsideOpinion(_Strict):
    """An independent opinion on the debate from a model that did not sit on it."""

    position: str = Field(
        description="APPROVE, CONCERNS or REJECT, or the option you favour for a choice"
    )
    key_argument: str = Field(description="Your strongest argument, 1-2 sentences")
    risks: list[str] = at_most(5, "Risks the panel missed", default_factory=list)
    conditions: list[str] = at_most(5, "What would change your mind", default_factory=list)
    agrees_with_panel: bool = Field(description="Whether you agree with the panel's lean")

    # Worst case ~450 tokens: the key argument and 10 one-sentence items.
    OUTPUT_TOKENS: ClassVar[int] = 768


class Synthesis(_Strict):
    """The chair's report, written from the anonymized record."""

    verdict_sentence: str = Field(description="The outcome in one sentence")
    consensus: list[str] = at_most(8, "Points most members share")
    divergence: list[Divergence] = at_most(
        6, "Every disagreement with each side, not only the majority's"
    )
    recommendation: str
    tradeoff_map: list[TradeoffDimension] = at_most(
        5, "Only when the topic is a choice between options", default_factory=list
    )
    action_items: list[str] = at_most(8, "Concrete next steps, most important first")
    conditions: list[str] = at_most(
        5,
        "APPROVED_WITH_CONDITIONS only: the members' conditions merged, at most 5, "
        "each a must-do before merging; empty for any other resolution",
        default_factory=list,
    )
    decision_guide: list[DecisionPath] = at_most(
        5,
        "Debate only: which path to take under which condition; empty otherwise",
        default_factory=list,
    )

    # Worst case ~4,200 tokens: 6 divergences of 4 sides, a tradeoff map of 5 dimensions by
    # 4 options, 26 one-sentence items, the recommendation.
    OUTPUT_TOKENS: ClassVar[int] = 5120
