"""The debate's record (`DebateRecord`: what the engine gathered) and the report built
from it, apart from the engine's phases.

- `build_report`: the `DebateReport` of an advisory, from what the engine gathered: the
  committee, each panelist's position per cycle (a shift whose reply cites no finding,
  file or line the panelist had not cited before is flagged; the vote, APPROVE or REJECT,
  is compared only with a position on its own scale: CONCERNS, or an option of a choice,
  followed by either vote is no shift), the contention points and
  their outcome, the tradeoff map with each dimension's weight, the decision guide and
  the decision confidence as its signals.

Everything here is deterministic code over the record: no model call.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from bot.council.protocols import DebateModeRule
from bot.council.protocols.debate.panel import WORD, choice_options, panel_problems
from bot.council.protocols.debate.report import (
    CommitteeMember,
    ContentionPoint,
    CyclePosition,
    DebateReport,
    DecisionConfidence,
    ExitReason,
    OutsideRecord,
    PositionHistory,
    TradeoffRow,
)
from bot.council.schemas import (
    Assessment,
    DiscussionReply,
    JudgeDecision,
    OutsideOpinion,
    PanelDesign,
    Synthesis,
    Vote,
)
from bot.council.seats import Seat

__all__ = [
    "DebateRecord",
    "build_report",
    "cites_evidence",
    "evidence_of",
    "outside_section",
    "positions_section",
]

MAX_CONTENTION_POINTS = 8
_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|sql|yml|yaml|"
    "json|toml|ini|cfg|md|sh|tf|proto|html|css|lock|txt|xml"
)
# A file (a path with a slash, or a name with a source extension), a line, or a finding.
_EVIDENCE = re.compile(
    rf"(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:{_EXTENSIONS})\b|\bL\d+\b|\blines? \d+|#\d+\b",
    re.IGNORECASE,
)


def cites_evidence(text: str, known: Collection[str] = ()) -> bool:
    """Whether `text` cites a file, a line or a numbered finding that is not in `known`
    (what the panelist itself had cited before: see `evidence_of`)."""
    return bool(evidence_of(text) - set(known))


def evidence_of(text: str) -> set[str]:
    """The files, lines and numbered findings `text` cites, lowercased."""
    return {m.group(0).lower() for m in _EVIDENCE.finditer(text)}


def _assessment_text(a: Assessment) -> str:
    parts = [a.summary, *a.red_flags, *a.concerns, *a.recommendations]
    parts += [s.analysis for s in a.lens_scores]
    for f in a.findings:
        parts += [f.path, f"L{f.start_line}" if f.start_line else "", f.title, f.detail]
    return "\n".join(parts)


@dataclass
class DebateRecord:
    """What the engine gathered during a debate, for `build_report`."""

    rule: DebateModeRule
    seats: Sequence[Seat]  # the panelists who assessed validly, in member order
    assessments: Mapping[str, Assessment]  # seat id -> assessment
    replies: Mapping[int, Mapping[str, DiscussionReply]]  # cycle -> seat id -> reply
    judged: Sequence[JudgeDecision]
    cycles: int
    exit: ExitReason
    panel: PanelDesign | None = None
    synthesis: Synthesis | None = None
    outside: OutsideRecord | None = None
    votes: Mapping[str, Vote] = field(default_factory=dict)  # seat id -> its vote


def _norm(text: str) -> str:
    return " ".join(WORD.findall(text.lower()))


def _reply_text(reply: DiscussionReply) -> str:
    parts: list[str] = []
    for m in reply.messages:
        parts += [m.point, m.reasoning, m.changed_by or "", m.new_position or ""]
    return "\n".join(parts)


def _position_of(reply: DiscussionReply) -> str | None:
    if reply.position and reply.position.strip():
        return reply.position.strip()
    shifts = [m.new_position for m in reply.messages if m.type == "SHIFT" and m.new_position]
    return shifts[-1].strip() if shifts else None


# An assessment's scale, by the first word of a stated position ("Approve, with conditions"
# is APPROVE); a position that starts otherwise is an option of a choice (or free text).
_SCALE = (("approv", "APPROVE"), ("concern", "CONCERNS"), ("reject", "REJECT"))


def _verdict(position: str) -> str | None:
    """The verdict `position` states on the assessment's scale; None: an option or other."""
    words = WORD.findall(position.lower())
    first = words[0] if words else ""
    return next((verdict for stem, verdict in _SCALE if first.startswith(stem)), None)


def _turned(positions: Sequence[CyclePosition], stated: str) -> bool:
    """Whether `stated` differs from the last earlier position on its own scale: a verdict
    from the last verdict, an option from the last option. A verdict after an option (or
    the first option after verdicts) compares unlike things: no shift."""
    verdict = _verdict(stated)
    for earlier in reversed(positions):
        was = _verdict(earlier.position)
        if (was is None) == (verdict is None):
            return (
                was != verdict if verdict is not None else _norm(earlier.position) != _norm(stated)
            )
    return False


def _vote_turned(positions: Sequence[CyclePosition], vote: str) -> bool:
    """Whether the vote (APPROVE or REJECT) turns from the last stated verdict: only an
    APPROVE or a REJECT compares with it; after CONCERNS, which the vote cannot say,
    either vote keeps to the position (and an option of a choice is not a verdict)."""
    last = next((v for p in reversed(positions) if (v := _verdict(p.position))), None)
    return last in ("APPROVE", "REJECT") and last != _verdict(vote)


def _histories(record: DebateRecord) -> list[PositionHistory]:
    histories: list[PositionHistory] = []
    for seat in record.seats:
        a = record.assessments.get(seat.seat_id)
        if a is None:
            continue
        positions = [CyclePosition(cycle=0, position=a.verdict, confidence=a.confidence)]
        # What this panelist had cited so far: a shift citing only that brings no new evidence.
        cited = evidence_of(_assessment_text(a))
        for cycle in range(1, record.cycles + 1):
            previous = positions[-1]
            reply = record.replies.get(cycle, {}).get(seat.seat_id)
            stated = _position_of(reply) if reply is not None else None
            if reply is None or stated is None:
                if reply is not None:
                    cited |= evidence_of(_reply_text(reply))
                confidence = reply.confidence if reply is not None else None
                positions.append(
                    CyclePosition(
                        cycle=cycle,
                        position=previous.position,
                        confidence=confidence if confidence is not None else previous.confidence,
                    )
                )
                continue
            shifted = _turned(positions, stated)
            positions.append(
                CyclePosition(
                    cycle=cycle,
                    position=stated,
                    confidence=reply.confidence
                    if reply.confidence is not None
                    else previous.confidence,
                    shifted=shifted,
                    unsupported=shifted and not cites_evidence(_reply_text(reply), cited),
                )
            )
            cited |= evidence_of(_reply_text(reply))
        vote = record.votes.get(seat.seat_id)
        if vote is not None:  # the final position is the one the verdict counts
            shifted = _vote_turned(positions, vote.vote)
            positions.append(
                CyclePosition(
                    cycle=record.cycles,
                    position=vote.vote,
                    confidence=round(vote.confidence * 100),
                    vote=True,
                    shifted=shifted,
                    unsupported=shifted
                    and not cites_evidence("\n".join([vote.rationale, *vote.conditions]), cited),
                )
            )
        histories.append(PositionHistory(seat_id=seat.seat_id, positions=positions))
    return histories


def _shifted_since(history: PositionHistory | None, cycle: int) -> bool:
    return history is not None and any(p.shifted and p.cycle >= cycle for p in history.positions)


def _contention(record: DebateRecord, histories: list[PositionHistory]) -> list[ContentionPoint]:
    by_label = {s.label: s.seat_id for s in record.seats}
    by_seat = {h.seat_id: h for h in histories}
    final = {h.seat_id: _norm(h.positions[-1].position) for h in histories if h.positions}
    points: list[ContentionPoint] = []
    seen: set[str] = set()
    for cycle in sorted(record.replies):
        for seat in record.seats:
            reply = record.replies[cycle].get(seat.seat_id)
            for m in reply.messages if reply is not None else ():
                key = _norm(m.point)
                if m.type != "CHALLENGE" or not key or key in seen:
                    continue
                seen.add(key)
                target = by_label.get(m.to_member or "")
                pair = [seat.seat_id, target] if target else list(final)
                if _shifted_since(by_seat.get(target or ""), cycle) or _shifted_since(
                    by_seat.get(seat.seat_id), cycle
                ):
                    outcome = "shifted"
                elif len({final.get(x) for x in pair}) == 1:
                    outcome = "resolved"
                else:
                    outcome = "unresolved"
                counter = ""
                if target and by_seat.get(target) and by_seat[target].positions:
                    counter = by_seat[target].positions[-1].position
                points.append(
                    ContentionPoint(
                        point=m.point,
                        challenger=seat.seat_id,
                        challenged=target,
                        argument=m.reasoning,
                        counter=counter,
                        outcome=outcome,
                        cycle=cycle,
                    )
                )
    return points[:MAX_CONTENTION_POINTS]


def _same_dimension(a: str, b: str) -> bool:
    x, y = _norm(a), _norm(b)
    return bool(x and y) and (x == y or x in y or y in x)


def _tradeoffs(record: DebateRecord) -> list[TradeoffRow]:
    raised: dict[str, set[str]] = {}  # a dimension as first said -> seat ids raising it
    for cycle in sorted(record.replies):
        for seat_id, reply in record.replies[cycle].items():
            for dim in reply.dimensions:
                key = next((k for k in raised if _same_dimension(k, dim)), dim.strip())
                if key:
                    raised.setdefault(key, set()).add(seat_id)
    rows: list[TradeoffRow] = []
    mapped = record.synthesis.tradeoff_map if record.synthesis else []
    for mapped_dim in mapped:
        weight: set[str] = set()
        for key, seats in raised.items():
            if _same_dimension(key, mapped_dim.dimension):
                weight |= seats
        rows.append(
            TradeoffRow(
                dimension=mapped_dim.dimension,
                options=list(mapped_dim.options),
                weight=len(weight),
            )
        )
    for key, seats in raised.items():
        if not any(_same_dimension(key, r.dimension) for r in rows):
            rows.append(TradeoffRow(dimension=key, options=[], weight=len(seats)))
    rows.sort(key=lambda r: -r.weight)  # stable: the chair's order among equals
    return rows


def _confidence(record: DebateRecord, histories: list[PositionHistory]) -> DecisionConfidence:
    finals = [h.positions[-1] for h in histories if h.positions]
    tally = Counter(_norm(p.position) for p in finals)
    lean_key = max(tally, key=lambda k: tally[k]) if tally else None  # first among ties
    lean = next((p.position for p in finals if _norm(p.position) == lean_key), None)
    confidences = [p.confidence for p in finals if p.confidence is not None]
    return DecisionConfidence(
        lean=lean,
        consensus=tally[lean_key] if lean_key is not None else 0,
        panelists=len(finals),
        spread_min=min(confidences) if confidences else None,
        spread_max=max(confidences) if confidences else None,
        cycles=record.cycles,
        max_cycles=record.rule.max_cycles,
        shifts=sum(h.shifts for h in histories),
        unsupported_shifts=sum(1 for h in histories for p in h.positions if p.unsupported),
        judge_verdict=record.judged[-1].decision if record.judged else None,
    )


def _committee(seats: Sequence[Seat]) -> list[CommitteeMember]:
    return [
        CommitteeMember(
            seat_id=s.seat_id,
            label=s.label,
            name=s.persona_name,
            lens=s.lenses[0] if s.lenses else "",
            stance=s.division,
            model=s.model,
        )
        for s in seats
    ]


def build_report(record: DebateRecord, committee: Sequence[Seat] = ()) -> DebateReport:
    """The debate's report. `committee`: every panelist seated (also those whose
    assessment was lost); default: `record.seats`."""
    histories = _histories(record)
    panel = record.panel
    options = choice_options(panel) if panel else []
    is_choice = bool(options)
    return DebateReport(
        mode=record.rule.name,
        max_cycles=record.rule.max_cycles,
        cycles=record.cycles,
        exit=record.exit,
        committee=_committee(committee or record.seats),
        panel_problems=panel_problems(panel) if panel else [],
        is_choice=is_choice,
        options=options,
        positions=histories,
        contention=_contention(record, histories),
        tradeoffs=_tradeoffs(record) if is_choice else [],
        decision_guide=list(record.synthesis.decision_guide) if record.synthesis else [],
        confidence=_confidence(record, histories),
        outside=record.outside,
    )


def outside_section(opinion: OutsideOpinion) -> str:
    """The outside opinion in the record the members vote from (no model named)."""
    lines = [
        "## Outside opinion (a model that did not sit on the panel)",
        f"Position: {opinion.position}; agrees with the panel's lean: "
        f"{'yes' if opinion.agrees_with_panel else 'no'}",
        f"Key argument: {opinion.key_argument}",
    ]
    if opinion.risks:
        lines.append("Risks: " + "; ".join(opinion.risks))
    if opinion.conditions:
        lines.append("Would change its mind: " + "; ".join(opinion.conditions))
    return "\n".join(lines)


def positions_section(
    cycle: int, order: Sequence[Seat], replies: Mapping[str, DiscussionReply]
) -> str:
    """Where each member who replied stands after `cycle`, for the judge and the vote."""
    lines = [f"## Positions after cycle {cycle}"]
    for seat in order:
        reply = replies.get(seat.seat_id)
        stated = _position_of(reply) if reply is not None else None
        if reply is None or stated is None:
            continue
        confidence = f" (confidence {reply.confidence}/100)" if reply.confidence is not None else ""
        lines.append(f"- {seat.label}: {stated}{confidence}")
    return "\n".join(lines) if len(lines) > 1 else ""
