"""The advisory as the sticky PR comment: one screen by default.

The visible part (outside every `<details>`) is what a reader sees without a click, and it
is bounded by caps, not by luck: the verdict lines (`bot.render.verdict`), up to
`max_findings` findings at or above `min_severity` (`bot.render.findings`), the
recommendation, the conditions (at most 5), at most 5 action items and the vote table
(short cells: the conditions themselves are listed once, above). Every item has its own
character cap; should the whole still exceed `VISIBLE_TARGET`, the item caps shrink
(`_SCALES`) until it fits.

Collapsed, each with its own cap (`bot.render.blocks.SECTION_CAPS`): all findings in full
(`bot.render.findings`), then the chair's synthesis, each assessment, the discussion and
the cost (`bot.render.collapsed`). A protocol with a report of its own adds its parts
through its `Sections` (`bot.render.protocol_sections`). `comment: compact` keeps the
visible part only, with a one-line pointer to the check run.

Text is never cut mid-sentence: `clip` keeps whole sentences (or list items) and says "…"
where it left the rest out; only a single sentence longer than its cap is cut, at a word
boundary. A section over its cap keeps its first whole items and says how many it left out.

GitHub refuses comments over 65,536 characters, so the comment is also shrunk to
`max_chars`: per-assessment details (longest first), the discussion, the all-findings
list, the synthesis section, the protocol's report, then the visible findings. The
verdict and the banner are never dropped.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

import bot.render.collapsed as collapsed
from bot.council.advisory import Advisory, Resolution, SeatReport
from bot.council.resolution import MAX_CONDITIONS
from bot.council.schemas import Severity
from bot.render.blocks import bullets, cell, count, inline, norm, pct, quote, table
from bot.render.checks import CHECK_RUN_NAME
from bot.render.findings import all_findings, visible_findings
from bot.render.protocol_sections import SECTIONS
from bot.render.scope import scope_visible
from bot.render.verdict import STATE_TEXT, seat_state_table, verdict_lines
from bot.safety.links import defuse_links

__all__ = [
    "COMMENT_MARKER",
    "VISIBLE_TARGET",
    "CommentMode",
    "CommentOptions",
    "comment_options",
    "render_comment",
    "visible_text",
]

# Finds the sticky comment again (with the App's login: anyone can paste the marker).
# `bot.safety` removes every `<!--` from model text, so no model can forge it.
COMMENT_MARKER = "<!-- pr-council:advisory -->"

CommentMode = Literal["full", "compact"]
VISIBLE_TARGET = 6_000  # characters outside <details>, for any protocol and board size
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


_DETAILS_BLOCK = re.compile(r"<details>.*?</details>", re.DOTALL)


def visible_text(comment: str) -> str:
    """What a reader sees without opening anything: the comment outside `<details>`."""
    return _DETAILS_BLOCK.sub("", comment)


# --- the visible part ------------------------------------------------------------------------


def _recommendation(advisory: Advisory, caps: dict[str, int]) -> str:
    s = advisory.synthesis
    if s is None or not s.recommendation.strip():
        return ""
    return "### Recommendation\n\n" + quote(s.recommendation, caps["recommendation"])


def _conditions(advisory: Advisory, caps: dict[str, int]) -> str:
    if not advisory.conditions:
        return ""
    items = advisory.conditions[:MAX_CONDITIONS]
    return "### Conditions\n\n" + bullets(items, caps["item"])


def _action_items(advisory: Advisory, caps: dict[str, int]) -> str:
    s = advisory.synthesis
    if s is None:
        return ""
    said = {norm(c) for c in advisory.conditions}  # a condition is not said twice
    items = [a for a in s.action_items if a.strip() and norm(a) not in said]
    items = list(dict.fromkeys(items))[: collapsed.MAX_ACTION_ITEMS]
    if not items:
        return ""
    lines = [f"{n}. {inline(a, caps['item'])}" for n, a in enumerate(items, 1)]
    return "### Action items\n\n" + "\n".join(lines)


def _vote_cells(seat: SeatReport) -> tuple[str, str, str]:
    if seat.vote is not None:
        v = seat.vote
        return v.vote, pct(v.confidence), str(len(v.conditions)) if v.conditions else "-"
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
    return f"### {title}\n\n" + table([*header, "Conditions" if voted else "Concerns"], rows)


def _notes(advisory: Advisory, caps: dict[str, int], *, compact: bool) -> str:
    notes = [f"_Note: {inline(n, caps['note'])}_" for n in advisory.notes[:3] if n.strip()]
    if len(advisory.notes) > 3:
        where = "" if compact else " in the synthesis below"
        notes.append(f"_…{count(len(advisory.notes) - 3, 'more note')}{where}._")
    return "\n\n".join(notes)


def _visible(
    advisory: Advisory, options: CommentOptions, scale: float, findings_on: bool
) -> list[str]:
    caps = {k: max(40, int(v * scale)) for k, v in _VISIBLE_CAPS.items()}
    parts = [
        COMMENT_MARKER,
        *verdict_lines(advisory, options.gate, caps),
        scope_visible(advisory),  # a re-review, a diff built from the files API
        *(s.head(advisory) for s in SECTIONS),
    ]
    if advisory.resolution in (Resolution.NO_QUORUM, Resolution.FAILED) and advisory.seats:
        parts.append(seat_state_table(advisory))
    if advisory.resolution is Resolution.COST_LIMIT:
        parts.append("_What the council gathered before the limit:_")
    if findings_on:
        parts.append(
            visible_findings(
                advisory,
                caps,
                max_findings=options.max_findings,
                min_severity=options.min_severity,
                compact=options.comment == "compact",
            )
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
            tail += [
                collapsed.discussion(self.advisory, self.discussion, self.discussion_shown),
                self.cost,
            ]
        body = "\n\n".join(t for t in tail if t)
        # Belt and braces: the sanitizer already makes the marker impossible in model text.
        body = body.replace(COMMENT_MARKER, "")
        rest = "\n\n".join(head[1:]).replace(COMMENT_MARKER, "")
        text = "\n\n".join([head[0], rest] if rest else [head[0]])
        text += ("\n\n" + body if body else "") + "\n"
        return defuse_links(text, self.repo)


def _compact_pointer(advisory: Advisory) -> str:
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
    discussion = collapsed.discussion_lines(advisory) if full else []
    seen: set[str] = set()  # what earlier assessments said, in their words
    assessments = [
        collapsed.assessment_details(advisory, s, seen)
        for s in advisory.seats
        if full and s.assessment is not None
    ]
    layout = _Layout(
        advisory=advisory,
        options=options,
        assessments=assessments,
        discussion=discussion,
        all_findings=all_findings(advisory) if full else "",
        synthesis=collapsed.synthesis(advisory) if full else "",
        top=[(s.dropped, t) for s in SECTIONS if full and (t := s.top(advisory))],
        report=[(s.dropped, r) for s in SECTIONS if full and (r := s.report(advisory))],
        discussion_shown=len(discussion),
        cost=collapsed.cost(advisory) if full else "",
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
