"""The debate's sections of the PR comment (`Advisory.debate`; bot.council.protocols.debate.record).

Visible, a few lines: the executive line (mode, cycles used of the mode's maximum and how
the debate ended), the decision confidence as its signals (consensus N/M, confidence
spread, cycles, position shifts and how many of them no new evidence supports) and the
decision guide (condition -> path). Collapsed, each within `DEBATE_CAP`:
the committee with each panelist's position history, the contention points with their
outcome, the tradeoff map with each dimension's weight (the synthesis section then leaves
the chair's map out), the step-back judge's fields per cycle, and the outside opinion
(`full`). On the terminal, the same as plain lines.

The renderers find these through the protocol's `Sections` (`SECTIONS`, registered in
`bot.render.protocol_sections`).
"""

from __future__ import annotations

from collections.abc import Sequence

import bot.render.blocks as blocks
from bot.council.advisory import Advisory
from bot.council.protocols.debate import DEBATE
from bot.council.protocols.debate.report import DebateReport, PositionHistory, TradeoffRow
from bot.render.sections import report_sections

__all__ = [
    "DEBATE_CAP",
    "MAX_GUIDE_ROWS",
    "SECTIONS",
    "debate_details",
    "debate_text",
    "debate_visible",
    "executive_line",
]

DEBATE_CAP = 4_000  # each collapsed section's cap (characters of its body)
MAX_GUIDE_ROWS = 4  # decision-guide rows on the screen; the rest are collapsed
UNSUPPORTED = "⚠️ no new evidence"


_OUTCOME = {"resolved": "✅ resolved", "shifted": "↪️ shifted", "unresolved": "❗ unresolved"}


def _cycles(n: int) -> str:
    return blocks.count(n, "cycle")


def executive_line(report: DebateReport) -> str:
    """E.g. "Debate (standard): converged after 2 of 2 cycles"."""
    head = f"Debate ({report.mode})"
    used, most = report.cycles, report.max_cycles
    if report.exit == "converged":
        return f"{head}: converged after {used} of {_cycles(most)}"
    if report.exit == "single_cycle":
        return f"{head}: {_cycles(used)}, no judge"
    if report.exit == "no_judge_answer":
        return f"{head}: stopped after {used} of {_cycles(most)} (the judge gave no valid answer)"
    return f"{head}: not converged after {used} of {_cycles(most)} (the mode's limit)"


def _signals(report: DebateReport) -> str:
    c = report.confidence
    parts = []
    if c.panelists:
        lean = f" lean {blocks.inline(c.lean, 60)}" if c.lean else ""
        parts.append(f"consensus {c.consensus}/{c.panelists}{lean}")
    if c.spread_min is not None and c.spread_max is not None:
        parts.append(f"confidence spread {c.spread_min}%–{c.spread_max}%")
    parts.append(f"cycles {c.cycles} of {c.max_cycles}")
    shifts = blocks.count(c.shifts, "position shift")
    if c.unsupported_shifts:
        shifts += f" ({c.unsupported_shifts} with {UNSUPPORTED})"
    parts.append(shifts)
    parts.append(f"judge {c.judge_verdict}" if c.judge_verdict else "no judge")
    return "**Decision confidence:** " + " · ".join(parts)


def _guide_table(report: DebateReport, limit: int | None = None) -> str:
    rows = [
        [blocks.cell(p.condition, 160), blocks.cell(p.path, 160)]
        for p in report.decision_guide[:limit]
    ]
    return blocks.table(["Condition", "Path"], rows) if rows else ""


def debate_visible(advisory: Advisory, report: DebateReport) -> str:
    """The debate's lines on the screen."""
    lines = [
        f"**{executive_line(report)}** · {blocks.count(len(report.committee), 'panelist')}",
        _signals(report),
    ]
    if report.decision_guide:
        lines.append("**Decision guide**\n\n" + _guide_table(report, MAX_GUIDE_ROWS))
        more = len(report.decision_guide) - MAX_GUIDE_ROWS
        if more > 0:
            lines.append(f"_…and {more} more in the debate report below._")
    return "\n\n".join(lines)


def _history(history: PositionHistory | None) -> str:
    if history is None or not history.positions:
        return "-"
    steps = []
    for p in history.positions:
        text = blocks.inline(p.position, 40)
        when = "vote" if p.vote else f"cycle {p.cycle}"
        if p.shifted:
            text = f"**{text}** ({when}{', ' + UNSUPPORTED if p.unsupported else ''})"
        elif p.vote:
            text = f"{text} (vote)"
        steps.append(text)
    return " → ".join(steps).replace("|", "\\|")


def _committee(advisory: Advisory, report: DebateReport) -> str:
    histories = {h.seat_id: h for h in report.positions}
    rows = [
        [
            blocks.cell(m.label, 20),
            blocks.cell(m.name, 60),
            blocks.cell(m.lens, 80),
            blocks.cell(m.stance, 20),
            blocks.cell(m.model, 60),
            _history(histories.get(m.seat_id)),
        ]
        for m in report.committee
    ]
    body = blocks.table(["Member", "Panelist", "Lens", "Stance", "Model", "Position history"], rows)
    if report.panel_problems:
        body += (
            "\n\n_The panel still breaks the panel rules: "
            + blocks.inline("; ".join(report.panel_problems), 400)
            + "._"
        )
    return blocks.details(
        f"Debate: committee and position history ({len(report.committee)} panelists)",
        blocks.capped([body], DEBATE_CAP, "part"),
    )


def _contention(advisory: Advisory, report: DebateReport) -> str:
    if not report.contention:
        return ""
    rows = []
    for p in report.contention:
        side_a = f"{advisory.label_for(p.challenger)}: {p.argument}"
        target = advisory.label_for(p.challenged) if p.challenged else "everyone"
        side_b = f"{target}: {p.counter}" if p.counter else target
        rows.append(
            [
                blocks.cell(p.point, 200),
                blocks.cell(side_a, 240),
                blocks.cell(side_b, 160),
                _OUTCOME[p.outcome],
            ]
        )
    counts = {o: sum(1 for p in report.contention if p.outcome == o) for o in _OUTCOME}
    summary = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
    return blocks.details(
        f"Debate: contention points ({summary})",
        blocks.capped(
            [blocks.table(["Point", "Side A", "Side B", "Outcome"], rows)],
            DEBATE_CAP,
        ),
    )


def _options(report: DebateReport) -> list[str]:
    named = list(report.options)
    for row in report.tradeoffs:
        named += [o.option for o in row.options]
    return list(dict.fromkeys(o for o in named if o.strip()))[:4]


def _tradeoff_cell(row: TradeoffRow, option: str) -> str:
    found = next((o for o in row.options if o.option.strip().lower() == option.lower()), None)
    if found is None:
        return "-"
    return blocks.cell(f"+ {found.pro} / − {found.con}", 220)


def _tradeoff_map(report: DebateReport) -> str:
    if not report.is_choice or not report.tradeoffs:
        return ""
    options = _options(report)
    panelists = len(report.committee)
    rows = [
        [
            blocks.cell(r.dimension, 80),
            *(_tradeoff_cell(r, o) for o in options),
            f"{r.weight}/{panelists}",
        ]
        for r in report.tradeoffs
    ]
    table = blocks.table(["Dimension", *(blocks.cell(o, 60) for o in options), "Weight"], rows)
    note = "_Weight: how many panelists raised the dimension._"
    return blocks.details(
        f"Debate: tradeoff map ({len(report.tradeoffs)} dimensions)",
        blocks.capped([table, note], DEBATE_CAP, "part", "\n\n"),
    )


def _listed(title: str, items: Sequence[str]) -> str:
    kept = [i for i in items if i.strip()]
    return f"{title}: " + "; ".join(blocks.inline(i, 200) for i in kept) if kept else ""


def _judge(advisory: Advisory) -> str:
    if not advisory.judge_decisions:
        return ""
    parts = []
    for j in advisory.judge_decisions:
        d = j.decision
        head = f"**Cycle {j.cycle}: {d.decision}**"
        if d.confidence is not None:
            head += f" (confidence {d.confidence}%)"
        lines = [head]
        lines += [
            f"- {line}"
            for line in (
                _listed("Framing issues", d.framing_issues),
                _listed("Hidden assumptions", d.hidden_assumptions),
                _listed("Blind spots", d.blind_spots),
                f"Option C: {blocks.inline(d.option_c, 300)}" if d.option_c else "",
                f"Meta insight: {blocks.inline(d.meta_insight, 300)}" if d.meta_insight else "",
            )
            if line
        ]
        parts.append("\n".join(lines))
    verdicts = ", ".join(j.decision.decision for j in advisory.judge_decisions)
    return blocks.details(
        f"Debate: step-back judge ({verdicts})",
        blocks.capped(parts, DEBATE_CAP, "cycle", "\n\n"),
    )


def _outside(report: DebateReport) -> str:
    out = report.outside
    if out is None:
        return ""
    if out.opinion is None:
        return blocks.details(
            "Debate: outside opinion (none)", blocks.inline(out.note or "None was given.", 400)
        )
    o = out.opinion
    lines = [
        f"**{blocks.cell(out.model, 80)}**: {blocks.inline(o.position, 60)} "
        f"({'agrees' if o.agrees_with_panel else 'disagrees'} with the panel's lean)",
        f"- Key argument: {blocks.inline(o.key_argument, 400)}",
    ]
    for line in (_listed("Risks", o.risks), _listed("Would change its mind", o.conditions)):
        if line:
            lines.append(f"- {line}")
    if out.note:
        lines.append(f"\n_{blocks.inline(out.note, 300)}_")
    return blocks.details(
        f"Debate: outside opinion ({blocks.cell(out.model, 80)})",
        blocks.capped(["\n".join(lines)], DEBATE_CAP),
    )


def _more_guide(report: DebateReport) -> str:
    if len(report.decision_guide) <= MAX_GUIDE_ROWS:
        return ""
    return blocks.details("Debate: decision guide in full", _guide_table(report))


def debate_details(advisory: Advisory, report: DebateReport) -> list[str]:
    """The debate's collapsed sections, in reading order."""
    parts = [
        _committee(advisory, report),
        _contention(advisory, report),
        _tradeoff_map(report),
        _more_guide(report),
        _judge(advisory),
        _outside(report),
    ]
    return [p for p in parts if p]


def debate_text(advisory: Advisory, report: DebateReport) -> list[str]:
    """The debate report as plain lines for the terminal (no Markdown)."""
    c = report.confidence
    lines = [
        executive_line(report),
        f"  Decision confidence: consensus {c.consensus}/{c.panelists}"
        + (f" lean {blocks.plain(c.lean, 60)}" if c.lean else "")
        + (
            f", confidence spread {c.spread_min}%-{c.spread_max}%"
            if c.spread_min is not None and c.spread_max is not None
            else ""
        )
        + f", cycles {c.cycles} of {c.max_cycles}, {c.shifts} shift(s)"
        + (f" ({c.unsupported_shifts} with no new evidence)" if c.unsupported_shifts else ""),
        "  Committee:",
    ]
    histories = {h.seat_id: h for h in report.positions}
    for m in report.committee:
        h = histories.get(m.seat_id)
        steps = [
            blocks.plain(p.position, 40) + (" (!no new evidence)" if p.unsupported else "")
            for p in (h.positions if h else [])
        ]
        lines.append(
            f"    {m.label}: {blocks.plain(m.name, 60)} · lens {blocks.plain(m.lens, 80)} · "
            f"{blocks.plain(m.stance, 20)} · {m.model} · {' -> '.join(steps) or '-'}"
        )
    for p in report.contention:
        lines.append(f"  Contention ({p.outcome}): {blocks.plain(p.point, 200)}")
    for r in report.tradeoffs:
        lines.append(f"  Tradeoff {blocks.plain(r.dimension, 80)} (weight {r.weight})")
    for g in report.decision_guide:
        lines.append(
            f"  Decision guide: {blocks.plain(g.condition, 200)} -> {blocks.plain(g.path, 200)}"
        )
    if report.outside is not None:
        o = report.outside
        said = (
            f"{o.model}: {blocks.plain(o.opinion.position, 60)} - "
            f"{blocks.plain(o.opinion.key_argument, 200)}"
            if o.opinion
            else blocks.plain(o.note or "none", 200)
        )
        lines.append(f"  Outside opinion: {said}")
    return lines


def _own_tradeoffs(advisory: Advisory, report: DebateReport) -> bool:
    return bool(report.tradeoffs)


# A debate's report in `--json`: mode, cycles, committee, positions, contention, tradeoffs,
# decision guide and confidence signals, the outside opinion.
SECTIONS = report_sections(
    DEBATE.name,
    "the debate report (its lines above stay)",
    lambda advisory: advisory.debate,
    head=debate_visible,
    top=debate_details,
    terminal=debate_text,
    tradeoffs=_own_tradeoffs,
)
