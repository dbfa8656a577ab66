"""The resolution: deterministic, from the votes or from the assessment verdicts, after the
chair said which findings are one issue."""

from __future__ import annotations

from collections.abc import Sequence

from bot.council import prompts
from bot.council.advisory import Resolution
from bot.council.calls import CostLimitReached
from bot.council.findings import merge_candidates, merge_findings, normalize_path
from bot.council.ledger import EventKind
from bot.council.merge_groups import resolve_groups
from bot.council.protocols.strategies import critique
from bot.council.resolution import resolve_assessments, resolve_votes
from bot.council.run import Run, Stop, structured
from bot.council.schemas import Finding, MergeDecision
from bot.council.strengths import weigh_resolution

__all__ = ["resolve"]


async def resolve(run: Run) -> Stop | None:
    """Deterministic: from the votes, or from the assessment verdicts (after the chair
    said which findings are one issue)."""
    valid = [run.records[s.seat_id] for s in run.valid()]
    per_seat = [(r.seat.seat_id, r.assessment.findings) for r in valid if r.assessment is not None]
    capped = await _merge(run, per_seat)
    # Critical findings no approval answered keep the result from plain APPROVED.
    findings = merge_findings(per_seat, run.merge_groups)
    if run.protocol.resolution == "votes":
        run.resolution = resolve_votes([r.vote for r in valid], findings)
    else:
        run.resolution = resolve_assessments([r.assessment for r in valid], findings)
    run.weighting = weigh_resolution(
        run.resolution,
        [(r.seat.model, r.assessment, r.vote) for r in valid],
        by_votes=run.protocol.resolution == "votes",
        strengths=run.request.model_strengths,
        signals=run.request.signals,
        findings=findings,
    )
    run.resolution = critique.resolve(run, run.resolution)  # strategies: the matrix
    run.writer.append(EventKind.RESOLVED, run.resolution.model_dump(mode="json"), step="resolved")
    if capped is not None:  # no later call would start: stop with the findings merged
        raise capped
    if run.resolution.resolution == Resolution.NO_QUORUM:
        return Resolution.NO_QUORUM, "fewer than 2 members voted"
    return None


async def _merge(
    run: Run, per_seat: Sequence[tuple[str, Sequence[Finding]]]
) -> CostLimitReached | None:
    """One chair call that groups the findings that are one issue, made only when two
    findings share a file and overlapping lines or read alike elsewhere; the groups are
    checked (`resolve_groups`), a refusal said in the notes. No answer (failed, invalid
    after the re-ask, or a cap refused the call) leaves `run.merge_groups` None: the
    findings then merge by their wording. A cap's refusal is returned, to stop the
    council once the resolution is recorded."""
    candidates = merge_candidates(per_seat)
    if not candidates:
        return None
    chair = run.convened.chair
    labels = {s.seat_id: s.label for s in run.order}
    task = prompts.merge_task(
        [
            (
                c.id,
                labels.get(c.seat, c.seat),
                normalize_path(c.finding.path),
                _lines(c.finding),
                c.finding.severity,
                c.finding.title,
                c.finding.detail,
            )
            for c in candidates
        ]
    )
    run.progress("merge", None, "started")
    try:
        decision = await structured(
            run,
            chair,
            prompts.MERGE_TOOL,
            "",
            prompts.merge_brief(chair),
            task,
            f"merge/{chair.seat_id}/0",
        )
    except CostLimitReached as stop:
        stop.where = "before the chair merged the findings"
        return stop
    if isinstance(decision, MergeDecision):
        chair_groups = resolve_groups(candidates, [g.findings for g in decision.groups])
        run.merge_groups = chair_groups.groups
        run.notes += chair_groups.notes()  # each group the code did not take whole
    else:
        run.notes.append(
            "The chair did not say which findings are the same issue; they were merged "
            "by their wording."
        )
    return None


def _lines(finding: Finding) -> str:
    """A finding's lines for the chair: "L10", "L10-L14", or "file-wide"."""
    if finding.start_line is None:
        return "file-wide"
    end = finding.end_line
    return f"L{finding.start_line}" + (f"-L{end}" if end and end != finding.start_line else "")
