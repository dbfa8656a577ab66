"""The deterministic part of the `strategies` deliberation (docs/deliberation.md,
"Strategies"): the rubric rows, the bounded critique adjustments, the critique points and
positions, the convergence and sycophancy checks, the conflict-resolution matrix, the plan
confidence and the action items. Pure: no model call.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from bot.council.protocols.strategies.report import (
    RUBRIC,
    CritiquePoint,
    Matrix,
    PlanConfidence,
    Position,
    RubricRow,
    StrategyItem,
    StrategyRound,
)
from bot.council.protocols.strategies.schemas import CritiqueReply
from bot.council.schemas import Assessment

__all__ = [
    "ADJUSTMENT_BOUND",
    "HIGH",
    "LOW_FLOOR",
    "RECONCILE_GAP",
    "SYCOPHANCY_SPREAD",
    "WIN_LEAD",
    "action_items",
    "agreement",
    "critique_points",
    "decide_matrix",
    "known_locations",
    "plan_confidence",
    "positions",
    "round_record",
    "rubric_rows",
    "spread",
    "sycophancy_note",
]

# A referee's adjustment counts at most this much per analysis and round (seed: +-10 over
# the whole critique; here +-15 per round, at most `MAX_CRITIQUE_ROUNDS` rounds).
ADJUSTMENT_BOUND = 15
# The top two analyses this close after critique are reconciled (seed: "within 15").
RECONCILE_GAP = 15
# A lead of this much is a clear winner; less is a close race, merged (seed: >15 / <10).
WIN_LEAD = 15
# Every analysis below this is "all low": escalate, the task may need reframing.
LOW_FLOOR = 50
# All analyses within this many points and on one verdict: possible convergence sycophancy.
SYCOPHANCY_SPREAD = 5
# Severities a HUNTER point must have to keep a round from converging when it is new.
HIGH = ("critical", "major")


def _clamp(value: float, bound: float) -> float:
    return max(-bound, min(bound, value))


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def rubric_rows(
    seat_ids: Sequence[str],
    labels: Mapping[str, str],
    rounds: Mapping[int, Mapping[str, CritiqueReply]],
) -> list[RubricRow]:
    """Each analysis on the rubric: the first round's referee scores (mean per dimension
    over the critics who scored it), then each round's mean adjustment, bounded by
    `ADJUSTMENT_BOUND`, added; the total stays within 0-100."""
    rows: list[RubricRow] = []
    for target in seat_ids:
        label = labels[target]
        first = [
            c.referee
            for critic, reply in rounds.get(1, {}).items()
            if critic != target
            for c in reply.critiques
            if c.member.strip() == label
        ]
        dims = [_mean([float(getattr(r, name)) for r in first]) for name, _ in RUBRIC]
        before = sum(d for d in dims if d is not None) if first else None
        adjustment = 0.0
        for n in sorted(rounds):
            given = [
                float(c.adjustment)
                for critic, reply in rounds[n].items()
                if critic != target
                for c in reply.critiques
                if c.member.strip() == label
            ]
            mean = _mean(given)
            if mean is not None:
                adjustment += _clamp(mean, ADJUSTMENT_BOUND)
        after = None if before is None else max(0.0, min(100.0, before + adjustment))
        rows.append(
            RubricRow(
                seat_id=target,
                dimensions=dims,
                before=before,
                adjustment=round(adjustment, 1),
                after=after,
                referees=len(first),
            )
        )
    return rows


def _location(path: str | None, line: int | None) -> str | None:
    if not path:
        return None
    return f"{path.strip()}:{line}" if line else path.strip()


def known_locations(assessments: Mapping[str, Assessment]) -> set[str]:
    """Every file:line the independent analyses cited (their findings)."""
    found: set[str] = set()
    for a in assessments.values():
        for f in a.findings:
            found.add(f"{f.path.strip()}:{f.start_line}" if f.start_line else f.path.strip())
    return found


def critique_points(
    round_no: int,
    replies: Mapping[str, CritiqueReply],
    by_label: Mapping[str, str],
    known: set[str],
) -> list[CritiquePoint]:
    """The round's HUNTER and SKEPTIC points; a high-severity HUNTER point at a location
    (or in words) nobody raised before is marked new, and `known` grows by what was said."""
    points: list[CritiquePoint] = []
    said: set[str] = set()
    for critic, reply in replies.items():
        for c in reply.critiques:
            target = by_label.get(c.member.strip())
            if target is None or target == critic:
                continue
            for h in c.hunter:
                where = _location(h.path, h.line)
                key = where or " ".join(h.point.lower().split())
                new = h.severity in HIGH and key not in known
                said.add(key)
                points.append(
                    CritiquePoint(
                        round=round_no, critic=critic, target=target, role="HUNTER",
                        text=h.point, severity=h.severity, location=where, new=new,
                    )
                )  # fmt: skip
            points += [
                CritiquePoint(round=round_no, critic=critic, target=target, role="SKEPTIC", text=s)
                for s in c.skeptic
                if s.strip()
            ]
    known |= said
    return points


def positions(
    assessments: Mapping[str, Assessment], rounds: Mapping[int, Mapping[str, CritiqueReply]]
) -> list[Position]:
    """Each seat's verdict per round (0: its analysis). A verdict that changed while the
    seat cited no file or line it had not cited before is flagged: a sycophantic shift."""
    out: list[Position] = []
    for seat_id, a in assessments.items():
        verdict = a.verdict
        cited = {f"{f.path.strip()}:{f.start_line}" if f.start_line else f.path for f in a.findings}
        out.append(Position(seat_id=seat_id, round=0, verdict=verdict))
        for n in sorted(rounds):
            reply = rounds[n].get(seat_id)
            if reply is None:
                continue
            evidence = [_location(e.path, e.line) or e.path for e in reply.new_evidence]
            fresh = [e for e in evidence if e not in cited]
            flipped = reply.verdict != verdict
            out.append(
                Position(
                    seat_id=seat_id,
                    round=n,
                    verdict=reply.verdict,
                    evidence=fresh,
                    flipped=flipped,
                    flagged=flipped and not fresh,
                )
            )
            cited |= set(evidence)
            verdict = reply.verdict
    return out


def agreement(verdicts: Sequence[str]) -> float:
    if not verdicts:
        return 0.0
    return Counter(verdicts).most_common(1)[0][1] / len(verdicts)


def round_record(
    round_no: int, verdicts: Sequence[str], points: Sequence[CritiquePoint]
) -> StrategyRound:
    """Converged: at least two thirds of the seats on one verdict (two of three; both of
    two) and no new high-severity finding in the round."""
    share = agreement(verdicts)
    needed = math.ceil(2 * len(verdicts) / 3) / len(verdicts) if verdicts else 1.0
    new_high = sum(1 for p in points if p.round == round_no and p.new)
    agreed = share >= needed - 1e-9
    converged = agreed and new_high == 0
    if converged:
        why = f"{share:.0%} agree and no new high-severity finding"
    else:
        reasons = []
        if not agreed:
            reasons.append(f"only {share:.0%} agree on a verdict")
        if new_high:
            reasons.append(f"{new_high} new high-severity finding(s)")
        why = " and ".join(reasons)
    return StrategyRound(
        round=round_no, agreement=share, new_high=new_high, converged=converged, why=why
    )


def _approves(verdict: str) -> bool:
    return verdict in ("APPROVE", "CONCERNS")


def decide_matrix(
    rows: Sequence[RubricRow], verdicts: Mapping[str, str]
) -> tuple[Matrix, str | None, list[str], str]:
    """(how it was decided, the winner's seat id, the seats presented side by side, why).
    All below `LOW_FLOOR` -> all-low; the top two within `WIN_LEAD` on opposite verdicts
    (an approval against a REJECT) -> contradictory, both presented; a lead of `WIN_LEAD`
    or more -> clear-winner; else merge (the winner plus the others' complementary
    elements). Fewer than two scored analyses -> incomplete, the best scored one leads."""
    scored = sorted(
        (r for r in rows if r.after is not None),
        key=lambda r: (-(r.after or 0.0), r.seat_id),
    )
    if not scored:
        return "incomplete", None, [], "no analysis was scored by a referee"
    top = scored[0]
    if len(scored) < 2:
        return "incomplete", top.seat_id, [], "only one analysis was scored"
    second = scored[1]
    gap = (top.after or 0.0) - (second.after or 0.0)
    if all((r.after or 0.0) < LOW_FLOOR for r in scored):
        return (
            "all-low",
            top.seat_id,
            [],
            (f"every analysis scored below {LOW_FLOOR}: the task may need reframing"),
        )
    a, b = verdicts.get(top.seat_id, ""), verdicts.get(second.seat_id, "")
    if gap < WIN_LEAD and a and b and _approves(a) != _approves(b):
        return (
            "contradictory",
            top.seat_id,
            [top.seat_id, second.seat_id],
            (f"the top two are {gap:.0f} points apart with contradictory verdicts ({a} and {b})"),
        )
    if gap >= WIN_LEAD:
        return "clear-winner", top.seat_id, [], f"it leads by {gap:.0f} points"
    return "merge", top.seat_id, [], f"it leads by only {gap:.0f} points"


def plan_confidence(
    *,
    winner_score: float | None,
    share: float,
    converged: bool,
    flagged: int,
    matrix: Matrix,
    severities: Sequence[str],
    verdicts: Sequence[str],
) -> PlanConfidence:
    """Agreement (share on the commonest final verdict), consensus quality (strong: it
    converged with no flagged shift and no open conflict; weak: a flagged shift, an open
    conflict or all-low; else moderate) and risk (from the findings' severities and the
    verdicts); overall = winner score x agreement, less 10 per weakness."""
    if flagged or matrix in ("contradictory", "all-low"):
        quality, why = (
            "weak",
            (
                f"{flagged} position(s) flipped with no new evidence"
                if flagged
                else "the strategies' conflict stays open"
                if matrix == "contradictory"
                else "every strategy scored low"
            ),
        )
    elif converged and share >= 1.0 - 1e-9:
        quality, why = "strong", "the strategies converged on one verdict"
    else:
        quality, why = (
            "moderate",
            ("converged by two thirds" if converged else "the critique did not converge"),
        )
    if "critical" in severities or "REJECT" in verdicts:
        risk, risk_why = "high", "a critical finding or a rejection stands"
    elif "major" in severities or "CONCERNS" in verdicts:
        risk, risk_why = "medium", "major findings or concerns stand"
    else:
        risk, risk_why = "low", "no major finding or concern"
    overall = (winner_score or 0.0) * share
    overall -= 10 * (quality != "strong") + 10 * (not converged)
    return PlanConfidence(
        overall=max(0, min(100, round(overall))),
        agreement=share,
        quality=quality,
        quality_reason=why,
        risk=risk,
        risk_reason=risk_why,
    )


def action_items(
    winner: str | None,
    presented: Sequence[str],
    assessments: Mapping[str, Assessment],
    complementary: Sequence[StrategyItem],
    limit: int = 6,
) -> list[StrategyItem]:
    """The winner's recommendations (each presented strategy's, when both are), then the
    complementary elements merged in, each attributed to its strategy."""
    leaders = list(presented) or ([winner] if winner else [])
    items: list[StrategyItem] = []
    seen: set[str] = set()
    for seat_id in leaders:
        a = assessments.get(seat_id)
        for text in (a.recommendations if a else [])[:3]:
            key = " ".join(text.lower().split())
            if key and key not in seen:
                seen.add(key)
                items.append(StrategyItem(seat_id=seat_id, text=text))
    for item in complementary:
        key = " ".join(item.text.lower().split())
        if key and key not in seen:
            seen.add(key)
            items.append(item)
    return items[:limit]


def spread(rows: Sequence[RubricRow]) -> float | None:
    totals = [r.after for r in rows if r.after is not None]
    return max(totals) - min(totals) if len(totals) > 1 else None


def sycophancy_note(rows: Sequence[RubricRow], verdicts: Mapping[str, str]) -> str | None:
    """All analyses within `SYCOPHANCY_SPREAD` points and on one verdict: the council may
    have failed to diversify (docs/deliberation.md, "Strategies")."""
    gap = spread(rows)
    if gap is None or gap > SYCOPHANCY_SPREAD or len(set(verdicts.values())) != 1:
        return None
    return (
        f"All strategies scored within {SYCOPHANCY_SPREAD} points on one verdict: check "
        "whether this is one good idea or a council that failed to diversify."
    )
