"""The advisory as the sticky PR comment.

Layout: marker, verdict line, partial-advisory banner, top findings; then the synthesis
(Consensus, Divergence, Recommendation, Tradeoff map, Action items), Conditions, the merged
findings, the vote table; then `<details>` for each assessment, the discussion and the cost.

GitHub refuses comments over 65,536 characters, so the comment is shrunk to `max_chars`
in this order: per-assessment details (longest first), the discussion, the findings table
(beyond the first rows, with "and K more"), then whole synthesis sections. The verdict, the
banner and the top findings are never dropped.

Every model-written string goes through `bot.safety`; table cells additionally
escape `|` and stay on one line. Links in the composed comment that do not point into the
repository (`repo`, on github.com) are shown as text (`bot.safety.defuse_links`): a model
must not be able to put a phishing link under the App's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.council.advisory import (
    Advisory,
    MergedFinding,
    Resolution,
    SeatReport,
    SeatState,
    TopFinding,
)
from bot.council.schemas import Assessment
from bot.render.usage import cost_text, usage_notes
from bot.safety import defuse_links, sanitize_html_text, sanitize_inline, sanitize_markdown

__all__ = [
    "COMMENT_MARKER",
    "RESOLUTION_EMOJI",
    "RESOLUTION_TITLE",
    "SEVERITY_EMOJI",
    "cell",
    "missing_perspectives",
    "partial_banner",
    "raised_by",
    "render_comment",
    "seats_phrase",
    "top_findings_table",
    "verdict_heading",
]

# Finds the sticky comment again (with the App's login: anyone can paste the marker).
# `bot.safety` removes every `<!--` from model text, so no model can forge it.
COMMENT_MARKER = "<!-- pr-council:advisory -->"
RESOLUTION_EMOJI: dict[Resolution, str] = {
    Resolution.APPROVED: "✅",
    Resolution.APPROVED_WITH_CONDITIONS: "🟡",
    Resolution.ESCALATE: "⚖️",
    Resolution.REJECTED: "❌",
    Resolution.NO_QUORUM: "⚠️",
    Resolution.COST_LIMIT: "💸",
    Resolution.CANCELLED: "⏹️",
    Resolution.FAILED: "⚠️",
    Resolution.NOTHING_TO_REVIEW: "➖",
}
RESOLUTION_TITLE: dict[Resolution, str] = {
    Resolution.APPROVED: "Approved",
    Resolution.APPROVED_WITH_CONDITIONS: "Approved with conditions",
    Resolution.ESCALATE: "Escalate: a person must decide",
    Resolution.REJECTED: "Rejected",
    Resolution.NO_QUORUM: "The council could not convene",
    Resolution.COST_LIMIT: "Stopped at the cost limit",
    Resolution.CANCELLED: "Deliberation cancelled",
    Resolution.FAILED: "The deliberation failed",
    Resolution.NOTHING_TO_REVIEW: "Nothing to review",
}
SEVERITY_EMOJI = {"critical": "🔴", "major": "🟠", "minor": "🟡", "nit": "⚪"}
STATE_TEXT = {
    SeatState.OK: "ok",
    SeatState.TIMED_OUT: "timed out",
    SeatState.ERROR: "error",
    SeatState.INVALID: "invalid answer",
    SeatState.ABSTAINED: "abstained",
    SeatState.SKIPPED: "skipped",
}

# Per-field limits: generous for reading, small enough that one runaway answer cannot
# crowd out the rest of the comment.
_CELL = 300
_TITLE = 200
_PROSE = 4_000
_ITEM = 1_000
_FINDINGS_SHOWN = 30


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut with an ellipsis."""
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def cell(text: str | None, limit: int = _CELL) -> str:
    """Model text as one table cell: sanitized, one line, `|` escaped."""
    return sanitize_inline(clip(text or "", limit)).replace("|", "\\|") or " "


def _inline(text: str, limit: int = _ITEM) -> str:
    return sanitize_inline(clip(text, limit))


def _block(text: str, limit: int = _PROSE) -> str:
    return sanitize_markdown(clip(text, limit))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _pct(fraction: float) -> str:
    return f"{round(fraction * 100)}%"


def _details(summary: str, body: str) -> str:
    # The blank lines let GitHub render Markdown inside the HTML block.
    return f"<details>\n<summary>{summary}</summary>\n\n{body.strip()}\n\n</details>"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _bullets(items: Sequence[str], limit: int = _ITEM) -> str:
    return "\n".join(f"- {_inline(i, limit)}" for i in items if i.strip())


# --- head: verdict, banner, top findings (never dropped) -----------------------------------


def seats_phrase(advisory: Advisory) -> str:
    valid, total = len(advisory.valid_seats()), len(advisory.seats)
    if valid == total:
        return _count(total, "seat")
    return f"{valid} of {total} seats"


def verdict_heading(advisory: Advisory) -> str:
    r = advisory.resolution
    return f"{RESOLUTION_EMOJI[r]} {RESOLUTION_TITLE[r]}"


def _verdict_lines(advisory: Advisory) -> list[str]:
    facts = [seats_phrase(advisory), f"protocol `{advisory.protocol}`"]
    if advisory.resolution.is_verdict:
        facts.insert(0, f"**confidence {_pct(advisory.confidence)}**")
    lines = [f"## {verdict_heading(advisory)}\n" + " · ".join(facts)]
    banner = partial_banner(advisory)
    if banner:  # lost seats are said first, before anything the remaining seats said
        lines.append(banner)
    if advisory.synthesis and advisory.synthesis.verdict_sentence.strip():
        lines.append(f"> {_inline(advisory.synthesis.verdict_sentence, 500)}")
    if advisory.reason:
        lines.append(f"**Why:** {_inline(advisory.reason, 1_000)}")
    if advisory.topic.strip():
        lines.append(f"**Topic:** {_inline(advisory.topic, 300)}")
    return lines


def _lost_seat_phrase(seat: SeatReport) -> str:
    lenses = f"; lenses: {', '.join(seat.lenses)}" if seat.lenses else ""
    return f"{seat.persona_name} ({STATE_TEXT[seat.state]}{lenses})"


def missing_perspectives(advisory: Advisory) -> list[str]:
    """The advisory's own list, or one phrase per lost seat."""
    if advisory.missing_perspectives:
        return list(advisory.missing_perspectives)
    return [_lost_seat_phrase(s) for s in advisory.lost_seats()]


def partial_banner(advisory: Advisory) -> str | None:
    lost = advisory.lost_seats()
    if not (advisory.partial or lost) or advisory.resolution is Resolution.NO_QUORUM:
        return None
    valid, total = len(advisory.valid_seats()), len(advisory.seats)
    missing = ", ".join(_inline(m, 300) for m in missing_perspectives(advisory)) or "unknown"
    return (
        f"> ⚠️ **Partial advisory ({valid} of {total} seats).** Missing perspectives: "
        f"{missing}. This advisory does not guess what they would have said."
    )


def raised_by(advisory: Advisory, seat_ids: Sequence[str]) -> str:
    labels = ", ".join(advisory.label_for(s) for s in seat_ids)
    return f"{_count(len(seat_ids), 'seat')} ({labels})" if seat_ids else "-"


def _top_row(advisory: Advisory, item: TopFinding) -> list[str]:
    if item.kind == "red_flag":
        severity = "🚩 red flag"
    else:
        severity = f"{SEVERITY_EMOJI[item.severity or 'critical']} {item.severity}"
    return [
        severity,
        cell(item.location(), _CELL) if item.path else "-",
        cell(item.title, _TITLE),
        cell(raised_by(advisory, item.raised_by)),
    ]


def top_findings_table(advisory: Advisory, limit: int | None = None) -> str:
    items = advisory.top_findings
    shown = items if limit is None else items[:limit]
    rows = [_top_row(advisory, i) for i in shown]
    text = "### Top findings\n\n" + _table(["Severity", "Location", "Title", "Raised by"], rows)
    if len(items) > len(shown):
        text += f"\n\n…and {len(items) - len(shown)} more."
    return text


def _seat_state_table(advisory: Advisory) -> str:
    rows = [
        [
            s.label,
            cell(s.persona_name),
            cell(s.model),
            STATE_TEXT[s.state],
            cell(s.error or ""),
        ]
        for s in advisory.seats
    ]
    return "### Seats\n\n" + _table(["Seat", "Persona", "Model", "State", "Error"], rows)


def _head(advisory: Advisory, top_limit: int | None = None) -> str:
    parts = [COMMENT_MARKER, *_verdict_lines(advisory)]
    if advisory.resolution in (Resolution.NO_QUORUM, Resolution.FAILED) and advisory.seats:
        parts.append(_seat_state_table(advisory))
    if advisory.resolution is Resolution.COST_LIMIT:
        parts.append("_What the council gathered before the limit:_")
    if advisory.top_findings:
        parts.append(top_findings_table(advisory, top_limit))
    return "\n\n".join(parts)


# --- synthesis, conditions, findings, votes -------------------------------------------------


def _divergence(advisory: Advisory) -> str:
    assert advisory.synthesis is not None
    lines: list[str] = []
    for d in advisory.synthesis.divergence:
        lines.append(f"- **{_inline(d.point, 300)}**")
        lines += [f"  - {_inline(side)}" for side in d.sides if side.strip()]
    return "\n".join(lines)


def _tradeoff_map(advisory: Advisory) -> str:
    assert advisory.synthesis is not None
    rows: list[list[str]] = []
    for dim in advisory.synthesis.tradeoff_map:
        for i, opt in enumerate(dim.options):
            first = cell(dim.dimension, 100) if i == 0 else " "
            rows.append([first, cell(opt.option, 100), cell(opt.pro), cell(opt.con)])
    return _table(["Dimension", "Option", "Pro", "Con"], rows)


def _synthesis_sections(advisory: Advisory) -> list[str]:
    s = advisory.synthesis
    if s is None:
        return []
    sections: list[tuple[str, str]] = [
        ("Consensus", _bullets(s.consensus)),
        ("Divergence", _divergence(advisory) if s.divergence else ""),
        ("Recommendation", _block(s.recommendation) if s.recommendation.strip() else ""),
        ("Tradeoff map", _tradeoff_map(advisory) if s.tradeoff_map else ""),
        (
            "Action items",
            "\n".join(f"{n}. {_inline(a)}" for n, a in enumerate(s.action_items, 1) if a.strip()),
        ),
    ]
    return [f"### {title}\n\n{body}" for title, body in sections if body.strip()]


def _conditions(advisory: Advisory) -> str:
    if not advisory.conditions:
        return ""
    return "### Conditions\n\n" + _bullets(advisory.conditions)


def _finding_row(advisory: Advisory, f: MergedFinding) -> list[str]:
    return [
        f"{SEVERITY_EMOJI[f.severity]} {f.severity}",
        cell(f.location()),
        f"**{cell(f.title, _TITLE)}** {cell(f.detail, 240)}",
        cell(raised_by(advisory, f.raised_by)),
    ]


def _findings(advisory: Advisory, limit: int) -> str:
    findings = advisory.findings
    if not findings:
        return ""
    shown = findings[:limit]
    text = "### Findings\n\n"
    if shown:
        rows = [_finding_row(advisory, f) for f in shown]
        text += _table(["Severity", "Location", "Finding", "Raised by"], rows)
    if len(findings) > len(shown):
        text += f"\n\n…and {len(findings) - len(shown)} more (see the check run's annotations)."
    return text


def _vote_cells(seat: SeatReport) -> tuple[str, str, str]:
    if seat.vote is not None:
        v = seat.vote
        return v.vote, _pct(v.confidence), cell("; ".join(v.conditions))
    if not seat.is_valid or seat.assessment is None:
        return f"- ({STATE_TEXT[seat.state]})", "-", " "
    a = seat.assessment
    verdict = "ABSTAIN" if seat.state is SeatState.ABSTAINED else a.verdict
    condition = "; ".join(a.concerns) if a.verdict == "CONCERNS" else ""
    return verdict, f"{a.confidence}%", cell(condition)


def _votes(advisory: Advisory) -> str:
    if not advisory.seats:
        return ""
    rows = [
        [s.label, cell(s.persona_name, 100), cell(s.model, 100), *_vote_cells(s)]
        for s in advisory.seats
    ]
    voted = any(s.vote is not None for s in advisory.seats)
    title = "Votes" if voted else "Verdicts by seat"
    header = ["Seat", "Persona", "Model", "Vote" if voted else "Verdict", "Confidence"]
    return f"### {title}\n\n" + _table([*header, "Condition"], rows)


def _extras(advisory: Advisory) -> str:
    lines: list[str] = []
    if advisory.peer_ranking:
        ranking = " > ".join(advisory.label_for(s) for s in advisory.peer_ranking)
        lines.append(f"**Peer ranking** (anonymized, best first): {ranking}")
    lines += [f"_Note: {_inline(n, 500)}_" for n in advisory.notes if n.strip()]
    return "\n\n".join(lines)


# --- details: assessments, discussion, cost -------------------------------------------------


def _lens_score(score: int | None) -> str:
    return "n/a" if score is None else f"{score}/10"


def _lens_table(a: Assessment, unscored: Sequence[str] = ()) -> str:
    """The seat's lens scores; a lens it did not score is a row "not scored"."""
    rows = [[cell(s.lens, 80), _lens_score(s.score), cell(s.analysis, 600)] for s in a.lens_scores]
    rows += [[cell(lens, 80), "not scored", ""] for lens in unscored]
    return _table(["Lens", "Score", "Analysis"], rows) if rows else ""


def _seat_findings(a: Assessment) -> str:
    lines = []
    for f in a.findings:
        where = _inline(f"{f.path}" + (f":L{f.start_line}" if f.start_line else ""), 200)
        line = f"- {SEVERITY_EMOJI[f.severity]} **{_inline(f.title, _TITLE)}** ({where}): "
        line += _inline(f.detail, 800)
        if f.suggestion:
            line += f" _Suggestion:_ {_inline(f.suggestion, 800)}"
        lines.append(line)
    return "\n".join(lines)


def _assessment_body(a: Assessment, unscored: Sequence[str] = ()) -> str:
    parts = [f"**Summary.** {_block(a.summary, 2_000)}", _lens_table(a, unscored)]
    for title, items in (
        ("Red flags", a.red_flags),
        ("Concerns", a.concerns),
        ("Recommendations", a.recommendations),
    ):
        if items:
            parts.append(f"**{title}**\n\n{_bullets(items)}")
    if a.questions:
        qs = [f"{q.to_member or 'everyone'}: {q.question}" for q in a.questions]
        parts.append(f"**Questions**\n\n{_bullets(qs)}")
    if a.findings:
        parts.append(f"**Findings**\n\n{_seat_findings(a)}")
    return "\n\n".join(p for p in parts if p)


def _assessment_details(seat: SeatReport) -> str:
    assert seat.assessment is not None
    a = seat.assessment
    summary = sanitize_html_text(
        f"{seat.label} · {seat.persona_name} · {seat.model} · {a.verdict} {a.score}/10 · "
        f"confidence {a.confidence}%"
    )
    return _details(summary, _assessment_body(a, seat.unscored_lenses))


def _discussion_lines(advisory: Advisory) -> list[str]:
    lines: list[str] = []
    for rnd in advisory.rounds:
        lines.append(f"**Round {rnd.round}**")
        for rm in rnd.messages:
            m = rm.message
            to = f" → {_inline(m.to_member, 40)}" if m.to_member else ""
            line = f"- **{advisory.label_for(rm.seat_id)}{to}** · {m.type}: {_inline(m.point)}"
            if m.reasoning.strip():
                line += f" — {_inline(m.reasoning)}"
            lines.append(line)
    for j in advisory.judge_decisions:
        d = j.decision
        line = f"- **Judge, cycle {j.cycle}: {d.decision}** — {_inline(d.reasoning)}"
        if d.redebate_members:
            line += f" Re-debate: {_inline(', '.join(d.redebate_members), 200)}."
        if d.focus:
            line += f" Focus: {_inline(d.focus, 500)}"
        if d.option_c:
            line += f" Option C: {_inline(d.option_c, 500)}"
        lines.append(line)
    for s in advisory.shifts:
        line = (
            f"- Shift, **{advisory.label_for(s.seat_id)}**, round {s.round}: "
            f"{_inline(s.original_position or '?', 300)} → {_inline(s.new_position or '?', 300)}"
        )
        if s.changed_by:
            line += f" (changed by: {_inline(s.changed_by, 300)})"
        lines.append(line)
    return lines


def _discussion(advisory: Advisory, lines: Sequence[str], shown: int) -> str:
    if not lines:
        return ""
    messages = sum(len(r.messages) for r in advisory.rounds)
    counts = [
        _count(len(advisory.rounds), "round"),
        _count(messages, "message"),
        _count(len(advisory.shifts), "shift"),
    ]
    summary = f"Discussion ({', '.join(counts)})"
    body = "\n".join(lines[:shown])
    if shown < len(lines):
        body += f"\n\n…{len(lines) - shown} more lines omitted for length."
    return _details(summary, body)


def _cost(advisory: Advisory) -> str:
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
    body = _table(header, [row])
    notes = usage_notes(u)
    if notes:
        said = "; ".join(notes)
        body += f"\n\n{_inline(said[:1].upper() + said[1:])}."
    return _details(f"Cost: {sanitize_html_text(cost_text(u, digits=2))}", body)


# --- layout and shrinking ---------------------------------------------------------------------


@dataclass
class _Layout:
    advisory: Advisory
    sections: list[str]
    assessments: list[str]
    discussion: list[str]
    findings_shown: int
    discussion_shown: int = 0
    dropped_assessments: int = 0
    dropped_sections: int = 0
    top_limit: int | None = None
    cost: str = ""
    has_conditions: bool = False
    repo: str | None = None  # "OWNER/NAME": links into it stay links

    def compose(self) -> str:
        a = self.advisory
        tail = [
            *self.sections,
            _findings(a, self.findings_shown),
            _votes(a),
            _extras(a),
            *self.assessments,
        ]
        if self.dropped_assessments:
            tail.append(f"_{self.dropped_assessments} assessment detail(s) omitted for length._")
        if self.dropped_sections:
            tail.append(f"_{self.dropped_sections} section(s) omitted for length._")
        tail += [_discussion(a, self.discussion, self.discussion_shown), self.cost]
        body = "\n\n".join(t for t in tail if t)
        # Belt and braces: the sanitizer already makes the marker impossible in model text.
        body = body.replace(COMMENT_MARKER, "")
        text = _head(a, self.top_limit) + ("\n\n" + body if body else "") + "\n"
        return defuse_links(text, self.repo)


def _drop_assessment(layout: _Layout) -> bool:
    if not layout.assessments:
        return False
    longest = max(range(len(layout.assessments)), key=lambda i: len(layout.assessments[i]))
    del layout.assessments[longest]
    layout.dropped_assessments += 1
    return True


def _shorten_discussion(layout: _Layout) -> bool:
    if layout.discussion_shown == 0:
        if not layout.discussion:
            return False
        layout.discussion = []  # nothing shown any more: drop the section entirely
        return True
    layout.discussion_shown //= 2
    return True


def _trim_findings(layout: _Layout) -> bool:
    if layout.findings_shown == 0:
        return False
    layout.findings_shown //= 2
    return True


def _drop_section(layout: _Layout) -> bool:
    if not layout.sections:
        return False
    # The longest synthesis section goes first; Conditions (listed last) go last.
    candidates = range(len(layout.sections) - (1 if layout.has_conditions else 0))
    if not candidates:
        layout.has_conditions = False
        candidates = range(len(layout.sections))
    longest = max(candidates, key=lambda i: len(layout.sections[i]))
    del layout.sections[longest]
    layout.dropped_sections += 1
    return True


def _trim_top(layout: _Layout) -> bool:
    total = len(layout.advisory.top_findings)
    current = total if layout.top_limit is None else layout.top_limit
    if current == 0:
        return False
    layout.top_limit = current // 2
    return True


_SHRINK_STEPS: tuple[Callable[[_Layout], bool], ...] = (
    _drop_assessment,
    _shorten_discussion,
    _trim_findings,
    _drop_section,
    _trim_top,  # only when the protected head alone does not fit
)


def _layout(advisory: Advisory, repo: str | None) -> _Layout:
    assessments = [_assessment_details(s) for s in advisory.seats if s.assessment is not None]
    discussion = _discussion_lines(advisory)
    sections = _synthesis_sections(advisory)
    conditions = _conditions(advisory)
    if conditions:
        sections.append(conditions)
    return _Layout(
        advisory=advisory,
        sections=sections,
        assessments=assessments,
        discussion=discussion,
        findings_shown=min(len(advisory.findings), _FINDINGS_SHOWN),
        discussion_shown=len(discussion),
        cost=_cost(advisory),
        has_conditions=bool(conditions),
        repo=repo,
    )


def render_comment(advisory: Advisory, *, max_chars: int = 65_000, repo: str | None = None) -> str:
    """The sticky comment: starts with `COMMENT_MARKER`, never longer than `max_chars`.

    `repo` ("OWNER/NAME") is the repository the comment is posted on: links into it stay
    links, every other link is shown as text (all of them when `repo` is None)."""
    layout = _layout(advisory, repo)
    text = layout.compose()
    for step in _SHRINK_STEPS:
        while len(text) > max_chars and step(layout):
            text = layout.compose()
    if len(text) > max_chars:
        # Only reachable with an absurdly small max_chars: cut, keeping the marker.
        text = text[: max_chars - 2].rstrip() + "…\n"
    return text
