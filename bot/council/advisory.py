"""The advisory: what a deliberation returns and what the renderers read.

Everything here is plain data: the engine fills it in, `bot.render` turns it into a PR
comment and a check run, the store keeps it as JSON. Model-written text in it is untrusted
and is sanitized by the renderers, not here, so the record stays exactly what was said.
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.council.protocols.debate.report import DebateReport
from bot.council.protocols.strategies.report import StrategiesReport
from bot.council.schemas import (
    Assessment,
    DiscussionMessage,
    JudgeDecision,
    Severity,
    Synthesis,
    Vote,
)
from bot.council.scope import ReviewScope

__all__ = [
    "NO_VOTE_STATES",
    "OUTSIDE_DIFF",
    "SEVERITY_ORDER",
    "Advisory",
    "CarriedVerdict",
    "JudgeRecord",
    "MergedFinding",
    "Resolution",
    "RoundMessage",
    "RoundRecord",
    "SeatReport",
    "SeatState",
    "ShiftRecord",
    "TopFinding",
    "UsageSummary",
    "VoteCounts",
    "finding_key",
    "format_location",
    "no_vote_text",
]

# Most severe first; used for sorting and for "keep the highest severity".
SEVERITY_ORDER: dict[Severity, int] = {"critical": 0, "major": 1, "minor": 2, "nit": 3}


class Resolution(StrEnum):
    APPROVED = "APPROVED"
    APPROVED_WITH_CONDITIONS = "APPROVED_WITH_CONDITIONS"
    ESCALATE = "ESCALATE"
    REJECTED = "REJECTED"
    NO_QUORUM = "NO_QUORUM"
    COST_LIMIT = "COST_LIMIT"
    CANCELLED = "CANCELLED"
    # The job failed or expired before the council could resolve (reason says why).
    FAILED = "FAILED"
    # The change has no changed line to read (empty, binary only, renames only): no call.
    NOTHING_TO_REVIEW = "NOTHING_TO_REVIEW"

    @property
    def is_verdict(self) -> bool:
        """True for the four outcomes the council actually decided."""
        return self in _VERDICTS


_VERDICTS = frozenset(
    {
        Resolution.APPROVED,
        Resolution.APPROVED_WITH_CONDITIONS,
        Resolution.ESCALATE,
        Resolution.REJECTED,
    }
)


OUTSIDE_DIFF = "(outside the diff)"


def format_location(
    path: str,
    start_line: int | None,
    end_line: int | None,
    *,
    line_prefix: str = "L",
    outside_diff: bool = False,
) -> str:
    """`path:L10-L20`, `path:L10` or `path` (`line_prefix=""`: `path:10-20`); a line of
    the head outside the diff's hunks (`outside_diff`, bot/review/anchors.py) reads
    `path:L196 (outside the diff)`."""
    if start_line is None:
        return path
    if end_line is None or end_line == start_line:
        where = f"{path}:{line_prefix}{start_line}"
    else:
        where = f"{path}:{line_prefix}{start_line}-{line_prefix}{end_line}"
    return f"{where} {OUTSIDE_DIFF}" if outside_diff else where


def finding_key(f: MergedFinding) -> str:
    """The key a PR's outcome record lists a finding by (addressed or not after the
    advice): `bot.review.outcomes` writes it, `bot.store.history` reads it."""
    return f"{f.path}:{f.start_line or 0}-{f.end_line or f.start_line or 0}:{f.title}"


class SeatState(StrEnum):
    OK = "ok"
    TIMED_OUT = "timed_out"
    ERROR = "error"
    # Still incomplete or invalid after the completeness gate's re-asks.
    INVALID = "invalid"
    # Assessed validly, but no vote came: the call timed out, failed, or its answer was
    # invalid twice (`SeatReport.vote_missing` says which). Not an abstention: a vote is
    # APPROVE or REJECT, and a seat cannot choose to abstain.
    NO_VOTE = "no_vote"
    # What advisories stored before "no_vote" say of the same seat (why is not recorded).
    ABSTAINED = "abstained"
    # Never called (cost limit, cancellation).
    SKIPPED = "skipped"


# A valid seat whose vote did not come (`no_vote_text`).
NO_VOTE_STATES = frozenset({SeatState.NO_VOTE, SeatState.ABSTAINED})
_VALID_STATES = frozenset({SeatState.OK, *NO_VOTE_STATES})


def no_vote_text(reason: str | None) -> str:
    """How a vote that did not come reads everywhere: "no vote (timed out)"; "no vote"
    where why is not recorded (an advisory stored before it was)."""
    return f"no vote ({reason})" if reason else "no vote"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SeatReport(_Record):
    seat_id: str
    label: str = Field(description='Anonymized name shown to other seats, e.g. "Member A"')
    persona_id: str
    persona_name: str
    division: str = ""
    model: str = Field(description='Model reference, e.g. "anthropic:claude-sonnet-4-5"')
    state: SeatState = SeatState.OK
    error: str | None = None
    assessment: Assessment | None = None
    vote: Vote | None = None
    # Why the vote did not come ("timed out", "invalid answer twice", "server error", ...);
    # set with state NO_VOTE.
    vote_missing: str | None = None
    # The board-scoring total that seated this persona; None for seats not chosen by score.
    score: float | None = None
    lenses: list[str] = Field(default_factory=list)
    # Lenses of the brief the kept assessment gives no score (still missing after the
    # completeness gate's re-asks): rendered "not scored".
    unscored_lenses: list[str] = Field(default_factory=list)

    @property
    def is_valid(self) -> bool:
        """A seat whose assessment counts (its vote may still not have come)."""
        return self.state in _VALID_STATES and self.assessment is not None

    @property
    def no_vote(self) -> str | None:
        """ "no vote (timed out)" for a seat whose vote did not come; None otherwise."""
        return no_vote_text(self.vote_missing) if self.state in NO_VOTE_STATES else None


class MergedFinding(_Record):
    severity: Severity
    path: str
    start_line: int | None = None
    end_line: int | None = None
    title: str
    detail: str
    suggestion: str | None = None
    # The exact new code for start_line-end_line (a suggested change), when a seat gave it.
    replacement: str | None = None
    raised_by: list[str] = Field(description="Seat ids, in the order they raised it")
    consensus: int = Field(ge=1, description="How many distinct seats raised it")
    # The same issue at other places (`path:L10-L20`), when the chair merged across them.
    also_at: list[str] = Field(default_factory=list)
    # Its lines are head lines no hunk of the diff shows (an annotation, no inline
    # comment): set by bot/review/anchors.py.
    outside_diff: bool = False

    def location(self) -> str:
        return format_location(
            self.path, self.start_line, self.end_line, outside_diff=self.outside_diff
        )


class TopFinding(_Record):
    """An item listed at the top of the advisory whatever the resolution."""

    kind: Literal["finding", "red_flag"]
    # None for red flags, which carry no severity of their own.
    severity: Severity | None = None
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    title: str
    raised_by: list[str]
    outside_diff: bool = False  # as MergedFinding's

    @property
    def consensus(self) -> int:
        return len(self.raised_by)

    def location(self) -> str:
        if not self.path:
            return ""
        return format_location(
            self.path, self.start_line, self.end_line, outside_diff=self.outside_diff
        )


class UsageSummary(_Record):
    calls: int = 0
    # Uncached input only; cache writes and cache reads are counted apart.
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cached_input_tokens: int = 0
    # The part of output_tokens the models spent reasoning (priced within them).
    reasoning_tokens: int = 0
    # Answers cut off at the output limit (each was re-asked for a shorter one while the
    # step had re-asks left).
    truncated: int = 0
    # What the priced calls cost; the calls of `unpriced_models` count $0 in it.
    cost_usd: float = 0.0
    # Models called whose price nobody knows (their cost is unknown, not free).
    unpriced_models: list[str] = Field(default_factory=list)
    wall_ms: int = 0
    # Calls whose server reported no usage, and their tokens (in the counts above): the
    # token estimator's count, not the server's.
    estimated_calls: int = 0
    estimated_tokens: int = 0

    @property
    def tokens(self) -> int:
        """Every token of every call: input, cache writes and reads, output."""
        return (
            self.input_tokens
            + self.cache_write_tokens
            + self.cached_input_tokens
            + self.output_tokens
        )

    def plus(self, other: UsageSummary) -> UsageSummary:
        """Sum of two summaries; wall time is the longer one (phases overlap in parallel)."""
        return UsageSummary(
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            truncated=self.truncated + other.truncated,
            cost_usd=self.cost_usd + other.cost_usd,
            unpriced_models=list(dict.fromkeys([*self.unpriced_models, *other.unpriced_models])),
            wall_ms=max(self.wall_ms, other.wall_ms),
            estimated_calls=self.estimated_calls + other.estimated_calls,
            estimated_tokens=self.estimated_tokens + other.estimated_tokens,
        )


class RoundMessage(_Record):
    seat_id: str
    message: DiscussionMessage


class RoundRecord(_Record):
    round: int = Field(ge=1)
    messages: list[RoundMessage] = Field(default_factory=list)


class ShiftRecord(_Record):
    seat_id: str
    round: int = Field(ge=1)
    original_position: str | None = None
    new_position: str | None = None
    changed_by: str | None = None


class JudgeRecord(_Record):
    cycle: int = Field(ge=1)
    decision: JudgeDecision


class VoteCounts(_Record):
    approve: int = 0
    reject: int = 0
    # Valid seats whose vote did not come, by why ("timed out": 1; "": not recorded). No
    # seat abstains: these are counted in no majority (bot.council.resolution leaves them
    # out of N), as before, and said as what happened.
    missing: dict[str, int] = Field(default_factory=dict)

    def text(self) -> str:
        """ "2 approve, 0 reject, 1 no vote (timed out)"."""
        said = [f"{self.approve} approve", f"{self.reject} reject"]
        said += [f"{n} {no_vote_text(why or None)}" for why, n in self.missing.items()]
        return ", ".join(said)


class CarriedVerdict(_Record):
    """A head with nothing new to review (a merge of the base branch, an unchanged diff)
    carries the pull request's last verdict: the advisory is that verdict's, and this says
    where it was given. Carried again, it still names the head it was given on."""

    head_sha: str  # the head the verdict was given on
    deliberation_id: str  # the deliberation that gave it
    reason: str  # why this head had nothing new to review


class Advisory(_Record):
    deliberation_id: str
    protocol: str
    topic: str
    resolution: Resolution
    # Mean confidence of the majority side, 0-1.
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    seats: list[SeatReport] = Field(default_factory=list)
    findings: list[MergedFinding] = Field(default_factory=list)
    top_findings: list[TopFinding] = Field(default_factory=list)
    conditions: list[str] = Field(default_factory=list)
    synthesis: Synthesis | None = None
    rounds: list[RoundRecord] = Field(default_factory=list)
    shifts: list[ShiftRecord] = Field(default_factory=list)
    judge_decisions: list[JudgeRecord] = Field(default_factory=list)
    # Seat ids, best first, aggregated from the anonymized peer rankings (council protocol).
    peer_ranking: list[str] = Field(default_factory=list)
    # e.g. "single-model council", board fill notes, context that did not fit.
    notes: list[str] = Field(default_factory=list)
    partial: bool = False
    missing_perspectives: list[str] = Field(default_factory=list)
    usage: UsageSummary = Field(default_factory=UsageSummary)
    # Why there is no verdict (NO_QUORUM, COST_LIMIT, CANCELLED, FAILED).
    reason: str | None = None
    # debate: the committee, position history, contention, tradeoffs, decision signals.
    debate: DebateReport | None = None
    # strategies: classification, composition, the rubric before and after critique, the
    # winner, dropped alternatives, plan confidence (bot.council.protocols.strategies.report).
    strategies: StrategiesReport | None = None
    # What the review covered when not the whole diff: a diff built from the files API, an
    # incremental re-review of a push, a full review that could not be one (scope.py).
    scope: ReviewScope | None = None
    # Set when this head had nothing new to review and the last verdict was carried to it.
    carried_from: CarriedVerdict | None = None

    def valid_seats(self) -> list[SeatReport]:
        return [s for s in self.seats if s.is_valid]

    def lost_seats(self) -> list[SeatReport]:
        return [s for s in self.seats if not s.is_valid]

    def seat(self, seat_id: str) -> SeatReport | None:
        return next((s for s in self.seats if s.seat_id == seat_id), None)

    def label_for(self, seat_id: str) -> str:
        seat = self.seat(seat_id)
        return seat.label if seat else seat_id

    def vote_counts(self) -> VoteCounts:
        """Votes of the valid seats; a valid seat without a vote is counted by why it has
        none (its `vote_missing`; "not asked" where the vote phase never asked it)."""
        tally = Counter(s.vote.vote for s in self.valid_seats() if s.vote)
        missing = Counter(
            (s.vote_missing or "") if s.state in NO_VOTE_STATES else "not asked"
            for s in self.valid_seats()
            if s.vote is None
        )
        return VoteCounts(approve=tally["APPROVE"], reject=tally["REJECT"], missing=dict(missing))
