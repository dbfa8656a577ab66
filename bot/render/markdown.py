"""The advisory as the sticky PR comment: one screen by default.

The visible part (outside every `<details>`) is what a reader sees without a click, and it
is bounded by caps, not by luck: the verdict line (resolution, check conclusion,
confidence, seats), the partial-advisory banner, the chair's verdict sentence, up to
`max_findings` findings at or above `min_severity` (red flags first; "N more" points to
the collapsed list), the recommendation, the conditions (at most 5), at most 5 action
items and the vote table (short cells: the conditions themselves are listed once, above).
Every item has its own character cap; should the whole still exceed `VISIBLE_TARGET`, the
item caps shrink (`_SCALES`) until it fits.

Collapsed, each with its own cap (`SECTION_CAPS`): all findings in full, the chair's
synthesis in full (consensus, divergence, tradeoff map, peer ranking), one section per
assessment (its findings only by number: they are in "All findings"), the discussion
(identical points of one round said once, with every seat that made them) and the cost.
`comment: compact` keeps the visible part only, with a one-line pointer to the check run.

Text is never cut mid-sentence: `clip` keeps whole sentences (or list items) and says "…"
where it left the rest out; only a single sentence longer than its cap is cut, at a word
boundary. A section over its cap keeps its first whole items and says how many it left out.

GitHub refuses comments over 65,536 characters, so the comment is also shrunk to
`max_chars`: per-assessment details (longest first), the discussion, the all-findings
list, the synthesis section, then the visible findings. The verdict and the banner are
never dropped.

Every model-written string goes through `bot.safety`: a single line (a cell, a list item)
starts no block of its own (`- ## x` is no heading); table cells additionally escape `|`
and stay on one line; prose of several lines (the recommendation, a seat's summary) is a
block quote in which no line starts a heading, table, rule, fence or HTML block, so
nothing a model writes looks like the comment's own verdict, headings or tables. Links
in the composed comment that do not point into the repository (`repo`, on github.com) are
shown as text (`bot.safety.links`): a model must not be able to put a phishing
link under the App's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from bot.council.advisory import (
    SEVERITY_ORDER,
    Advisory,
    MergedFinding,
    Resolution,
    RoundMessage,
    RoundRecord,
    SeatReport,
    SeatState,
    TopFinding,
)
from bot.council.places import also_at_text
from bot.council.resolution import MAX_CONDITIONS
from bot.council.schemas import Assessment, Severity
from bot.render.blocks import CELL as _CELL
from bot.render.blocks import ITEM as _ITEM
from bot.render.blocks import SECTION_CAPS, cell, clip
from bot.render.blocks import capped as _capped
from bot.render.blocks import count as _count
from bot.render.blocks import details as _details
from bot.render.blocks import inline as _inline
from bot.render.blocks import table as _table
from bot.render.conclusion import conclusion_for, gate_note
from bot.render.protocol_sections import SECTIONS
from bot.render.scope import scope_visible
from bot.render.usage import cost_text, usage_notes
from bot.safety.html import sanitize_html_text
from bot.safety.links import defuse_links
from bot.safety.markdown import quote_markdown

__all__ = [
    "COMMENT_MARKER",
    "RESOLUTION_EMOJI",
    "RESOLUTION_TITLE",
    "SECTION_CAPS",
    "SEVERITY_EMOJI",
    "VISIBLE_TARGET",
    "CommentMode",
    "CommentOptions",
    "cell",
    "clip",
    "comment_options",
    "missing_perspectives",
    "partial_banner",
    "raised_by",
    "render_comment",
    "seats_phrase",
    "top_findings_table",
    "verdict_heading",
    "visible_text",
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
    SeatState.NO_VOTE: "no vote",  # with why where known: `SeatReport.no_vote`
    SeatState.ABSTAINED: "no vote",  # stored before "no_vote": the same seat
    SeatState.SKIPPED: "skipped",
}

CommentMode = Literal["full", "compact"]
VISIBLE_TARGET = 6_000  # characters outside <details>, for any protocol and board size
MAX_ACTION_ITEMS = 5
# Item caps of the visible part at scale 1.0 (`_SCALES` shrinks them when needed).
_VISIBLE_CAPS = {
    "sentence": 400,
    "why": 500,
    "topic": 200,
    "title": 140,
    "detail": 160,
    "location": 70,
    "recommendation": 700,
    "item": 220,
    "name": 40,
    "note": 400,
}
_SCALES = (1.0, 0.75, 0.5, 0.35, 0.25)
_TITLE = 200


class CommentOptions(BaseModel):
    """The repository's choices for its comment (`.github/council.yml`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    comment: CommentMode = "full"
    max_findings: int = Field(default=7, ge=1, le=50)
    min_severity: Severity = "minor"
    gate: Literal["verdict", "advisory"] = "verdict"


class CommentKeys(Protocol):
    """Where the options come from: the repository's effective config."""

    @property
    def comment(self) -> CommentMode: ...
    @property
    def max_findings(self) -> int: ...
    @property
    def min_severity(self) -> Severity: ...
    @property
    def gate(self) -> Literal["verdict", "advisory"]: ...


def comment_options(config: CommentKeys) -> CommentOptions:
    """The repository's comment options (the same for the App's comment and the CLI's)."""
    return CommentOptions(
        comment=config.comment,
        max_findings=config.max_findings,
        min_severity=config.min_severity,
        gate=config.gate,
    )


def _block(text: str, limit: int) -> str:
    """Model prose of several lines as a block quote (`bot.safety.markdown`): no
    heading, table, rule, fence or HTML of it can pass for the comment's own."""
    return quote_markdown(clip(text, limit))


def _pct(fraction: float) -> str:
    return f"{round(fraction * 100)}%"


def _bullets(items: Sequence[str], limit: int = _ITEM) -> str:
    return "\n".join(f"- {_inline(i, limit)}" for i in items if i.strip())


_DETAILS_BLOCK = re.compile(r"<details>.*?</details>", re.DOTALL)


def visible_text(comment: str) -> str:
    """What a reader sees without opening anything: the comment outside `<details>`."""
    return _DETAILS_BLOCK.sub("", comment)


# --- head: verdict, banner (never dropped) ---------------------------------------------------


def seats_phrase(advisory: Advisory) -> str:
    valid, total = len(advisory.valid_seats()), len(advisory.seats)
    if valid == total:
        return _count(total, "seat")
    return f"{valid} of {total} seats"


def verdict_heading(advisory: Advisory) -> str:
    r = advisory.resolution
    return f"{RESOLUTION_EMOJI[r]} {RESOLUTION_TITLE[r]}"


def _verdict_lines(advisory: Advisory, options: CommentOptions, caps: dict[str, int]) -> list[str]:
    facts = [
        f"check `{conclusion_for(advisory, options.gate)}`",
        seats_phrase(advisory),
        f"protocol `{advisory.protocol}`",
    ]
    if advisory.resolution.is_verdict:
        facts.insert(1, f"**confidence {_pct(advisory.confidence)}**")
    lines = [f"## {verdict_heading(advisory)}\n" + " · ".join(facts)]
    blocked = gate_note(advisory, options.gate, list_current=False)
    if blocked:  # why the check blocks the merge, and what to do
        lines.append(blocked)
    banner = partial_banner(advisory)
    if banner:  # lost seats are said first, before anything the remaining seats said
        lines.append(banner)
    if advisory.synthesis and advisory.synthesis.verdict_sentence.strip():
        lines.append(f"> {_inline(advisory.synthesis.verdict_sentence, caps['sentence'])}")
    if advisory.reason:
        lines.append(f"**Why:** {_inline(advisory.reason, caps['why'])}")
    if advisory.topic.strip():
        lines.append(f"**Topic:** {_inline(advisory.topic, caps['topic'])}")
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
    missing = "; ".join(_inline(m, 120) for m in missing_perspectives(advisory)[:9]) or "unknown"
    return (
        f"> ⚠️ **Partial advisory ({valid} of {total} seats).** Missing perspectives: "
        f"{missing}. This advisory does not guess what they would have said."
    )


def raised_by(advisory: Advisory, seat_ids: Sequence[str]) -> str:
    labels = ", ".join(advisory.label_for(s) for s in seat_ids)
    return f"{_count(len(seat_ids), 'seat')} ({labels})" if seat_ids else "-"


def _raised_short(advisory: Advisory, seat_ids: Sequence[str]) -> str:
    """ "2 seats (Member A, Member C)"; beyond three seats only the count."""
    if len(seat_ids) > 3:
        return _count(len(seat_ids), "seat")
    return raised_by(advisory, seat_ids)


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
    """The advisory's top findings as a table (the check run's summary shows it)."""
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
            cell(s.persona_name, 60),
            cell(s.model, 60),
            s.no_vote or STATE_TEXT[s.state],
            cell(s.error or "", 160),
        ]
        for s in advisory.seats
    ]
    return "### Seats\n\n" + _table(["Seat", "Persona", "Model", "State", "Error"], rows)


# --- the visible findings ----------------------------------------------------------------------


def _listed(advisory: Advisory, options: CommentOptions) -> list[int]:
    """Indices (into `advisory.findings`) of the findings at or above `min_severity`."""
    floor = SEVERITY_ORDER[options.min_severity]
    order = sorted(
        range(len(advisory.findings)),
        key=lambda i: (
            SEVERITY_ORDER[advisory.findings[i].severity],
            -advisory.findings[i].consensus,
            i,
        ),
    )
    return [i for i in order if SEVERITY_ORDER[advisory.findings[i].severity] <= floor]


def _red_flags(advisory: Advisory) -> list[TopFinding]:
    return [t for t in advisory.top_findings if t.kind == "red_flag"]


def _first_sentence(text: str, limit: int) -> str:
    """The detail's first whole sentence(s) within `limit`, or nothing."""
    clipped = clip(" ".join(text.split()), limit)
    if clipped.endswith("…") and not clipped.endswith(" …"):
        return ""  # one long sentence: the title alone says it; the rest is collapsed
    return clipped.removesuffix(" …")


def _same_point(a: MergedFinding, b: MergedFinding) -> bool:
    """Two merged findings that say the same thing in other words: same place, same
    severity, same first sentence of detail (the chair's merge missed a rewording)."""
    return (
        a.location() == b.location()
        and a.severity == b.severity
        and _norm(_first_sentence(a.detail, 10_000)) == _norm(_first_sentence(b.detail, 10_000))
    )


def _grouped(advisory: Advisory, indices: Sequence[int]) -> list[tuple[int, list[str]]]:
    """The listed findings, each point once: (index, every seat that raised it)."""
    groups: list[tuple[int, list[str]]] = []
    for i in indices:
        f = advisory.findings[i]
        same = next((g for g in groups if _same_point(advisory.findings[g[0]], f)), None)
        if same is None:
            groups.append((i, list(f.raised_by)))
        else:
            same[1].extend(s for s in f.raised_by if s not in same[1])
    return groups


def _visible_findings(
    advisory: Advisory, options: CommentOptions, caps: dict[str, int], *, compact: bool
) -> str:
    flags = _red_flags(advisory)
    groups = _grouped(advisory, _listed(advisory, options))
    rows: list[list[str]] = []
    for flag in flags[: options.max_findings]:
        rows.append(
            [
                "🚩 red flag",
                "-",
                cell(flag.title, caps["title"]),
                _raised_short(advisory, flag.raised_by),
            ]
        )
    shown_flags = len(rows)
    room = max(0, options.max_findings - shown_flags)
    shown_groups = groups[:room]
    for i, seats in shown_groups:
        f = advisory.findings[i]
        detail = _first_sentence(f.detail, caps["detail"])
        text = f"**{cell(f.title, caps['title'])}**"
        if detail:
            text += f" {cell(detail, caps['detail'])}"
        rows.append(
            [
                f"#{i + 1} {SEVERITY_EMOJI[f.severity]} {f.severity}",
                cell(f.location(), caps["location"])
                + (f" · {cell(also_at_text(f), caps['location'])}" if f.also_at else ""),
                text,
                cell(_raised_short(advisory, seats)),
            ]
        )
    covered = {
        j
        for i, _ in shown_groups
        for j in range(len(advisory.findings))
        if j == i or _same_point(advisory.findings[i], advisory.findings[j])
    }
    more = len(advisory.findings) - len(covered)
    hidden_flags = len(flags) - shown_flags
    if not rows and not more:
        return ""
    parts = ["### Findings"]
    if rows:
        parts.append(_table(["Severity", "Location", "Finding", "Raised by"], rows))
    if more or hidden_flags:
        floor = SEVERITY_ORDER[options.min_severity]
        below = sum(1 for f in advisory.findings if SEVERITY_ORDER[f.severity] > floor)
        said = [_count(more, "more finding")] if more else []
        if hidden_flags:
            said.append(_count(hidden_flags, "more red flag"))
        where = "the check run" if compact else "**All findings** below"
        extra = f", {below} of them below `{options.min_severity}`" if below and more else ""
        parts.append(f"…and {' and '.join(said)}{extra}: see {where}.")
    return "\n\n".join(parts)


# --- the rest of the visible part ------------------------------------------------------------


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def _recommendation(advisory: Advisory, caps: dict[str, int]) -> str:
    s = advisory.synthesis
    if s is None or not s.recommendation.strip():
        return ""
    return "### Recommendation\n\n" + _block(s.recommendation, caps["recommendation"])


def _conditions(advisory: Advisory, caps: dict[str, int]) -> str:
    if not advisory.conditions:
        return ""
    items = advisory.conditions[:MAX_CONDITIONS]
    return "### Conditions\n\n" + _bullets(items, caps["item"])


def _action_items(advisory: Advisory, caps: dict[str, int]) -> str:
    s = advisory.synthesis
    if s is None:
        return ""
    said = {_norm(c) for c in advisory.conditions}  # a condition is not said twice
    items = [a for a in s.action_items if a.strip() and _norm(a) not in said]
    items = list(dict.fromkeys(items))[:MAX_ACTION_ITEMS]
    if not items:
        return ""
    lines = [f"{n}. {_inline(a, caps['item'])}" for n, a in enumerate(items, 1)]
    return "### Action items\n\n" + "\n".join(lines)


def _vote_cells(seat: SeatReport) -> tuple[str, str, str]:
    if seat.vote is not None:
        v = seat.vote
        return v.vote, _pct(v.confidence), str(len(v.conditions)) if v.conditions else "-"
    if seat.no_vote:  # "no vote (timed out)": never an abstention
        return seat.no_vote, "-", "-"
    if not seat.is_valid or seat.assessment is None:
        return f"- ({STATE_TEXT[seat.state]})", "-", "-"
    a = seat.assessment
    concerns = len(a.concerns) if a.verdict == "CONCERNS" else 0
    return a.verdict, f"{a.confidence}%", str(concerns) if concerns else "-"


def _votes(advisory: Advisory, caps: dict[str, int]) -> str:
    if not advisory.seats:
        return ""
    rows = [
        [s.label, cell(s.persona_name, caps["name"]), cell(s.model, caps["name"]), *_vote_cells(s)]
        for s in advisory.seats
    ]
    voted = any(s.vote is not None or s.no_vote for s in advisory.seats)
    title = "Votes" if voted else "Verdicts by seat"
    header = ["Seat", "Persona", "Model", "Vote" if voted else "Verdict", "Confidence"]
    return f"### {title}\n\n" + _table([*header, "Conditions" if voted else "Concerns"], rows)


def _notes(advisory: Advisory, caps: dict[str, int], *, compact: bool) -> str:
    notes = [f"_Note: {_inline(n, caps['note'])}_" for n in advisory.notes[:3] if n.strip()]
    if len(advisory.notes) > 3:
        where = "" if compact else " in the synthesis below"
        notes.append(f"_…{_count(len(advisory.notes) - 3, 'more note')}{where}._")
    return "\n\n".join(notes)


def _visible(
    advisory: Advisory, options: CommentOptions, scale: float, findings_on: bool
) -> list[str]:
    caps = {k: max(40, int(v * scale)) for k, v in _VISIBLE_CAPS.items()}
    parts = [
        COMMENT_MARKER,
        *_verdict_lines(advisory, options, caps),
        scope_visible(advisory),  # a re-review, a diff built from the files API
        *(s.head(advisory) for s in SECTIONS),
    ]
    if advisory.resolution in (Resolution.NO_QUORUM, Resolution.FAILED) and advisory.seats:
        parts.append(_seat_state_table(advisory))
    if advisory.resolution is Resolution.COST_LIMIT:
        parts.append("_What the council gathered before the limit:_")
    if findings_on:
        parts.append(
            _visible_findings(advisory, options, caps, compact=options.comment == "compact")
        )
    parts += [
        _recommendation(advisory, caps),
        _conditions(advisory, caps),
        _action_items(advisory, caps),
        _votes(advisory, caps),
        *(s.line(advisory, caps["sentence"]) for s in SECTIONS),
        _notes(advisory, caps, compact=options.comment == "compact"),
    ]
    return [p for p in parts if p]


# --- collapsed: all findings, synthesis, assessments, discussion, cost -----------------------


def _finding_item(advisory: Advisory, n: int, f: MergedFinding) -> str:
    where = f"`{_inline(f.location(), 200)}`"
    if f.also_at:
        where += f" ({_inline(also_at_text(f), 400)})"
    line = (
        f"{n}. {SEVERITY_EMOJI[f.severity]} **{f.severity}** · {where} · "
        f"**{_inline(f.title, _TITLE)}** ({_inline(raised_by(advisory, f.raised_by), 300)})"
    )
    line += f"\n   {_inline(f.detail, 900)}"
    if f.suggestion:
        line += f"\n   _Suggestion:_ {_inline(f.suggestion, 600)}"
    return line


def _all_findings(advisory: Advisory) -> str:
    if not advisory.findings:
        return ""
    items = [_finding_item(advisory, n, f) for n, f in enumerate(advisory.findings, 1)]
    body = _capped(items, SECTION_CAPS["findings"], "finding")
    counts = ", ".join(
        f"{sum(1 for f in advisory.findings if f.severity == sev)} {sev}"
        for sev in SEVERITY_ORDER
        if any(f.severity == sev for f in advisory.findings)
    )
    return _details(f"All findings ({len(advisory.findings)}: {counts})", body)


def _divergence(advisory: Advisory) -> str:
    assert advisory.synthesis is not None
    lines: list[str] = []
    for d in advisory.synthesis.divergence:
        lines.append(f"- **{_inline(d.point, 300)}**")
        lines += [f"  - {_inline(side, 500)}" for side in d.sides if side.strip()]
    return "\n".join(lines)


def _tradeoff_map(advisory: Advisory) -> str:
    assert advisory.synthesis is not None
    rows: list[list[str]] = []
    for dim in advisory.synthesis.tradeoff_map:
        for i, opt in enumerate(dim.options):
            first = cell(dim.dimension, 100) if i == 0 else " "
            rows.append([first, cell(opt.option, 100), cell(opt.pro, 200), cell(opt.con, 200)])
    return _table(["Dimension", "Option", "Pro", "Con"], rows)


def _synthesis(advisory: Advisory) -> str:
    s = advisory.synthesis
    parts: list[str] = []
    if s is not None:
        if s.consensus:
            parts.append("**Consensus**\n\n" + _bullets(s.consensus, 500))
        if s.divergence:
            parts.append("**Divergence**\n\n" + _divergence(advisory))
        # A debate shows its map, with weights, in its own section (bot.render.debate).
        if s.tradeoff_map and not (advisory.debate and advisory.debate.tradeoffs):
            parts.append("**Tradeoff map**\n\n" + _tradeoff_map(advisory))
        if len(s.action_items) > MAX_ACTION_ITEMS:
            rest = s.action_items[MAX_ACTION_ITEMS:]
            parts.append("**More action items**\n\n" + _bullets(rest, 300))
    if advisory.peer_ranking:
        ranking = " > ".join(advisory.label_for(x) for x in advisory.peer_ranking)
        parts.append(f"**Peer ranking** (anonymized, best first): {ranking}")
    if len(advisory.notes) > 3:
        parts.append("**More notes**\n\n" + _bullets(advisory.notes[3:], 400))
    if not parts:
        return ""
    return _details(
        "The chair's synthesis in full", _capped(parts, SECTION_CAPS["synthesis"], "part", "\n\n")
    )


def _lens_score(score: int | None) -> str:
    return "n/a" if score is None else f"{score}/10"


def _lens_table(a: Assessment, unscored: Sequence[str] = ()) -> str:
    """The seat's lens scores; a lens it did not score is a row "not scored"."""
    rows = [[cell(s.lens, 80), _lens_score(s.score), cell(s.analysis, 300)] for s in a.lens_scores]
    rows += [[cell(lens, 80), "not scored", ""] for lens in unscored]
    return _table(["Lens", "Score", "Analysis"], rows) if rows else ""


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
    summary = f"**Summary**\n\n{_block(a.summary, 1_200)}" if a.summary.strip() else ""
    parts = [summary, _lens_table(a, unscored)]
    for title, items in (
        ("Red flags", a.red_flags),
        ("Concerns", a.concerns),
        ("Recommendations", a.recommendations),
    ):
        new = [i for i in dict.fromkeys(items) if i.strip() and _norm(i) not in seen]
        repeated = len([i for i in items if i.strip()]) - len(new)
        seen.update(_norm(i) for i in new)
        body = _bullets(new, 400)
        if repeated:
            also = f"+{repeated} said above"
            body = f"{body}\n- _({also})_" if body else f"- _({also})_"
        if items:
            parts.append(f"**{title}**\n\n{body}")
    if a.questions:
        qs = [f"{q.to_member or 'everyone'}: {q.question}" for q in a.questions]
        parts.append(f"**Questions**\n\n{_bullets(qs, 300)}")
    if a.findings:
        numbers = [
            f"#{n}" for n, f in enumerate(advisory.findings, 1) if seat.seat_id in f.raised_by
        ]
        where = f"merged into All findings as {', '.join(numbers)}" if numbers else "merged"
        parts.append(f"**Findings:** {len(a.findings)} ({where}).")
    if seat.vote is not None:
        v = seat.vote
        said = _norm(v.rationale) in seen
        rationale = "_(the rationale said above)_" if said else _inline(v.rationale, 500)
        seen.add(_norm(v.rationale))
        vote = f"**Vote:** {v.vote} ({_pct(v.confidence)}). {rationale}"
        conditions = [c for c in dict.fromkeys(v.conditions) if _norm(c) not in seen]
        seen.update(_norm(c) for c in conditions)
        if conditions:
            vote += "\n\n" + _bullets(conditions, 300)
        if len(v.conditions) > len(conditions):
            vote += f"\n- _(+{len(v.conditions) - len(conditions)} said above)_"
        parts.append(vote)
    return _capped([p for p in parts if p], SECTION_CAPS["assessment"], "part", "\n\n")


def _assessment_details(advisory: Advisory, seat: SeatReport, seen: set[str]) -> str:
    assert seat.assessment is not None
    a = seat.assessment
    summary = sanitize_html_text(
        f"{seat.label} · {seat.persona_name} · {seat.model} · {a.verdict} {a.score}/10 · "
        f"confidence {a.confidence}%"
    )
    return _details(summary, _assessment_body(advisory, seat, a, seat.unscored_lenses, seen))


def _round_lines(advisory: Advisory, rnd: RoundRecord) -> list[str]:
    """One line per point: the same point made by several seats is said once, with every
    seat that made it and everyone it was addressed to."""
    order: list[tuple[str, str]] = []
    who: dict[tuple[str, str], list[str]] = {}
    to: dict[tuple[str, str], list[str]] = {}
    said: dict[tuple[str, str], RoundMessage] = {}
    for rm in rnd.messages:
        key = (str(rm.message.type), _norm(rm.message.point))
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
        arrow = f" → {_inline(targets, 200)}" if targets else ""
        line = f"- **{seats}{arrow}** · {m.type}: {_inline(m.point, 400)}"
        if m.reasoning.strip():
            line += f" — {_inline(m.reasoning, 500)}"
        lines.append(line)
    return lines


def _discussion_lines(advisory: Advisory) -> list[str]:
    lines: list[str] = []
    for rnd in advisory.rounds:
        # A blank line first: the heading must not join the previous round's last item.
        lines.append(f"\n**Round {rnd.round}**" if lines else f"**Round {rnd.round}**")
        lines += _round_lines(advisory, rnd)
    for j in advisory.judge_decisions:
        d = j.decision
        line = f"- **Judge, cycle {j.cycle}: {d.decision}** — {_inline(d.reasoning, 500)}"
        if d.redebate_members:
            line += f" Re-debate: {_inline(', '.join(d.redebate_members), 200)}."
        if d.focus:
            line += f" Focus: {_inline(d.focus, 300)}"
        if d.option_c:
            line += f" Option C: {_inline(d.option_c, 300)}"
        lines.append(line)
    for s in advisory.shifts:
        line = (
            f"- Shift, **{advisory.label_for(s.seat_id)}**, round {s.round}: "
            f"{_inline(s.original_position or '?', 200)} → {_inline(s.new_position or '?', 200)}"
        )
        if s.changed_by:
            line += f" (changed by: {_inline(s.changed_by, 200)})"
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
    body = _capped(list(lines[:shown]), SECTION_CAPS["discussion"], "line")
    if shown < len(lines):
        body += f"\n\n_…{len(lines) - shown} more lines left out for length._"
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
        body += f"\n\n{_inline(said[:1].upper() + said[1:], 600)}."
    return _details(f"Cost: {sanitize_html_text(cost_text(u, digits=2))}", body)


# --- layout and shrinking ---------------------------------------------------------------------


@dataclass
class _Layout:
    advisory: Advisory
    options: CommentOptions
    assessments: list[str]
    discussion: list[str]
    all_findings: str = ""
    synthesis: str = ""
    # The protocol's collapsed report (bot.render.sections), with how it is said left out.
    top: list[tuple[str, list[str]]] = field(default_factory=list)
    report: list[tuple[str, str]] = field(default_factory=list)
    discussion_shown: int = 0
    dropped_assessments: int = 0
    dropped_sections: list[str] = field(default_factory=list)
    findings_on: bool = True
    cost: str = ""
    repo: str | None = None  # "OWNER/NAME": links into it stay links
    scale: float = 1.0

    def visible(self) -> list[str]:
        return _visible(self.advisory, self.options, self.scale, self.findings_on)

    def compose(self) -> str:
        head = self.visible()
        if self.options.comment == "compact":
            tail = [_compact_pointer(self.advisory)]
        else:
            tail = [
                *(part for _, parts in self.top for part in parts),
                self.all_findings,
                self.synthesis,
                *(part for _, part in self.report),
                *self.assessments,
            ]
            if self.dropped_assessments:
                tail.append(
                    f"_{self.dropped_assessments} assessment detail(s) left out for length._"
                )
            if self.dropped_sections:
                tail.append(f"_Left out for length: {', '.join(self.dropped_sections)}._")
            tail += [_discussion(self.advisory, self.discussion, self.discussion_shown), self.cost]
        body = "\n\n".join(t for t in tail if t)
        # Belt and braces: the sanitizer already makes the marker impossible in model text.
        body = body.replace(COMMENT_MARKER, "")
        rest = "\n\n".join(head[1:]).replace(COMMENT_MARKER, "")
        text = "\n\n".join([head[0], rest] if rest else [head[0]])
        text += ("\n\n" + body if body else "") + "\n"
        return defuse_links(text, self.repo)


def _compact_pointer(advisory: Advisory) -> str:
    from bot.render.checks import CHECK_RUN_NAME  # checks imports this module

    return (
        f"_Compact advisory (`comment: compact`): every finding is listed in the "
        f"**{CHECK_RUN_NAME}** check run; `comment: full` adds each assessment, the "
        "discussion and the cost here._"
    )


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


def _drop_all_findings(layout: _Layout) -> bool:
    if not layout.all_findings:
        return False
    layout.all_findings = ""
    layout.dropped_sections.append("all findings (they are in the check run)")
    return True


def _drop_synthesis(layout: _Layout) -> bool:
    if not layout.synthesis:
        return False
    layout.synthesis = ""
    layout.dropped_sections.append("the chair's synthesis in full")
    return True


def _drop_report(layout: _Layout) -> bool:
    if not layout.report:
        return False
    dropped, _ = layout.report.pop(0)
    layout.dropped_sections.append(dropped)
    return True


def _drop_top(layout: _Layout) -> bool:
    if not layout.top:
        return False
    dropped, _ = layout.top.pop(0)
    layout.dropped_sections.append(dropped)
    return True


def _drop_visible_findings(layout: _Layout) -> bool:
    if not layout.findings_on:
        return False
    layout.findings_on = False
    return True


_SHRINK_STEPS: tuple[Callable[[_Layout], bool], ...] = (
    _drop_assessment,
    _shorten_discussion,
    _drop_all_findings,
    _drop_synthesis,
    _drop_report,
    _drop_top,
    _drop_visible_findings,  # only when the protected head alone does not fit
)


def _layout(advisory: Advisory, options: CommentOptions, repo: str | None) -> _Layout:
    full = options.comment == "full"
    discussion = _discussion_lines(advisory) if full else []
    seen: set[str] = set()  # what earlier assessments said, in their words
    assessments = [
        _assessment_details(advisory, s, seen)
        for s in advisory.seats
        if full and s.assessment is not None
    ]
    layout = _Layout(
        advisory=advisory,
        options=options,
        assessments=assessments,
        discussion=discussion,
        all_findings=_all_findings(advisory) if full else "",
        synthesis=_synthesis(advisory) if full else "",
        top=[(s.dropped, t) for s in SECTIONS if full and (t := s.top(advisory))],
        report=[(s.dropped, r) for s in SECTIONS if full and (r := s.report(advisory))],
        discussion_shown=len(discussion),
        cost=_cost(advisory) if full else "",
        repo=repo,
    )
    for scale in _SCALES:  # the item caps shrink until the visible part is one screen
        layout.scale = scale
        if len("\n\n".join(layout.visible())) <= VISIBLE_TARGET:
            break
    return layout


def render_comment(
    advisory: Advisory,
    *,
    max_chars: int = 65_000,
    repo: str | None = None,
    options: CommentOptions | None = None,
    transcript_url: str | None = None,
) -> str:
    """The sticky comment: starts with `COMMENT_MARKER`, never longer than `max_chars`.

    `repo` ("OWNER/NAME") is the repository the comment is posted on: links into it stay
    links, every other link is shown as text (all of them when `repo` is None). `options`:
    the repository's `comment`, `max_findings`, `min_severity` (and gate, for the verdict
    line's check conclusion). `transcript_url`: the deliberation's transcript page (ours,
    from COUNCIL_PUBLIC_URL), linked on the comment's last line."""
    link = _transcript_link(transcript_url)
    max_chars -= len(link)
    layout = _layout(advisory, options or CommentOptions(), repo)
    text = layout.compose()
    for step in _SHRINK_STEPS:
        while len(text) > max_chars and step(layout):
            text = layout.compose()
    if len(text) > max_chars:
        # Only reachable with an absurdly small max_chars: cut, keeping the marker.
        text = text[: max_chars - 2].rstrip() + "…\n"
    return text + link


def _transcript_link(url: str | None) -> str:
    """The "Full transcript" line, added after the links are defused (the URL is ours, not
    a model's); nothing for a URL that is not plain http(s)."""
    if not url or not url.startswith(("https://", "http://")):
        return ""
    if any(ch.isspace() or ch in "()<>[]`\"'" for ch in url):
        return ""
    return f"\n[Full transcript]({url})\n"
