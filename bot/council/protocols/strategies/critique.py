"""The `strategies` protocol's phases in the engine: cross-critique rounds, the
reconciliation, the conflict matrix's part of the verdict and the report.

- critique: every strategy seat critiques every other analysis in one call per round
  (HUNTER: what it missed; SKEPTIC: its unsupported claims; REFEREE: the 100-point rubric
  and a bounded adjustment) and restates its own verdict with any new evidence. A round
  converges when two thirds agree and no new high-severity finding came up; otherwise
  another runs, up to `MAX_CRITIQUE_ROUNDS`. A verdict that flipped citing no evidence it
  had not cited before is flagged (sycophancy) and does not count: a seat's counted
  verdict changes only with new evidence. The counted verdicts replace the assessments'
  verdicts, so the resolution rules (`bot.council.resolution`) decide as for any protocol.
- reconcile: one chair call, only when the top two scores after critique are within
  `RECONCILE_GAP` (and not all low).
- resolve: the conflict matrix may only escalate (all analyses low; the top two close with
  contradictory verdicts); everything else is the resolution rules' verdict.

Every call goes through `bot.council.run.structured` (the ledger's `SeatCaller`): a resumed
deliberation replays the answers it has and pays only for the calls it had not finished;
the report is recomputed from the answers, so it is the same after a resume.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from bot.council import prompts
from bot.council.advisory import Resolution
from bot.council.calls import CostLimitReached
from bot.council.protocols import MAX_CRITIQUE_ROUNDS
from bot.council.protocols.strategies.matrix import (
    LOW_FLOOR,
    RECONCILE_GAP,
    action_items,
    agreement,
    critique_points,
    decide_matrix,
    known_locations,
    plan_confidence,
    positions,
    round_record,
    rubric_rows,
    sycophancy_note,
)
from bot.council.protocols.strategies.prompts import (
    CRITIQUE_TOOL,
    RECONCILE_TOOL,
    critique_task,
    reconcile_brief,
    reconcile_task,
)
from bot.council.protocols.strategies.report import (
    RUBRIC,
    LensChoice,
    Position,
    RubricRow,
    StrategiesReport,
    StrategyItem,
    StrategyPlan,
)
from bot.council.protocols.strategies.schemas import CritiqueReply, Reconciliation
from bot.council.protocols.strategies.state import StrategiesState
from bot.council.resolution import ResolutionResult
from bot.council.run import Run, in_parallel, structured
from bot.council.seats import Seat

__all__ = ["StrategiesState", "counted_verdicts", "critique", "reconcile", "report", "resolve"]


def counted_verdicts(found: list[Position]) -> dict[str, str]:
    """Each seat's verdict as it counts: its analysis's, changed only by a round that cited
    new evidence (a flagged flip never counts)."""
    counted: dict[str, str] = {}
    for p in sorted(found, key=lambda p: p.round):
        moved = not p.flagged and bool(p.evidence) and p.verdict != counted.get(p.seat_id)
        if p.round == 0 or moved:
            counted[p.seat_id] = p.verdict
    return counted


def _strategy_name(seat: Seat) -> str:
    return seat.persona_name


def _section(round_no: int, order: list[Seat], replies: Mapping[str, CritiqueReply]) -> str:
    """The round as every seat reads it next: anonymized, in the stored member order."""
    lines = [f"## Cross-critique round {round_no} (anonymized)"]
    for seat in order:
        reply = replies.get(seat.seat_id)
        if reply is None:
            continue
        for c in reply.critiques:
            total = sum(getattr(c.referee, name) for name, _ in RUBRIC)
            lines.append(f"### {seat.label} on {c.member}")
            lines += [
                f"HUNTER [{h.severity}] {h.path or ''}{f':{h.line}' if h.line else ''} {h.point}"
                for h in c.hunter
            ]
            lines += [f"SKEPTIC {s}" for s in c.skeptic]
            lines.append(f"REFEREE {total}/100, adjustment {c.adjustment:+d}: {c.reason}")
        evidence = ", ".join(f"{e.path}:{e.line or ''} {e.point}" for e in reply.new_evidence)
        lines.append(
            f"### {seat.label}'s position: {reply.verdict}. {reply.position}"
            + (f" New evidence: {evidence}" if evidence else "")
        )
    return "\n".join(lines)


def _state(run: Run) -> StrategiesState | None:
    """The run's strategies state, made the first time it is asked for; None for a run
    convened without a strategy plan (another protocol's)."""
    plan = run.convened.strategies
    if plan is None:
        return None
    return run.own_state(StrategiesState, lambda: StrategiesState(plan=plan))


async def critique(run: Run) -> None:
    """Cross-critique rounds until one converges (at most `MAX_CRITIQUE_ROUNDS`); then the
    counted verdicts become the seats' verdicts."""
    state = _state(run)
    valid = run.valid()
    if state is None or len(valid) < 2:
        return
    state.analyses = {
        s.seat_id: a for s in valid if (a := run.records[s.seat_id].assessment) is not None
    }
    state.known = known_locations(state.analyses)
    for round_no in range(1, MAX_CRITIQUE_ROUNDS + 1):
        run.progress("critique", None, f"round {round_no}")
        replies = await _critique_round(run, state, valid, round_no)
        counted = counted_verdicts(positions(state.analyses, state.replies))
        record = round_record(round_no, list(counted.values()), state.points)
        if not replies:
            record = record.model_copy(
                update={"converged": False, "why": "no critique was answered"}
            )
        state.rounds.append(record)
        await run.writer.flush()  # a round is a phase step
        if record.converged or not replies:
            state.converged = record.converged
            break
    _revise_verdicts(run, state)


async def _critique_round(
    run: Run, state: StrategiesState, valid: list[Seat], round_no: int
) -> dict[str, CritiqueReply]:
    """One round: every seat critiques the others at once. What came back is recorded in
    seat order (not the order the answers arrived), even when a cap cut the round short."""
    transcript = run.transcript.text()
    replies: dict[str, CritiqueReply] = {}

    async def one(seat: Seat, warm: asyncio.Event, leader: bool) -> None:
        others = [(s.label, _strategy_name(s)) for s in valid if s.seat_id != seat.seat_id]
        reply = await structured(
            run,
            seat,
            CRITIQUE_TOOL,
            transcript,
            prompts.seat_brief(seat, valid),
            critique_task(round_no, MAX_CRITIQUE_ROUNDS, others, run.request.topic),
            f"critique/{seat.seat_id}/{round_no}",
            warm,
            leader,
        )
        if isinstance(reply, CritiqueReply):
            replies[seat.seat_id] = reply

    try:
        await in_parallel(valid, one)
    except CostLimitReached as stop:
        stop.where = (
            f"in cross-critique round {round_no}, after {len(replies)} of {len(valid)} critiques"
        )
        raise
    finally:
        in_order = {s.seat_id: replies[s.seat_id] for s in valid if s.seat_id in replies}
        state.replies[round_no] = in_order
        run.transcript.add(_section(round_no, valid, in_order))
        by_label = {s.label: s.seat_id for s in valid}
        state.points += critique_points(round_no, in_order, by_label, state.known)
    return in_order


def _revise_verdicts(run: Run, state: StrategiesState) -> None:
    """The counted verdicts become the seats' verdicts, for the resolution rules."""
    counted = counted_verdicts(positions(state.analyses, state.replies))
    for seat_id, verdict in counted.items():
        record = run.records[seat_id]
        if record.assessment is not None and record.assessment.verdict != verdict:
            record.assessment = record.assessment.model_copy(update={"verdict": verdict})


async def reconcile(run: Run) -> None:
    state = _state(run)
    if state is None or not state.analyses:
        return
    labels = {s.seat_id: s for s in run.order}
    rows = rubric_rows(list(state.analyses), {k: v.label for k, v in labels.items()}, state.replies)
    scored = sorted((r for r in rows if r.after is not None), key=lambda r: -(r.after or 0.0))
    if len(scored) < 2:
        state.reconcile_reason = "fewer than two analyses were scored: nothing to reconcile"
        return
    gap = (scored[0].after or 0.0) - (scored[1].after or 0.0)
    if all((r.after or 0.0) < LOW_FLOOR for r in scored):
        state.reconcile_reason = f"every analysis scored below {LOW_FLOOR}: not reconciled"
        return
    if gap >= RECONCILE_GAP:
        state.reconcile_reason = (
            f"the top two are {gap:.0f} points apart, {RECONCILE_GAP} or more: not needed"
        )
        return
    chair = run.convened.chair
    run.progress("reconcile", None, "started")
    others = [(labels[r.seat_id].label, labels[r.seat_id].persona_name, r.after) for r in scored]
    try:
        answer = await structured(
            run,
            chair,
            RECONCILE_TOOL,
            run.transcript.text(),
            reconcile_brief(chair.label),
            reconcile_task(labels[scored[0].seat_id].label, others),
            f"reconcile/{chair.seat_id}/0",
        )
    except CostLimitReached as stop:
        stop.where = "before the chair reconciled the strategies"
        raise
    state.reconciled = True
    state.reconcile_reason = f"the top two are {gap:.0f} points apart, under {RECONCILE_GAP}"
    if isinstance(answer, Reconciliation):
        state.reconciliation = answer
        run.transcript.add(
            "## Reconciliation (chair)\n"
            f"{answer.merged_plan}\n"
            + "\n".join(f"- from {e.member}: {e.element}" for e in answer.complementary)
        )
    else:
        run.notes.append("The chair's reconciliation failed; the strategies stand as scored.")


def resolve(run: Run, result: ResolutionResult) -> ResolutionResult:
    """The resolution rules' result, escalated where the conflict matrix says a person must
    decide (all analyses low; the top two close and contradictory)."""
    built = report(run)
    if built is None or not result.resolution.is_verdict:
        return result
    if built.matrix not in ("all-low", "contradictory"):
        return result
    state = _state(run)
    if state is not None and not state.escalated:
        state.escalated = True
        run.notes.append(f"Conflict matrix: {built.matrix_reason}; a person must decide.")
    return result.model_copy(
        update={"resolution": Resolution.ESCALATE, "conditions": [], "all_conditions": []}
    )


def report(run: Run) -> StrategiesReport | None:
    """The strategies report, recomputed from the answers (None for other protocols)."""
    state = _state(run)
    if state is None:
        return None
    base = _seated_report(run, state.plan)
    if not state.analyses:
        return base
    labels = {s.seat_id: s.label for s in run.order}
    rows = rubric_rows(list(state.analyses), labels, state.replies)
    found = positions(state.analyses, state.replies)
    counted = counted_verdicts(found)
    matrix, winner, presented, why = decide_matrix(rows, counted)
    rec = state.reconciliation
    complementary, dropped_reasons = _chair_items(rec, labels, winner)
    if matrix != "merge":
        complementary = []
    winner_row = next((r for r in rows if r.seat_id == winner), None)
    dropped = [
        StrategyItem(
            seat_id=r.seat_id,
            text=dropped_reasons.get(r.seat_id) or _drop_reason(winner_row, state, r),
        )
        for r in rows
        if r.seat_id != winner and r.seat_id not in presented
    ]
    severities = [f.severity for a in state.analyses.values() for f in a.findings]
    severities += [p.severity for p in state.points if p.new and p.severity]
    confidence = plan_confidence(
        winner_score=winner_row.after if winner_row else None,
        share=agreement(list(counted.values())),
        converged=state.converged,
        flagged=sum(1 for p in found if p.flagged),
        matrix=matrix,
        severities=severities,
        verdicts=list(counted.values()),
    )
    note = sycophancy_note(rows, counted)
    return base.model_copy(
        update={
            "rows": rows,
            "points": state.points,
            "positions": found,
            "rounds": state.rounds,
            "converged": state.converged,
            "reconciled": state.reconciled,
            "reconcile_reason": state.reconcile_reason,
            "matrix": matrix,
            "matrix_reason": why,
            "winner": winner,
            "presented": presented,
            "complementary": complementary,
            "dropped": dropped,
            "merged_plan": rec.merged_plan if rec is not None and matrix == "merge" else None,
            "unresolved": rec.unresolved if rec is not None else None,
            "confidence": confidence,
            "action_items": action_items(winner, presented, state.analyses, complementary),
            "notes": [note] if note else [],
        }
    )


def _seated_report(run: Run, plan: StrategyPlan) -> StrategiesReport:
    """The report's part that needs no analysis: the classification and who sat."""
    seated = {c.seat_id for c in plan.composition}
    others = [  # a seat with no lens of its own (the chair voting as a member, chair_votes)
        LensChoice(
            seat_id=s.seat_id,
            lens=s.persona_name,
            style="neutral",
            mandate="",
            model=s.model,
            temperature=s.temperature,
        )
        for s in run.order
        if s.seat_id not in seated
    ]
    return StrategiesReport(
        classification=plan.classification,
        composition=[*plan.composition, *others],
        temperature_note=plan.temperature_note,
        max_rounds=MAX_CRITIQUE_ROUNDS,
    )


def _chair_items(
    rec: Reconciliation | None, labels: Mapping[str, str], winner: str | None
) -> tuple[list[StrategyItem], dict[str, str]]:
    """What the chair's reconciliation (None: none was made) takes from the analyses that
    did not win, and why it dropped the others, by seat."""
    if rec is None:
        return [], {}
    by_label = {v: k for k, v in labels.items()}
    complementary = [
        StrategyItem(seat_id=by_label[e.member.strip()], text=e.element)
        for e in rec.complementary
        if e.member.strip() in by_label and by_label[e.member.strip()] != winner
    ]
    dropped = {
        by_label[d.member.strip()]: d.reason for d in rec.dropped if d.member.strip() in by_label
    }
    return complementary, dropped


def _drop_reason(winner: RubricRow | None, state: StrategiesState, row: RubricRow) -> str:
    """Why an analysis was not adopted when the chair did not say: its score against the
    winner's, and the strongest point the critique made against it."""
    against = [p for p in state.points if p.target == row.seat_id and p.role == "HUNTER"]
    against.sort(key=lambda p: ("critical", "major", "minor", "nit").index(p.severity or "nit"))
    score = row.after
    if score is None:
        head = "not scored by any referee"
    elif winner is not None and winner.after is not None:
        head = f"{winner.after - score:.0f} points below the winner"
    else:
        head = "not adopted"
    return head + (f"; the critique found: {against[0].text}" if against else "")
