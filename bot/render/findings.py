"""The findings as the comment shows them: the visible table (red flags first, then each
point once - merged findings that say the same thing in other words are one row with every
seat that raised them - up to `max_findings` at or above `min_severity`, "N more" pointing
to the full list), the collapsed list of all findings, and the top findings' table the
check run's summary shows."""

from __future__ import annotations

from collections.abc import Sequence

from bot.council.advisory import SEVERITY_ORDER, Advisory, MergedFinding, TopFinding
from bot.council.places import also_at_text
from bot.council.schemas import Severity
from bot.render.blocks import (
    CELL,
    SECTION_CAPS,
    capped,
    cell,
    clip,
    count,
    details,
    inline,
    norm,
    table,
)
from bot.render.verdict import raised_by, raised_short

__all__ = ["SEVERITY_EMOJI", "all_findings", "top_findings_table", "visible_findings"]

SEVERITY_EMOJI = {"critical": "🔴", "major": "🟠", "minor": "🟡", "nit": "⚪"}
_TITLE = 200


def _top_row(advisory: Advisory, item: TopFinding) -> list[str]:
    if item.kind == "red_flag":
        severity = "🚩 red flag"
    else:
        severity = f"{SEVERITY_EMOJI[item.severity or 'critical']} {item.severity}"
    return [
        severity,
        cell(item.location(), CELL) if item.path else "-",
        cell(item.title, _TITLE),
        cell(raised_by(advisory, item.raised_by)),
    ]


def top_findings_table(advisory: Advisory, limit: int | None = None) -> str:
    """The advisory's top findings as a table (the check run's summary shows it)."""
    items = advisory.top_findings
    shown = items if limit is None else items[:limit]
    rows = [_top_row(advisory, i) for i in shown]
    text = "### Top findings\n\n" + table(["Severity", "Location", "Title", "Raised by"], rows)
    if len(items) > len(shown):
        text += f"\n\n…and {len(items) - len(shown)} more."
    return text


def _listed(advisory: Advisory, min_severity: Severity) -> list[int]:
    """Indices (into `advisory.findings`) of the findings at or above `min_severity`."""
    floor = SEVERITY_ORDER[min_severity]
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
        and norm(_first_sentence(a.detail, 10_000)) == norm(_first_sentence(b.detail, 10_000))
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


def visible_findings(
    advisory: Advisory,
    caps: dict[str, int],
    *,
    max_findings: int,
    min_severity: Severity,
    compact: bool,
) -> str:
    """The visible table: red flags, then the listed findings; "" for none. `compact`: the
    rest is in the check run, not below."""
    flags = _red_flags(advisory)
    groups = _grouped(advisory, _listed(advisory, min_severity))
    rows: list[list[str]] = []
    for flag in flags[:max_findings]:
        rows.append(
            [
                "🚩 red flag",
                "-",
                cell(flag.title, caps["title"]),
                raised_short(advisory, flag.raised_by),
            ]
        )
    shown_flags = len(rows)
    room = max(0, max_findings - shown_flags)
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
                cell(raised_short(advisory, seats)),
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
        parts.append(table(["Severity", "Location", "Finding", "Raised by"], rows))
    if more or hidden_flags:
        parts.append(_more(advisory, more, hidden_flags, min_severity, compact=compact))
    return "\n\n".join(parts)


def _more(
    advisory: Advisory, more: int, hidden_flags: int, min_severity: Severity, *, compact: bool
) -> str:
    """The line under the table: how many findings and red flags it leaves out, and where
    they are."""
    floor = SEVERITY_ORDER[min_severity]
    below = sum(1 for f in advisory.findings if SEVERITY_ORDER[f.severity] > floor)
    said = [count(more, "more finding")] if more else []
    if hidden_flags:
        said.append(count(hidden_flags, "more red flag"))
    where = "the check run" if compact else "**All findings** below"
    extra = f", {below} of them below `{min_severity}`" if below and more else ""
    return f"…and {' and '.join(said)}{extra}: see {where}."


def _finding_item(advisory: Advisory, n: int, f: MergedFinding) -> str:
    where = f"`{inline(f.location(), 200)}`"
    if f.also_at:
        where += f" ({inline(also_at_text(f), 400)})"
    line = (
        f"{n}. {SEVERITY_EMOJI[f.severity]} **{f.severity}** · {where} · "
        f"**{inline(f.title, _TITLE)}** ({inline(raised_by(advisory, f.raised_by), 300)})"
    )
    line += f"\n   {inline(f.detail, 900)}"
    if f.suggestion:
        line += f"\n   _Suggestion:_ {inline(f.suggestion, 600)}"
    return line


def all_findings(advisory: Advisory) -> str:
    if not advisory.findings:
        return ""
    items = [_finding_item(advisory, n, f) for n, f in enumerate(advisory.findings, 1)]
    body = capped(items, SECTION_CAPS["findings"], "finding")
    counts = ", ".join(
        f"{sum(1 for f in advisory.findings if f.severity == sev)} {sev}"
        for sev in SEVERITY_ORDER
        if any(f.severity == sev for f in advisory.findings)
    )
    return details(f"All findings ({len(advisory.findings)}: {counts})", body)
