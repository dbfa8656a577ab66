"""A deliberation's whole record as one HTML page, and the usage figures as another.

`transcript_html` renders everything the store holds of one deliberation: the header
(repository, PR, head, protocol, resolution, conclusion, times, cost and tokens), the
seats, each seat's assessment, the discussion rounds, the judge's decisions, the votes,
the synthesis, a debate's or a strategies run's report, the findings with their anchors
(`path:line`), and the ledger's events with the time between them. `stats_html` renders
`usage_stats`' figures (bot/store/history.py).

Each page is complete and self-contained: HTML5, inline CSS, no script, nothing loaded
from elsewhere. The pages are Jinja2 templates (bot/render/templates/) rendered with
autoescaping: every value a template prints is untrusted text, so `_text` - the
environment's finalize, run on each value before the escaping - drops its invisible
characters and escapes it (`html.escape`, quotes too), and nothing in it becomes markup.
In the templates a line break and the indentation after it are layout, not output.

Render is a pure unit importing only the council's types (docs/architecture.md), so the store's
records are taken by their shape (`TranscriptRecord`, `StatsView`, ...): pass a
`bot.store.deliberations.DeliberationRecord` and a `bot.store.history.UsageStats`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from itertools import pairwise
from typing import Any, Protocol

from jinja2 import Environment, PackageLoader, StrictUndefined
from jinja2.ext import Extension
from markupsafe import Markup
from pydantic import BaseModel

from bot.council.advisory import OUTSIDE_DIFF, Advisory
from bot.council.ledger import EventKind, LedgerEvent
from bot.render.blocks import place
from bot.render.usage import estimated_note
from bot.safety import strip_invisible

__all__ = [
    "DayCostView",
    "PersonaStatsView",
    "RepoCostView",
    "StatsView",
    "TranscriptRecord",
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


def transcript_html(
    record: TranscriptRecord,
    advisory: Advisory | None,
    events: Sequence[LedgerEvent],
    *,
    title: str | None = None,
) -> str:
    """The deliberation's whole record as a self-contained HTML page (see the module)."""
    where = f"{record.repo}#{record.pr_number}" if record.pr_number is not None else record.repo
    page = _PAGES.get_template("transcript.html.j2")
    return page.render(
        title=title or f"Council transcript: {where}",
        record=record,
        advisory=advisory,
        events=events,
    )


def stats_html(stats: StatsView, *, title: str = "Council stats") -> str:
    """The usage figures as a self-contained HTML page."""
    return _PAGES.get_template("stats.html.j2").render(title=title, stats=stats)


# --- the templates' environment --------------------------------------------------------


class _LayoutBreaks(Extension):
    """A template's line breaks and the indentation after them are layout: dropped before
    the template is read (the stylesheet, not a template of markup, is left as it is)."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return _LAYOUT.sub("", source) if name and name.endswith(".j2") else source


_LAYOUT = re.compile(r"\n[ \t]*")


def _text(value: object) -> Markup:
    """Any value a template prints, as safe HTML text: invisible characters dropped, then
    escaped; markup the templates made (a macro's output) passes as it is."""
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    return Markup(html.escape(strip_invisible(str(value)), quote=True))


def _fields(report: BaseModel) -> Any:
    return report.model_dump(mode="json")


def _filled(fields: dict[str, object]) -> dict[str, object]:
    """A mapping's fields that hold something (no None, empty list or mapping, "")."""
    return {k: v for k, v in fields.items() if v not in (None, [], {}, "")}


def _flat(items: list[object]) -> bool:
    return all(not isinstance(v, dict | list) for v in items)


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment is not None else ""


def _usd(amount: float) -> str:
    return f"${amount:,.4f}"


def _ms(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{ms / 1000:.1f} s"


def _token_counts(usage: Any) -> str:
    return (
        f"{usage.tokens:,} ({usage.input_tokens:,} in, {usage.output_tokens:,} out, "
        f"{usage.cached_input_tokens:,} cached, {usage.cache_write_tokens:,} cache "
        f"writes, {usage.reasoning_tokens:,} reasoning)"
    )


def _seat_name(advisory: Advisory, seat_id: str) -> str:
    seat = advisory.seat(seat_id)
    return f"{seat.label} ({seat.persona_id})" if seat else seat_id


def _seat_names(advisory: Advisory, seat_ids: Sequence[str]) -> list[str]:
    return [_seat_name(advisory, s) for s in seat_ids]


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


def _between(a: datetime, b: datetime) -> float:
    return max((b - a).total_seconds() * 1000, 0.0)


def _cost_of(event: LedgerEvent) -> str:
    cost = event.payload.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost:
        return _usd(float(cost))
    return ""


def _with_bars(days: Sequence[DayCostView]) -> list[tuple[DayCostView, int]]:
    """Each day with its bar's width in pixels (the costliest day's is 240)."""
    top = max((d.cost_usd for d in days), default=0.0)
    return [(d, round(240 * d.cost_usd / top) if top > 0 else 0) for d in days]


_PAGES = Environment(
    loader=PackageLoader("bot.render", "templates"),
    autoescape=True,
    finalize=_text,
    undefined=StrictUndefined,
    keep_trailing_newline=True,
    extensions=[_LayoutBreaks],
)
_PAGES.filters.update(
    fields=_fields,
    filled=_filled,
    term=lambda key: str(key).replace("_", " "),
    percent=lambda share: f"{share:.0%}",
    hundredths=lambda number: f"{number:.2f}",
    thousands=lambda count: f"{count:,}",
    usd=_usd,
    ms=_ms,
    when=_when,
    clock=lambda moment: moment.strftime("%H:%M:%S.%f")[:-3],
    plain=lambda member: str(getattr(member, "value", member)),
    token_counts=_token_counts,
    cost=_cost_of,
    pairs=lambda items: list(pairwise(items)),
    with_bars=_with_bars,
)
_PAGES.tests.update(
    dict=lambda value: isinstance(value, dict),
    list=lambda value: isinstance(value, list),
    flat=_flat,
    voting=lambda seat: seat.vote is not None or bool(seat.no_vote),
    phase=lambda event: event.kind in _PHASES,
)
_PAGES.globals.update(
    place=place,
    seat_name=_seat_name,
    seat_names=_seat_names,
    estimated_note=estimated_note,
    between=_between,
    OUTSIDE_DIFF=OUTSIDE_DIFF,
)
