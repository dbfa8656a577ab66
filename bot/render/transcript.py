"""A deliberation's whole record as one HTML page, and the usage figures as another.

`transcript_html` renders everything the store holds of one deliberation: the header
(repository, PR, head, protocol, resolution, conclusion, times, cost and tokens), the
seats, each seat's assessment, the discussion rounds, the judge's decisions, the votes,
the synthesis, a debate's or a strategies run's report, the findings with their anchors
(`path:line`), and the ledger's events with the time between them. `stats_html` renders
`usage_stats`' figures (bot/store/history.py).

Each page is complete and self-contained: HTML5, inline CSS, no script, nothing loaded
from elsewhere. Every string a model or a person wrote is untrusted: each one goes through
`_e` (invisible characters dropped, then HTML-escaped), so nothing in it becomes markup.

Render is a pure unit importing only the council's types (ARCHITECTURE.md), so the store's
records are taken by their shape (`TranscriptRecord`, `StatsView`, ...): pass a
`bot.store.records.DeliberationRecord` and a `bot.store.history.UsageStats`.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, datetime
from itertools import pairwise
from typing import Protocol

from pydantic import BaseModel

from bot.council.advisory import OUTSIDE_DIFF, Advisory, MergedFinding, SeatReport, format_location
from bot.council.ledger import EventKind, LedgerEvent
from bot.council.schemas import Assessment
from bot.render.usage import estimated_note
from bot.safety import strip_invisible

__all__ = [
    "DayCostView",
    "PersonaStatsView",
    "RepoCostView",
    "StatsView",
    "TranscriptRecord",
    "anchor",
    "stats_html",
    "transcript_html",
]


class TranscriptRecord(Protocol):
    """What the page reads of a deliberation record (`DeliberationRecord` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def repo(self) -> str: ...
    @property
    def pr_number(self) -> int | None: ...
    @property
    def head_sha(self) -> str: ...
    @property
    def trigger(self) -> str: ...
    @property
    def protocol(self) -> str: ...
    @property
    def topic(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def resolution(self) -> str | None: ...
    @property
    def conclusion(self) -> str | None: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def finished_at(self) -> datetime | None: ...


class PersonaStatsView(Protocol):
    @property
    def persona_id(self) -> str: ...
    @property
    def reviews(self) -> int: ...
    @property
    def closed(self) -> int: ...
    @property
    def merged(self) -> int: ...
    @property
    def findings_raised(self) -> int: ...
    @property
    def findings_addressed(self) -> int: ...
    @property
    def outcomes(self) -> int: ...
    @property
    def held_up(self) -> int: ...


class DayCostView(Protocol):
    @property
    def day(self) -> date: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def deliberations(self) -> int: ...


class RepoCostView(Protocol):
    @property
    def repo(self) -> str: ...
    @property
    def cost_usd(self) -> float: ...
    @property
    def deliberations(self) -> int: ...


class StatsView(Protocol):
    """What the stats page reads (`bot.store.history.UsageStats` has it)."""

    @property
    def since(self) -> date | None: ...
    @property
    def repos(self) -> list[str] | None: ...
    @property
    def deliberations(self) -> int: ...
    @property
    def total_cost_usd(self) -> float: ...
    @property
    def personas(self) -> Sequence[PersonaStatsView]: ...
    @property
    def cost_by_day(self) -> Sequence[DayCostView]: ...
    @property
    def cost_by_repo(self) -> Sequence[RepoCostView]: ...
    @property
    def protocols(self) -> Mapping[str, int]: ...
    @property
    def resolutions(self) -> Mapping[str, int]: ...
    @property
    def truncated(self) -> bool: ...


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:72rem;
padding:0 1rem;color:#1f2328;background:#fff;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem;
margin-top:2rem}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.92rem}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.88em;
background:#f6f8fa;padding:.05rem .25rem;border-radius:3px}
pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;white-space:pre-wrap}
.sev-critical{color:#a40e26;font-weight:600}.sev-major{color:#bc4c00;font-weight:600}
.muted{color:#59636e}section.seat{border:1px solid #d0d7de;border-radius:6px;
padding:.25rem 1rem;margin:1rem 0}dl.kv dt{font-weight:600}dl.kv dd{margin:0 0 .4rem 1rem}
dl.head{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1.25rem}
dl.head dd{margin:0}
.bar{display:inline-block;height:.7rem;background:#0969da;vertical-align:middle}
"""


def _e(value: object) -> str:
    """Any value as safe HTML text: invisible characters dropped, then escaped."""
    if value is None:
        return ""
    return html.escape(strip_invisible(str(value)), quote=True)


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment is not None else ""


def _usd(amount: float) -> str:
    return f"${amount:,.4f}"


def _ms(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s"


def _table(
    header: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int] = ()
) -> str:
    """A table; `header` is escaped here, the cells are HTML already (escape them first)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _list(items: Iterable[object]) -> str:
    shown = [f"<li>{_e(i)}</li>" for i in items]
    return f"<ul>{''.join(shown)}</ul>" if shown else ""


def _section(title: str, body: str, anchor_id: str) -> str:
    if not body:
        return ""
    return f'<section id="{anchor_id}"><h2>{_e(title)}</h2>{body}</section>'


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def anchor(path: str, start_line: int | None, end_line: int | None = None) -> str:
    """`path:line`, `path:start-end` or `path` (a file-wide finding)."""
    return format_location(path, start_line, end_line, line_prefix="")


# --- the transcript --------------------------------------------------------------------


def transcript_html(
    record: TranscriptRecord,
    advisory: Advisory | None,
    events: Sequence[LedgerEvent],
    *,
    title: str | None = None,
) -> str:
    """The deliberation's whole record as a self-contained HTML page (see the module)."""
    where = f"{record.repo}#{record.pr_number}" if record.pr_number is not None else record.repo
    heading = title or f"Council transcript: {where}"
    parts = [f"<h1>{_e(heading)}</h1>", _header(record, advisory)]
    if advisory is None:
        parts.append('<p class="muted">No advisory is stored for this deliberation.</p>')
    else:
        parts += [
            _section("Seats", _seats_table(advisory), "seats"),
            _section("Assessments", _assessments(advisory), "assessments"),
            _section("Discussion", _discussion(advisory), "discussion"),
            _section("Judge", _judge(advisory), "judge"),
            _section("Votes", _votes(advisory), "votes"),
            _section("Synthesis", _synthesis(advisory), "synthesis"),
            _section("Debate", _report(advisory.debate), "debate"),
            _section("Strategies", _report(advisory.strategies), "strategies"),
            _section("Findings", _findings(advisory), "findings"),
            _section("Notes", _list([*advisory.notes, *advisory.conditions]), "notes"),
        ]
    parts.append(_section("Timings", _timings(events), "timings"))
    return _page(heading, "".join(parts))


def _header(record: TranscriptRecord, advisory: Advisory | None) -> str:
    status = str(getattr(record.status, "value", record.status))
    rows: list[tuple[str, str]] = [
        ("Deliberation", f"<code>{_e(record.id)}</code>"),
        ("Repository", _e(record.repo)),
        ("Pull request", _e(record.pr_number) if record.pr_number is not None else "-"),
        ("Head", f"<code>{_e(record.head_sha)}</code>" if record.head_sha else "-"),
        ("Trigger", _e(record.trigger)),
        ("Protocol", _e(record.protocol)),
        ("Status", _e(status)),
        ("Resolution", _e(record.resolution or (advisory and advisory.resolution.value) or "-")),
        ("Conclusion", _e(record.conclusion or "-")),
        ("Created", _e(_when(record.created_at))),
        ("Finished", _e(_when(record.finished_at)) or "-"),
        ("Topic", _e(record.topic)),
    ]
    if advisory is not None:
        usage = advisory.usage
        cost = _usd(usage.cost_usd or record.cost_usd)
        if usage.unpriced_models:
            cost += " (not counted: " + _e(", ".join(usage.unpriced_models)) + ")"
        rows += [
            ("Confidence", f"{advisory.confidence:.0%}"),
            ("Cost", cost),
            (
                "Tokens",
                f"{usage.tokens:,} ({usage.input_tokens:,} in, {usage.output_tokens:,} out, "
                f"{usage.cached_input_tokens:,} cached, {usage.cache_write_tokens:,} cache "
                f"writes, {usage.reasoning_tokens:,} reasoning)"
                + (f"; {_e(note)}" if (note := estimated_note(usage)) else ""),
            ),
            (
                "Calls",
                f"{usage.calls:,}" + (f", {usage.truncated} cut off" if usage.truncated else ""),
            ),
            ("Wall time", _ms(usage.wall_ms)),
        ]
        if advisory.reason:
            rows.append(("Reason", _e(advisory.reason)))
        if advisory.partial:
            rows.append(("Partial", "yes: " + _e(", ".join(advisory.missing_perspectives))))
    else:
        rows.append(("Cost", _usd(record.cost_usd)))
    items = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in rows)
    return f'<section id="header"><dl class="kv head">{items}</dl></section>'


def _seat_name(advisory: Advisory, seat_id: str) -> str:
    seat = advisory.seat(seat_id)
    return f"{seat.label} ({seat.persona_id})" if seat else seat_id


def _seats_table(advisory: Advisory) -> str:
    rows = []
    for s in advisory.seats:
        a, v = s.assessment, s.vote
        rows.append(
            [
                f'<a href="#seat-{_e(s.seat_id)}">{_e(s.label)}</a>',
                _e(s.persona_id) + (f' <span class="muted">{_e(s.persona_name)}</span>'),
                _e(s.division),
                f"<code>{_e(s.model)}</code>",
                _e(s.no_vote or s.state.value) + (f": {_e(s.error)}" if s.error else ""),
                _e(a.verdict) if a else "",
                _e(a.score) if a else "",
                _e(v.vote if v else s.no_vote),
                f"{v.confidence:.0%}" if v else "",
                _e(f"{s.score:.2f}") if s.score is not None else "",
            ]
        )
    header = [
        "seat", "persona", "division", "model", "state",
        "verdict", "score", "vote", "confidence", "board score",
    ]  # fmt: skip
    return _table(header, rows, numeric=(6, 8, 9))


def _assessments(advisory: Advisory) -> str:
    return "".join(_seat_section(advisory, s) for s in advisory.seats)


def _seat_section(advisory: Advisory, seat: SeatReport) -> str:
    head = f"<h3>{_e(seat.label)}: {_e(seat.persona_name or seat.persona_id)}</h3>"
    meta = (
        f'<p class="muted">{_e(seat.persona_id)} &middot; <code>{_e(seat.model)}</code> '
        f"&middot; {_e(seat.no_vote or seat.state.value)}"
        + (f" &middot; lenses: {_e(', '.join(seat.lenses))}" if seat.lenses else "")
        + "</p>"
    )
    body = (
        _assessment(seat.assessment) if seat.assessment else '<p class="muted">No assessment.</p>'
    )
    if seat.unscored_lenses:
        body += f"<p>Not scored: {_e(', '.join(seat.unscored_lenses))}</p>"
    return f'<section class="seat" id="seat-{_e(seat.seat_id)}">{head}{meta}{body}</section>'


def _assessment(a: Assessment) -> str:
    parts = [
        f"<p><strong>{_e(a.verdict)}</strong>, score {_e(a.score)}/10, "
        f"confidence {_e(a.confidence)}%</p>",
        f"<p>{_e(a.summary)}</p>",
    ]
    if a.lens_scores:
        rows = [
            [_e(ls.lens), _e(ls.score) if ls.score is not None else "not scored", _e(ls.analysis)]
            for ls in a.lens_scores
        ]
        parts.append(_table(["lens", "score", "analysis"], rows, numeric=(1,)))
    if a.findings:
        rows = [
            [
                f'<span class="sev-{_e(f.severity)}">{_e(f.severity)}</span>',
                f"<code>{_e(anchor(f.path, f.start_line, f.end_line))}</code>",
                _e(f.title),
                _e(f.detail)
                + (f"<br><em>Suggestion:</em> {_e(f.suggestion)}" if f.suggestion else ""),
            ]
            for f in a.findings
        ]
        parts.append("<h4>Findings</h4>" + _table(["severity", "where", "title", "detail"], rows))
    for label, items in (
        ("Red flags", a.red_flags),
        ("Concerns", a.concerns),
        ("Recommendations", a.recommendations),
        ("Merge conditions", a.merge_conditions),
    ):
        if items:
            parts.append(f"<h4>{_e(label)}</h4>{_list(items)}")
    if a.questions:
        qs = [f"{q.to_member + ': ' if q.to_member else ''}{q.question}" for q in a.questions]
        parts.append(f"<h4>Questions</h4>{_list(qs)}")
    return "".join(parts)


def _discussion(advisory: Advisory) -> str:
    parts = []
    for r in advisory.rounds:
        rows = [
            [
                _e(_seat_name(advisory, m.seat_id)),
                _e(m.message.type),
                _e(m.message.to_member or ""),
                _e(m.message.point),
                _e(m.message.reasoning),
            ]
            for m in r.messages
        ]
        parts.append(
            f"<h3>Round {r.round}</h3>"
            + (_table(["from", "type", "to", "point", "reasoning"], rows) if rows else "")
        )
    if advisory.shifts:
        rows = [
            [
                _e(_seat_name(advisory, s.seat_id)),
                _e(s.round),
                _e(s.original_position),
                _e(s.new_position),
                _e(s.changed_by),
            ]
            for s in advisory.shifts
        ]
        parts.append("<h3>Shifts</h3>" + _table(["seat", "round", "from", "to", "why"], rows))
    if advisory.peer_ranking:
        ranked = [_seat_name(advisory, s) for s in advisory.peer_ranking]
        parts.append(
            "<h3>Peer ranking</h3><ol>" + "".join(f"<li>{_e(n)}</li>" for n in ranked) + "</ol>"
        )
    return "".join(parts)


def _judge(advisory: Advisory) -> str:
    parts = []
    for j in advisory.judge_decisions:
        d = j.decision
        parts.append(f"<h3>Cycle {j.cycle}: {_e(d.decision)}</h3>" + _report(d))
    return "".join(parts)


def _votes(advisory: Advisory) -> str:
    rows = [_vote_row(advisory, s) for s in advisory.seats if s.vote is not None or s.no_vote]
    if not rows:
        return ""
    tally = f"<p>{_e(advisory.vote_counts().text())}</p>"
    return tally + _table(["seat", "vote", "confidence", "rationale", "conditions"], rows, (2,))


def _vote_row(advisory: Advisory, s: SeatReport) -> list[str]:
    """A vote, or "no vote (timed out)" for one that did not come (no seat abstains)."""
    v, seat = s.vote, _e(_seat_name(advisory, s.seat_id))
    if v is None:
        return [seat, _e(s.no_vote), "", "", ""]
    return [seat, _e(v.vote), f"{v.confidence:.0%}", _e(v.rationale), _e("; ".join(v.conditions))]


def _synthesis(advisory: Advisory) -> str:
    s = advisory.synthesis
    if s is None:
        return ""
    parts = [f"<p><strong>{_e(s.verdict_sentence)}</strong></p>"]
    if s.consensus:
        parts.append("<h3>Consensus</h3>" + _list(s.consensus))
    if s.divergence:
        items = "".join(f"<li>{_e(d.point)}{_list(d.sides)}</li>" for d in s.divergence)
        parts.append(f"<h3>Divergence</h3><ul>{items}</ul>")
    parts.append(f"<h3>Recommendation</h3><p>{_e(s.recommendation)}</p>")
    if s.action_items:
        parts.append(
            "<h3>Action items</h3><ol>"
            + "".join(f"<li>{_e(i)}</li>" for i in s.action_items)
            + "</ol>"
        )
    if s.conditions:
        parts.append("<h3>Conditions</h3>" + _list(s.conditions))
    if s.tradeoff_map:
        parts.append(
            "<h3>Trade-offs</h3>" + _value([t.model_dump(mode="json") for t in s.tradeoff_map])
        )
    if s.decision_guide:
        rows = [[_e(p.condition), _e(p.path)] for p in s.decision_guide]
        parts.append("<h3>Decision guide</h3>" + _table(["if", "then"], rows))
    return "".join(parts)


def _report(report: BaseModel | None) -> str:
    """A report's fields, simply: each field a term, its value as text, lists, tables."""
    if report is None:
        return ""
    return _value(report.model_dump(mode="json"))


def _value(value: object, depth: int = 0) -> str:
    if depth > 8:
        return _e(value)
    if isinstance(value, dict):
        shown = {k: v for k, v in value.items() if v not in (None, [], {}, "")}
        if not shown:
            return ""
        items = "".join(
            f"<dt>{_e(str(k).replace('_', ' '))}</dt><dd>{_value(v, depth + 1)}</dd>"
            for k, v in shown.items()
        )
        return f'<dl class="kv">{items}</dl>'
    if isinstance(value, list):
        if all(not isinstance(v, dict | list) for v in value):
            return _list(value)
        return "<ol>" + "".join(f"<li>{_value(v, depth + 1)}</li>" for v in value) + "</ol>"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return _e(value)


def _findings(advisory: Advisory) -> str:
    if not advisory.findings:
        return '<p class="muted">No findings.</p>'
    rows = [_finding_row(advisory, n, f) for n, f in enumerate(advisory.findings, 1)]
    return _table(["#", "severity", "where", "title", "detail", "raised by"], rows, (0,))


def _finding_row(advisory: Advisory, n: int, f: MergedFinding) -> list[str]:
    detail = _e(f.detail)
    if f.suggestion:
        detail += f"<br><em>Suggestion:</em> {_e(f.suggestion)}"
    if f.replacement:
        detail += f"<pre><code>{_e(f.replacement)}</code></pre>"
    return [
        f'<a id="finding-{n}" href="#finding-{n}">{n}</a>',
        f'<span class="sev-{_e(f.severity)}">{_e(f.severity)}</span>',
        f"<code>{_e(anchor(f.path, f.start_line, f.end_line))}</code>"
        + (f" {_e(OUTSIDE_DIFF)}" if f.outside_diff and f.start_line is not None else ""),
        _e(f.title),
        detail,
        _e(", ".join(_seat_name(advisory, s) for s in f.raised_by)) + f" ({f.consensus})",
    ]


# The events that start a phase (the time to the next of them is the phase's).
_PHASES = frozenset(
    {
        EventKind.REQUESTED,
        EventKind.RESUMED,
        EventKind.CONVENED,
        EventKind.ROUND_ENDED,
        EventKind.JUDGED,
        EventKind.RESOLVED,
        EventKind.SYNTHESIZED,
        EventKind.PUBLISH_DEFERRED,
        EventKind.PUBLISHED,
        EventKind.FAILED,
        EventKind.CANCELLED,
    }
)


def _timings(events: Sequence[LedgerEvent]) -> str:
    if not events:
        return '<p class="muted">The ledger holds no event.</p>'
    start = events[0].created_at
    rows = []
    previous = start
    for event in events:
        rows.append(
            [
                _e(event.seq),
                _e(event.kind.value),
                f"<code>{_e(event.step)}</code>" if event.step else "",
                _e(event.created_at.strftime("%H:%M:%S.%f")[:-3]),
                _ms(_between(previous, event.created_at)),
                _ms(_between(start, event.created_at)),
                _e(_cost_of(event)),
            ]
        )
        previous = event.created_at
    table = _table(
        ["seq", "kind", "step", "at (UTC)", "since previous", "since start", "cost"],
        rows,
        numeric=(0, 4, 5, 6),
    )
    phases = [e for e in events if e.kind in _PHASES]
    phase_rows = [
        [_e(a.kind.value), _e(b.kind.value), _ms(_between(a.created_at, b.created_at))]
        for a, b in pairwise(phases)
    ]
    total = f"<p>{len(events)} events over {_ms(_between(start, events[-1].created_at))}.</p>"
    phase_table = (
        "<h3>Phases</h3>" + _table(["from", "to", "took"], phase_rows, (2,)) if phase_rows else ""
    )
    return total + phase_table + "<h3>Events</h3>" + table


def _between(a: datetime, b: datetime) -> float:
    return max((b - a).total_seconds() * 1000, 0.0)


def _cost_of(event: LedgerEvent) -> str:
    cost = event.payload.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost:
        return _usd(float(cost))
    return ""


# --- the stats page --------------------------------------------------------------------


def stats_html(stats: StatsView, *, title: str = "Council stats") -> str:
    """The usage figures as a self-contained HTML page."""
    scope = ", ".join(stats.repos) if stats.repos is not None else "every repository"
    since = f" since {stats.since.isoformat()}" if stats.since else ""
    parts = [
        f"<h1>{_e(title)}</h1>",
        f"<p>{stats.deliberations:,} deliberations of {_e(scope or 'no repository')}{_e(since)}, "
        f"{_usd(stats.total_cost_usd)} in all.</p>",
    ]
    if stats.truncated:
        parts.append('<p class="muted">Only the newest deliberations were counted.</p>')
    persona_rows = [
        [
            _e(p.persona_id),
            _e(p.reviews),
            _e(p.closed),
            _e(p.merged),
            _e(p.findings_raised),
            _e(p.findings_addressed),
            _e(f"{p.held_up}/{p.outcomes}") if p.outcomes else "",
        ]
        for p in stats.personas
    ]
    header = ["persona", "reviews", "closed", "merged", "findings", "addressed", "held up"]
    parts.append(_section("Personas", _table(header, persona_rows, (1, 2, 3, 4, 5, 6)), "personas"))
    top = max((d.cost_usd for d in stats.cost_by_day), default=0.0)
    day_rows = [
        [
            _e(d.day.isoformat()),
            _usd(d.cost_usd),
            _e(d.deliberations),
            f'<span class="bar" style="width:{_width(d.cost_usd, top)}px"></span>',
        ]
        for d in stats.cost_by_day
    ]
    parts.append(
        _section(
            "Cost by day", _table(["day", "cost", "deliberations", ""], day_rows, (1, 2)), "by-day"
        )
    )
    repo_rows = [[_e(r.repo), _usd(r.cost_usd), _e(r.deliberations)] for r in stats.cost_by_repo]
    parts.append(
        _section(
            "Cost by repository",
            _table(["repository", "cost", "deliberations"], repo_rows, (1, 2)),
            "by-repo",
        )
    )
    for name, counts, anchor_id in (
        ("Protocols", stats.protocols, "protocols"),
        ("Resolutions", stats.resolutions, "resolutions"),
    ):
        rows = [[_e(k), _e(v)] for k, v in counts.items()]
        parts.append(
            _section(name, _table([name[:-1].lower(), "deliberations"], rows, (1,)), anchor_id)
        )
    return _page(title, "".join(parts))


def _width(value: float, top: float) -> int:
    return round(240 * value / top) if top > 0 else 0
