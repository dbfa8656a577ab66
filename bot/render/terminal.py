"""The advisory for a person at a terminal (`council review --format text`).

The PR comment (`bot.render.markdown`) is written for GitHub: a hidden marker, `<details>`
blocks, Markdown tables. None of that reads well in a terminal, so this renders the same
advisory as rich renderables (headings, aligned tables, no pipes, no HTML):

verdict line (resolution, confidence, seats), partial-advisory banner, the chair's verdict
sentence, why and topic; the findings table (red flags first, then the merged findings);
Consensus, Divergence, Recommendation, Tradeoff map, Action items, Conditions; the votes;
each seat's assessment in one line; peer ranking and notes; the cost.

Pure: an Advisory in, renderables or plain text out. Model-written text is untrusted: control
characters (terminal escape sequences among them), bidi overrides and invisible characters
are removed (`bot.safety.strip_invisible`), and it is always wrapped in `Text`, so rich
markup in it is printed, never interpreted.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich import box
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from bot.council.advisory import Advisory, MergedFinding, Resolution, SeatReport, TopFinding
from bot.council.places import also_at_text
from bot.render.blocks import ITEM, clip, pct, place, plain
from bot.render.findings import SEVERITY_EMOJI
from bot.render.protocol_sections import SECTIONS
from bot.render.usage import cost_text, usage_notes
from bot.render.verdict import (
    RESOLUTION_EMOJI,
    RESOLUTION_TITLE,
    STATE_TEXT,
    missing_perspectives,
    seats_phrase,
)
from bot.safety import strip_invisible

__all__ = ["render_advisory", "render_text", "summary_line", "verdict_line"]

_RESOLUTION_STYLE: dict[Resolution, str] = {
    Resolution.APPROVED: "bold green",
    Resolution.APPROVED_WITH_CONDITIONS: "bold yellow",
    Resolution.ESCALATE: "bold magenta",
    Resolution.REJECTED: "bold red",
}
_SEVERITY_STYLE = {"critical": "bold red", "major": "red", "minor": "yellow", "nit": "dim"}
_HEADING = "bold underline"
_TITLE = 200
_CELL = 300
_PROSE = 4_000
_DETAIL = 160


# --- untrusted text -------------------------------------------------------------------------


def _path(path: str | None) -> str | None:
    """A finding's path on one line (None for none: `place` shows "-")."""
    return plain(path, _CELL) if path else None


def _prose(text: str, limit: int = _PROSE) -> str:
    lines = (line.rstrip() for line in clip(strip_invisible(text), limit).splitlines())
    return "\n".join(lines).strip()


# --- the pieces -----------------------------------------------------------------------------


def verdict_line(advisory: Advisory) -> str:
    """The first line: the resolution, then confidence (for a verdict), seats and protocol."""
    r = advisory.resolution
    facts = [f"{RESOLUTION_EMOJI[r]} {RESOLUTION_TITLE[r]}"]
    if r.is_verdict:
        facts.append(f"confidence {pct(advisory.confidence)}")
    facts += [seats_phrase(advisory), f"protocol {advisory.protocol}"]
    return " · ".join(facts)


def summary_line(advisory: Advisory) -> str:
    """One line for stderr after a run: `APPROVED · 5/5 seats · $0.0412 · 38.1 s`."""
    u = advisory.usage
    valid, total = len(advisory.valid_seats()), len(advisory.seats)
    cost = cost_text(u)
    cost = f"cost {cost}" if cost.startswith("unknown") else cost
    return (
        f"{advisory.resolution.value} · {valid}/{total} seats · {strip_invisible(cost)} · "
        f"{u.wall_ms / 1000:.1f} s"
    )


def _names(advisory: Advisory) -> dict[str, str]:
    """Seat id -> what a person knows the seat by: its persona's name, or the anonymized
    label where personas repeat (the `council` protocol's neutral members)."""
    counts: dict[str, int] = {}
    for s in advisory.seats:
        counts[s.persona_name] = counts.get(s.persona_name, 0) + 1
    return {
        s.seat_id: plain(s.persona_name, 100) if counts[s.persona_name] == 1 else s.label
        for s in advisory.seats
    }


def _raised_by(advisory: Advisory, names: dict[str, str], seat_ids: Sequence[str]) -> str:
    if not seat_ids:
        return "-"
    who = ", ".join(names.get(s, advisory.label_for(s)) for s in seat_ids)
    return f"{len(seat_ids)} seat{'' if len(seat_ids) == 1 else 's'} ({who})"


def _heading(title: str) -> Text:
    return Text(f"\n{title}", style=_HEADING)


def _table(*columns: str, whole: Sequence[str] = ()) -> Table:
    """A table without pipes; the `whole` columns are not wrapped while they fit, the
    others keep room for a few words."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for column in columns:
        wrapped = column not in whole
        table.add_column(
            column, overflow="fold", no_wrap=not wrapped, min_width=8 if wrapped else None
        )
    return table


def _head(advisory: Advisory) -> list[RenderableType]:
    r = advisory.resolution
    parts: list[RenderableType] = [
        Text(verdict_line(advisory), style=_RESOLUTION_STYLE.get(r, "bold"))
    ]
    lost = advisory.lost_seats()
    if (advisory.partial or lost) and r is not Resolution.NO_QUORUM:
        valid, total = len(advisory.valid_seats()), len(advisory.seats)
        missing = ", ".join(plain(m, 300) for m in missing_perspectives(advisory)) or "unknown"
        parts.append(
            Text(
                f"Partial advisory ({valid} of {total} seats). Missing perspectives: {missing}. "
                "This advisory does not guess what they would have said.",
                style="yellow",
            )
        )
    if advisory.synthesis and advisory.synthesis.verdict_sentence.strip():
        parts.append(Text(plain(advisory.synthesis.verdict_sentence, 500), style="italic"))
    if advisory.reason:
        parts.append(Text.assemble(("Why: ", "bold"), plain(advisory.reason)))
    if advisory.topic.strip():
        parts.append(Text.assemble(("Topic: ", "bold"), plain(advisory.topic, 300)))
    return parts


def _seat_states(advisory: Advisory) -> list[RenderableType]:
    table = _table("Seat", "Persona", "Model", "State", "Error", whole=("Seat", "Model", "State"))
    for s in advisory.seats:
        table.add_row(
            s.label,
            Text(plain(s.persona_name, 100)),
            Text(plain(s.model, 100)),
            s.no_vote or STATE_TEXT[s.state],
            Text(plain(s.error, _CELL)),
        )
    return [_heading("Seats"), table]


def _severity(severity: str) -> Text:
    return Text(f"{SEVERITY_EMOJI[severity]} {severity}", style=_SEVERITY_STYLE[severity])


def _flag_row(advisory: Advisory, names: dict[str, str], item: TopFinding) -> list[Text]:
    return [
        Text("🚩 red flag", style="bold red"),
        Text(place(_path(item.path), item.start_line, item.end_line)),
        Text(plain(item.title, _TITLE), style="bold"),
        Text(_raised_by(advisory, names, item.raised_by)),
    ]


def _finding_row(advisory: Advisory, names: dict[str, str], f: MergedFinding) -> list[Text]:
    title = Text(plain(f.title, _TITLE), style="bold")
    detail = plain(f.detail, _DETAIL)
    if detail:
        title.append(f"\n{detail}", style="dim")
    where = Text(place(_path(f.path), f.start_line, f.end_line, f.outside_diff))
    if f.also_at:  # the same issue elsewhere (bot/council/places.py), in the same form
        where.append(f"\n{plain(also_at_text(f, line_prefix=''), _CELL)}", style="dim")
    return [
        _severity(f.severity),
        where,
        title,
        Text(_raised_by(advisory, names, f.raised_by)),
    ]


def _findings(advisory: Advisory, names: dict[str, str]) -> list[RenderableType]:
    flags = [t for t in advisory.top_findings if t.kind == "red_flag"]
    if not (flags or advisory.findings):
        return []
    table = _table("Severity", "Location", "Finding", "Raised by", whole=("Severity", "Location"))
    for flag in flags:
        table.add_row(*_flag_row(advisory, names, flag))
    for finding in advisory.findings:
        table.add_row(*_finding_row(advisory, names, finding))
    return [_heading("Findings"), table]


def _bullets(items: Sequence[str], limit: int = ITEM) -> list[RenderableType]:
    return [Padding(Text(f"- {plain(i, limit)}"), (0, 0, 0, 2)) for i in items if i.strip()]


def _synthesis(advisory: Advisory) -> list[RenderableType]:
    s = advisory.synthesis
    if s is None:
        return []
    parts: list[RenderableType] = []
    consensus = _bullets(s.consensus)
    if consensus:
        parts += [_heading("Consensus"), *consensus]
    if s.divergence:
        parts.append(_heading("Divergence"))
        for d in s.divergence:
            parts.append(Padding(Text(f"- {plain(d.point, 300)}", style="bold"), (0, 0, 0, 2)))
            parts += [
                Padding(Text(f"- {plain(side)}"), (0, 0, 0, 4)) for side in d.sides if side.strip()
            ]
    if s.recommendation.strip():
        parts += [_heading("Recommendation"), Padding(Text(_prose(s.recommendation)), (0, 2))]
    if s.tradeoff_map:
        table = _table("Dimension", "Option", "Pro", "Con")
        for dim in s.tradeoff_map:
            for i, opt in enumerate(dim.options):
                table.add_row(
                    Text(plain(dim.dimension, 100) if i == 0 else ""),
                    Text(plain(opt.option, 100)),
                    Text(plain(opt.pro, _CELL)),
                    Text(plain(opt.con, _CELL)),
                )
        parts += [_heading("Tradeoff map"), table]
    items = [a for a in s.action_items if a.strip()]
    if items:
        parts.append(_heading("Action items"))
        parts += [Padding(Text(f"{n}. {plain(a)}"), (0, 0, 0, 2)) for n, a in enumerate(items, 1)]
    return parts


def _conditions(advisory: Advisory) -> list[RenderableType]:
    bullets = _bullets(advisory.conditions)
    return [_heading("Conditions"), *bullets] if bullets else []


def _vote_cells(seat: SeatReport) -> tuple[str, str, str]:
    if seat.vote is not None:
        v = seat.vote
        return v.vote, pct(v.confidence), plain("; ".join(v.conditions), _CELL)
    if seat.no_vote:  # "no vote (timed out)": never an abstention
        return seat.no_vote, "-", ""
    if not seat.is_valid or seat.assessment is None:
        return STATE_TEXT[seat.state], "-", ""
    a = seat.assessment
    condition = "; ".join(a.concerns) if a.verdict == "CONCERNS" else ""
    return a.verdict, f"{a.confidence}%", plain(condition, _CELL)


def _votes(advisory: Advisory) -> list[RenderableType]:
    """Seat (its persona, then its anonymized label), model, vote, confidence, condition."""
    if not advisory.seats:
        return []
    voted = any(s.vote is not None or s.no_vote for s in advisory.seats)
    header = "Vote" if voted else "Verdict"
    table = _table(
        "Seat",
        "Model",
        header,
        "Confidence",
        "Condition",
        whole=("Model", header, "Confidence"),
    )
    for s in advisory.seats:
        vote, confidence, condition = _vote_cells(s)
        seat = Text(plain(s.persona_name, 100))
        seat.append(f" ({s.label})", style="dim")
        table.add_row(seat, Text(plain(s.model, 100)), vote, confidence, Text(condition))
    return [_heading("Votes" if voted else "Verdicts by seat"), table]


def _assessments(advisory: Advisory, names: dict[str, str]) -> list[RenderableType]:
    lines: list[RenderableType] = []
    for s in advisory.seats:
        a = s.assessment
        if a is None:
            continue
        line = Text("- ")
        line.append(f"{names[s.seat_id]} ({s.label})", style="bold")
        line.append(f": {a.verdict} {a.score}/10. {plain(a.summary, 600)}")
        lines.append(Padding(line, (0, 0, 0, 2)))
        if s.unscored_lenses:
            unscored = plain(", ".join(s.unscored_lenses), 300)
            lines.append(Padding(Text(f"Not scored: {unscored}", style="dim"), (0, 0, 0, 4)))
    return [_heading("Assessments"), *lines] if lines else []


def _extras(advisory: Advisory) -> list[RenderableType]:
    parts: list[RenderableType] = []
    if advisory.peer_ranking:
        ranking = " > ".join(advisory.label_for(s) for s in advisory.peer_ranking)
        parts.append(Text.assemble(("\nPeer ranking", "bold"), f" (best first): {ranking}"))
    notes = [n for n in advisory.notes if n.strip()]
    if notes:
        parts.append(Text(""))
        parts += [Text(f"Note: {plain(n, 500)}", style="dim") for n in notes]
    return parts


def _cost(advisory: Advisory) -> list[RenderableType]:
    u = advisory.usage
    facts = [
        strip_invisible(cost_text(u)),
        f"{u.calls} call{'' if u.calls == 1 else 's'}",
        f"{u.input_tokens:,} input tokens (+{u.cached_input_tokens:,} cached, "
        f"{u.cache_write_tokens:,} cache writes)",
        f"{u.output_tokens:,} output tokens",
        f"{u.wall_ms / 1000:.1f} s",
        *usage_notes(u),
    ]
    return [Text.assemble(("\nCost: ", "bold"), " · ".join(facts))]


# --- layout -------------------------------------------------------------------------------


def render_advisory(advisory: Advisory) -> list[RenderableType]:
    """The advisory as rich renderables, in reading order; the verdict line first."""
    names = _names(advisory)
    parts = _head(advisory)
    if advisory.resolution in (Resolution.NO_QUORUM, Resolution.FAILED) and advisory.seats:
        parts += _seat_states(advisory)
    if advisory.resolution is Resolution.COST_LIMIT:
        parts.append(Text("What the council gathered before the limit:", style="italic"))
    parts += _findings(advisory, names)
    parts += _synthesis(advisory)
    parts += _conditions(advisory)
    parts += _votes(advisory)
    parts += _assessments(advisory, names)
    # Each protocol's report, last registered first (the strategies' before the debate's).
    parts += [Text(line) for s in reversed(SECTIONS) for line in s.terminal(advisory)]
    parts += _extras(advisory)
    parts += _cost(advisory)
    return parts


def render_text(advisory: Advisory, *, width: int = 100) -> str:
    """The advisory as plain text (no colour, no escape codes), `width` columns wide."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
        legacy_windows=False,
        highlight=False,
        emoji=False,
    )
    for part in render_advisory(advisory):
        console.print(part)
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    return "\n".join(lines).strip("\n") + "\n"
