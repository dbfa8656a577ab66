"""The `strategies` report in the PR comment and on the terminal.

Visible: one line (task type, the winner or the strategies presented side by side, plan
confidence, flagged shifts). Collapsed (`STRATEGIES_CAP`): the classification and how it
was decided, the composition (lens, style, model, temperature or "style only"), the
strategy comparison before and after critique, the critique rounds, the winner and its
complementary elements, the dropped alternatives with their reasons, the plan confidence
and the action items attributed to their strategies; then the critique's points, capped
(`POINTS_CAP`). On the terminal, the same as plain lines. Every model-written string goes
through the comment's blocks (`bot.render.blocks`), which sanitize it.

The renderers find these through the protocol's `Sections` (`SECTIONS`, registered in
`bot.render.protocol_sections`).
"""

from __future__ import annotations

from collections.abc import Sequence

import bot.render.blocks as blocks
from bot.council.advisory import Advisory
from bot.council.protocols.strategies import STRATEGIES
from bot.council.protocols.strategies.report import RUBRIC, RubricRow, StrategiesReport
from bot.render.sections import report_sections

__all__ = [
    "POINTS_CAP",
    "SECTIONS",
    "STRATEGIES_CAP",
    "strategies_details",
    "strategies_line",
    "strategies_text",
]

STRATEGIES_CAP = 7_000
POINTS_CAP = 4_000
_DECIDED = {"signals": "from the change's signals", "model": "by one classification call"}
_MATRIX = {
    "clear-winner": "clear winner",
    "merge": "close race: merged",
    "all-low": "all low: escalated",
    "contradictory": "contradictory: both presented, escalated",
    "incomplete": "incomplete",
}


def _task(report: StrategiesReport) -> str:
    return report.classification.task_type.replace("-", " ")


def _name(advisory: Advisory, report: StrategiesReport, seat_id: str) -> str:
    return f"{report.lens_of(seat_id)} ({advisory.label_for(seat_id)})"


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}"


def _signed(value: float) -> str:
    return f"{value:+.0f}"


def strategies_line(advisory: Advisory, report: StrategiesReport, limit: int = 400) -> str:
    """The one visible line."""
    parts = [f"**Strategies** · {_task(report)}"]
    if report.presented:
        shown = " vs ".join(
            f"**{blocks.cell(report.lens_of(s), 60)}** {_score(_after(report, s))}"
            for s in report.presented
        )
        parts.append(f"both presented: {shown}")
    elif report.winner:
        parts.append(
            f"winner **{blocks.cell(report.lens_of(report.winner), 60)}** "
            f"{_score(_after(report, report.winner))}/100 ({_MATRIX[report.matrix]})"
        )
    if report.confidence is not None:
        c = report.confidence
        parts.append(f"plan confidence {c.overall}% ({c.quality}, {c.risk} risk)")
    flagged = len(report.flagged())
    if flagged:
        parts.append(f"⚠️ {flagged} position(s) flipped with no new evidence")
    return blocks.clip(" · ".join(parts), limit)


def _after(report: StrategiesReport, seat_id: str) -> float | None:
    row = report.row(seat_id)
    return row.after if row else None


def _classification(report: StrategiesReport) -> str:
    c = report.classification
    if c.decided_by == "signals":
        how = _DECIDED["signals"]
    elif c.decided_by == "model":
        listed = ", ".join(k.replace("-", " ") for k in c.candidates)
        model = f" to `{blocks.cell(c.model, 80)}`" if c.model else ""
        how = f"by one classification call{model} (the signals were ambiguous: {listed})"
    else:
        how = "as a best guess (the signals were ambiguous and the classification call failed)"
    line = f"**Classification:** {_task(report)}, {how}."
    if c.evidence:
        line += f" Signals: {blocks.cell('; '.join(c.evidence), 300)}."
    if c.reason:
        line += f" Why: {blocks.cell(c.reason, 300)}"
    return line


def _composition(advisory: Advisory, report: StrategiesReport) -> str:
    rows = [
        [
            blocks.cell(advisory.label_for(c.seat_id), 40),
            blocks.cell(c.lens, 60),
            c.style,
            f"`{blocks.cell(c.model, 80)}`",
            "style only" if c.temperature is None else f"{c.temperature:g}",
        ]
        for c in sorted(report.composition, key=lambda c: advisory.label_for(c.seat_id))
    ]
    text = "**Composition**\n\n" + blocks.table(
        ["Seat", "Strategy", "Style", "Model", "Temperature"], rows
    )
    if report.temperature_note:
        note = report.temperature_note
        text += f"\n\n_{blocks.cell(note[:1].upper() + note[1:], 300)}._"
    return text


def _comparison(advisory: Advisory, report: StrategiesReport) -> str:
    rows: Sequence[RubricRow] = report.rows
    header = [
        "Dimension",
        "Weight",
        *(blocks.cell(_name(advisory, report, r.seat_id), 60) for r in rows),
    ]
    body = [
        [
            name,
            str(weight),
            *(_score(r.dimensions[i] if i < len(r.dimensions) else None) for r in rows),
        ]
        for i, (name, weight) in enumerate(RUBRIC)
    ]
    body.append(["**Before critique**", "100", *(_score(r.before) for r in rows)])
    body.append(["Adjustment", "±15/round", *(_signed(r.adjustment) for r in rows)])
    body.append(["**After critique**", "100", *(f"**{_score(r.after)}**" for r in rows)])
    return "**Strategy comparison** (referees' mean scores)\n\n" + blocks.table(header, body)


def _rounds(advisory: Advisory, report: StrategiesReport) -> str:
    lines = []
    for r in report.rounds:
        state = "converged" if r.converged else "not converged"
        lines.append(
            f"- Round {r.round} of at most {report.max_rounds}: {state} ({blocks.cell(r.why, 200)})"
        )
    if not report.converged and report.rounds:
        lines.append(
            f"- The critique ended without converging after {len(report.rounds)} round(s)."
        )
    lines.append(
        f"- Reconciliation: {'held' if report.reconciled else 'not held'}"
        + (f" ({blocks.cell(report.reconcile_reason, 200)})" if report.reconcile_reason else "")
    )
    for p in report.positions:
        if not p.flipped:
            continue
        before = next(
            (
                q.verdict
                for q in report.positions
                if q.seat_id == p.seat_id and q.round == p.round - 1
            ),
            "?",
        )
        who = _name(advisory, report, p.seat_id)
        if p.flagged:
            lines.append(
                f"- ⚠️ **Sycophancy:** {blocks.cell(who, 80)} flipped {before} → {p.verdict} in "
                f"round {p.round} with no new evidence (the flip is not counted)."
            )
        else:
            cited = blocks.cell(", ".join(p.evidence), 200)
            lines.append(
                f"- {blocks.cell(who, 80)} moved {before} → {p.verdict} in round {p.round} on "
                f"new evidence ({cited})."
            )
    lines += [f"- ⚠️ {blocks.cell(n, 300)}" for n in report.notes]
    return "**Critique rounds**\n\n" + "\n".join(lines)


def _winner(advisory: Advisory, report: StrategiesReport) -> str:
    why = blocks.cell(report.matrix_reason, 300)
    if report.presented:
        both = " and ".join(
            f"**{blocks.cell(_name(advisory, report, s), 80)}** ({_score(_after(report, s))}/100)"
            for s in report.presented
        )
        text = f"**Both presented:** {both}: {why}."
        if report.unresolved:
            text += f" Trade-off: {blocks.cell(report.unresolved, 500)}"
        return text
    if not report.winner:
        return f"**No winner:** {why}."
    text = (
        f"**Winner:** {blocks.cell(_name(advisory, report, report.winner), 80)}, "
        f"{_score(_after(report, report.winner))}/100: {_MATRIX[report.matrix]} ({why})."
    )
    if report.merged_plan:
        text += f"\n\n{blocks.cell(report.merged_plan, 700)}"
    if report.complementary:
        text += "\n\n**Complementary elements:**\n" + "\n".join(
            f"- {blocks.cell(i.text, 300)} (from {blocks.cell(report.lens_of(i.seat_id), 60)})"
            for i in report.complementary
        )
    elif report.matrix == "clear-winner":
        text += " Nothing was merged from the others."
    return text


def _dropped(advisory: Advisory, report: StrategiesReport) -> str:
    if not report.dropped:
        return ""
    return "**Dropped alternatives**\n\n" + "\n".join(
        f"- {blocks.cell(_name(advisory, report, d.seat_id), 80)} "
        f"({_score(_after(report, d.seat_id))}/100): {blocks.cell(d.text, 300)}"
        for d in report.dropped
    )


def _confidence(report: StrategiesReport) -> str:
    c = report.confidence
    if c is None:
        return ""
    return (
        f"**Plan confidence:** {c.overall}% · agreement {round(c.agreement * 100)}% · "
        f"consensus {c.quality} ({blocks.cell(c.quality_reason, 200)}) · risk {c.risk} "
        f"({blocks.cell(c.risk_reason, 200)})"
    )


def _actions(report: StrategiesReport) -> str:
    if not report.action_items:
        return ""
    return "**Action items by strategy**\n\n" + "\n".join(
        f"{n}. {blocks.cell(i.text, 300)} (source: {blocks.cell(report.lens_of(i.seat_id), 60)})"
        for n, i in enumerate(report.action_items, start=1)
    )


def _points(advisory: Advisory, report: StrategiesReport) -> str:
    if not report.points:
        return ""
    items = []
    for p in report.points:
        tag = f"[{p.severity}] " if p.severity else ""
        where = f" `{blocks.cell(p.location, 120)}`" if p.location else ""
        new = " (new)" if p.new else ""
        items.append(
            f"- R{p.round} {p.role} {blocks.cell(report.lens_of(p.critic), 40)} → "
            f"{blocks.cell(report.lens_of(p.target), 40)}: {tag}"
            f"{blocks.cell(p.text, 240)}{where}{new}"
        )
    body = blocks.capped(items, POINTS_CAP, "point")
    return blocks.details(f"Cross-critique points ({len(report.points)})", body)


def strategies_details(advisory: Advisory, report: StrategiesReport) -> str:
    """The collapsed report."""
    parts = [
        _classification(report),
        _composition(advisory, report),
        _comparison(advisory, report) if report.rows else "",
        _rounds(advisory, report) if report.rounds else "",
        _winner(advisory, report) if report.rows else "",
        _dropped(advisory, report),
        _confidence(report),
        _actions(report),
    ]
    body = blocks.capped([p for p in parts if p], STRATEGIES_CAP, "section", sep="\n\n")
    summary = f"Strategies: {_task(report)}, {len(report.composition)} lenses"
    if report.rows:
        summary += f", {_MATRIX[report.matrix]}"
    head = blocks.details(summary, body)
    points = _points(advisory, report)
    return head + (f"\n\n{points}" if points else "")


def strategies_text(advisory: Advisory, report: StrategiesReport) -> list[str]:
    """The report as plain lines for the terminal (no Markdown tables)."""
    lines = [f"Strategies: {_task(report)} ({report.classification.decided_by})"]
    for c in report.composition:
        temp = "style only" if c.temperature is None else f"temperature {c.temperature:g}"
        lines.append(f"  {advisory.label_for(c.seat_id)}: {c.lens} ({c.style}, {c.model}, {temp})")
    for r in report.rows:
        lines.append(
            f"  {_name(advisory, report, r.seat_id)}: before {_score(r.before)}, "
            f"adjustment {_signed(r.adjustment)}, after {_score(r.after)}"
        )
    if report.presented:
        lines.append(
            "  Both presented: " + " and ".join(report.lens_of(s) for s in report.presented)
        )
    elif report.winner:
        lines.append(f"  Winner: {report.lens_of(report.winner)} ({_MATRIX[report.matrix]})")
    lines += [
        f"  Dropped: {report.lens_of(d.seat_id)}: {blocks.plain(d.text, 300)}"
        for d in report.dropped
    ]
    lines += [
        f"  Flagged: {report.lens_of(p.seat_id)} flipped to {p.verdict} in round {p.round} "
        "with no new evidence"
        for p in report.flagged()
    ]
    if report.confidence is not None:
        pc = report.confidence
        lines.append(
            f"  Plan confidence {pc.overall}% (agreement {round(pc.agreement * 100)}%, "
            f"{pc.quality}, {pc.risk} risk)"
        )
    lines += [
        f"  Action: {blocks.plain(i.text, 300)} (source: {report.lens_of(i.seat_id)})"
        for i in report.action_items
    ]
    return lines


# The strategies report in `--json`: classification, composition, rubric rows before and
# after critique, rounds, positions, matrix, winner, dropped, confidence.
SECTIONS = report_sections(
    STRATEGIES.name,
    "the strategies report (its line above stays)",
    lambda advisory: advisory.strategies,
    line=strategies_line,
    report=strategies_details,
    terminal=strategies_text,
)
