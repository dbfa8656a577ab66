"""The comment's collapsed sections after the findings, each within its cap
(`SECTION_CAPS`): the chair's synthesis in full (consensus, divergence, tradeoff map, more
action items, peer ranking, more notes), one section per assessment (its findings only by
number: they are in "All findings"; a point an earlier seat's section listed in the same
words is counted, not repeated), the discussion (identical points of one round said once,
with every seat that made them) and the cost."""

from __future__ import annotations

from collections.abc import Sequence

from bot.council.advisory import Advisory, RoundMessage, RoundRecord, SeatReport
from bot.council.schemas import Assessment
from bot.render.blocks import (
    SECTION_CAPS,
    bullets,
    capped,
    cell,
    count,
    details,
    inline,
    norm,
    pct,
    quote,
    table,
)
from bot.render.protocol_sections import SECTIONS
from bot.render.usage import cost_text, usage_notes
from bot.safety.html import sanitize_html_text

__all__ = [
    "MAX_ACTION_ITEMS",
    "assessment_details",
    "cost",
    "discussion",
    "discussion_lines",
    "synthesis",
]

MAX_ACTION_ITEMS = 5  # on the screen; the rest are in the synthesis section


def _divergence(advisory: Advisory) -> str:
    assert advisory.synthesis is not None
    lines: list[str] = []
    for d in advisory.synthesis.divergence:
        lines.append(f"- **{inline(d.point, 300)}**")
        lines += [f"  - {inline(side, 500)}" for side in d.sides if side.strip()]
    return "\n".join(lines)


def _tradeoff_map(advisory: Advisory) -> str:
    assert advisory.synthesis is not None
    rows: list[list[str]] = []
    for dim in advisory.synthesis.tradeoff_map:
        for i, opt in enumerate(dim.options):
            first = cell(dim.dimension, 100) if i == 0 else " "
            rows.append([first, cell(opt.option, 100), cell(opt.pro, 200), cell(opt.con, 200)])
    return table(["Dimension", "Option", "Pro", "Con"], rows)


def synthesis(advisory: Advisory) -> str:
    s = advisory.synthesis
    parts: list[str] = []
    if s is not None:
        if s.consensus:
            parts.append("**Consensus**\n\n" + bullets(s.consensus, 500))
        if s.divergence:
            parts.append("**Divergence**\n\n" + _divergence(advisory))
        # A protocol's report may show the map itself (a debate's, with weights).
        if s.tradeoff_map and not any(p.tradeoffs(advisory) for p in SECTIONS):
            parts.append("**Tradeoff map**\n\n" + _tradeoff_map(advisory))
        if len(s.action_items) > MAX_ACTION_ITEMS:
            rest = s.action_items[MAX_ACTION_ITEMS:]
            parts.append("**More action items**\n\n" + bullets(rest, 300))
    if advisory.peer_ranking:
        ranking = " > ".join(advisory.label_for(x) for x in advisory.peer_ranking)
        parts.append(f"**Peer ranking** (anonymized, best first): {ranking}")
    if len(advisory.notes) > 3:
        parts.append("**More notes**\n\n" + bullets(advisory.notes[3:], 400))
    if not parts:
        return ""
    return details(
        "The chair's synthesis in full", capped(parts, SECTION_CAPS["synthesis"], "part", "\n\n")
    )


def _lens_score(score: int | None) -> str:
    return "n/a" if score is None else f"{score}/10"


def _lens_table(a: Assessment, unscored: Sequence[str] = ()) -> str:
    """The seat's lens scores; a lens it did not score is a row "not scored"."""
    rows = [[cell(s.lens, 80), _lens_score(s.score), cell(s.analysis, 300)] for s in a.lens_scores]
    rows += [[cell(lens, 80), "not scored", ""] for lens in unscored]
    return table(["Lens", "Score", "Analysis"], rows) if rows else ""


def _assessment_body(
    advisory: Advisory,
    seat: SeatReport,
    a: Assessment,
    unscored: Sequence[str] = (),
    seen: set[str] | None = None,
) -> str:
    """`seen`: the red flags, concerns and recommendations earlier seats' details listed;
    one said again in the same words is counted, not repeated."""
    seen = set() if seen is None else seen
    summary = f"**Summary**\n\n{quote(a.summary, 1_200)}" if a.summary.strip() else ""
    parts = [summary, _lens_table(a, unscored)]
    for title, items in (
        ("Red flags", a.red_flags),
        ("Concerns", a.concerns),
        ("Recommendations", a.recommendations),
    ):
        new = [i for i in dict.fromkeys(items) if i.strip() and norm(i) not in seen]
        repeated = len([i for i in items if i.strip()]) - len(new)
        seen.update(norm(i) for i in new)
        body = bullets(new, 400)
        if repeated:
            also = f"+{repeated} said above"
            body = f"{body}\n- _({also})_" if body else f"- _({also})_"
        if items:
            parts.append(f"**{title}**\n\n{body}")
    if a.questions:
        qs = [f"{q.to_member or 'everyone'}: {q.question}" for q in a.questions]
        parts.append(f"**Questions**\n\n{bullets(qs, 300)}")
    if a.findings:
        numbers = [
            f"#{n}" for n, f in enumerate(advisory.findings, 1) if seat.seat_id in f.raised_by
        ]
        where = f"merged into All findings as {', '.join(numbers)}" if numbers else "merged"
        parts.append(f"**Findings:** {len(a.findings)} ({where}).")
    if seat.vote is not None:
        v = seat.vote
        said = norm(v.rationale) in seen
        rationale = "_(the rationale said above)_" if said else inline(v.rationale, 500)
        seen.add(norm(v.rationale))
        vote = f"**Vote:** {v.vote} ({pct(v.confidence)}). {rationale}"
        conditions = [c for c in dict.fromkeys(v.conditions) if norm(c) not in seen]
        seen.update(norm(c) for c in conditions)
        if conditions:
            vote += "\n\n" + bullets(conditions, 300)
        if len(v.conditions) > len(conditions):
            vote += f"\n- _(+{len(v.conditions) - len(conditions)} said above)_"
        parts.append(vote)
    return capped([p for p in parts if p], SECTION_CAPS["assessment"], "part", "\n\n")


def assessment_details(advisory: Advisory, seat: SeatReport, seen: set[str]) -> str:
    assert seat.assessment is not None
    a = seat.assessment
    summary = sanitize_html_text(
        f"{seat.label} · {seat.persona_name} · {seat.model} · {a.verdict} {a.score}/10 · "
        f"confidence {a.confidence}%"
    )
    return details(summary, _assessment_body(advisory, seat, a, seat.unscored_lenses, seen))


def _round_lines(advisory: Advisory, rnd: RoundRecord) -> list[str]:
    """One line per point: the same point made by several seats is said once, with every
    seat that made it and everyone it was addressed to."""
    order: list[tuple[str, str]] = []
    who: dict[tuple[str, str], list[str]] = {}
    to: dict[tuple[str, str], list[str]] = {}
    said: dict[tuple[str, str], RoundMessage] = {}
    for rm in rnd.messages:
        key = (str(rm.message.type), norm(rm.message.point))
        if key not in said:
            order.append(key)
            said[key], who[key], to[key] = rm, [], []
        who[key].append(advisory.label_for(rm.seat_id))
        if rm.message.to_member:
            to[key].append(rm.message.to_member)
    lines: list[str] = []
    for point in order:
        m = said[point].message
        seats = ", ".join(dict.fromkeys(who[point]))
        targets = ", ".join(dict.fromkeys(to[point]))
        arrow = f" → {inline(targets, 200)}" if targets else ""
        line = f"- **{seats}{arrow}** · {m.type}: {inline(m.point, 400)}"
        if m.reasoning.strip():
            line += f" — {inline(m.reasoning, 500)}"
        lines.append(line)
    return lines


def discussion_lines(advisory: Advisory) -> list[str]:
    lines: list[str] = []
    for rnd in advisory.rounds:
        # A blank line first: the heading must not join the previous round's last item.
        lines.append(f"\n**Round {rnd.round}**" if lines else f"**Round {rnd.round}**")
        lines += _round_lines(advisory, rnd)
    for j in advisory.judge_decisions:
        d = j.decision
        line = f"- **Judge, cycle {j.cycle}: {d.decision}** — {inline(d.reasoning, 500)}"
        if d.redebate_members:
            line += f" Re-debate: {inline(', '.join(d.redebate_members), 200)}."
        if d.focus:
            line += f" Focus: {inline(d.focus, 300)}"
        if d.option_c:
            line += f" Option C: {inline(d.option_c, 300)}"
        lines.append(line)
    for s in advisory.shifts:
        line = (
            f"- Shift, **{advisory.label_for(s.seat_id)}**, round {s.round}: "
            f"{inline(s.original_position or '?', 200)} → {inline(s.new_position or '?', 200)}"
        )
        if s.changed_by:
            line += f" (changed by: {inline(s.changed_by, 200)})"
        lines.append(line)
    return lines


def discussion(advisory: Advisory, lines: Sequence[str], shown: int) -> str:
    if not lines:
        return ""
    messages = sum(len(r.messages) for r in advisory.rounds)
    counts = [
        count(len(advisory.rounds), "round"),
        count(messages, "message"),
        count(len(advisory.shifts), "shift"),
    ]
    summary = f"Discussion ({', '.join(counts)})"
    body = capped(list(lines[:shown]), SECTION_CAPS["discussion"], "line")
    if shown < len(lines):
        body += f"\n\n_…{len(lines) - shown} more lines left out for length._"
    return details(summary, body)


def cost(advisory: Advisory) -> str:
    u = advisory.usage
    row = [
        str(u.calls),
        f"{u.input_tokens:,}",
        f"{u.cached_input_tokens:,}",
        f"{u.cache_write_tokens:,}",
        f"{u.output_tokens:,}",
        cell(cost_text(u)),
        f"{u.wall_ms / 1000:.1f} s",
    ]
    header = [
        "Calls",
        "Input tokens",
        "Cached input tokens",
        "Cache writes",
        "Output tokens",
        "Estimated USD",
        "Wall time",
    ]
    body = table(header, [row])
    notes = usage_notes(u)
    if notes:
        said = "; ".join(notes)
        body += f"\n\n{inline(said[:1].upper() + said[1:], 600)}."
    return details(f"Cost: {sanitize_html_text(cost_text(u, digits=2))}", body)
