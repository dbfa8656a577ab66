"""The advisory as a check run: conclusion, title, summary, text and line annotations.

Conclusions are the merge gate's (`bot.render.conclusion`, with the whole table): a verdict
gives its own, an open critical finding or red flag no approval answered gives `failure`,
and so does every ending without a verdict ("No verdict: ..." in the title, with what to
do in the summary). With `gate: advisory` the check never blocks.

APPROVED_WITH_CONDITIONS is `neutral`, never `success`: a merge gate is not green while
conditions are open (grey in the UI, with the conditions in the summary). It is not
`action_required` either: that is ESCALATE's ("a person must decide"), and keeping the two
apart lets a reader tell "approved once these are met" from "the council is split". Only a
plain APPROVED (no conditional approval, no unanswered critical finding) is `success`.

GitHub takes at most 50 annotations per request, so `annotation_batches` splits them for
the create call and the updates that follow.

The run's name and its buttons are defined here once: the publisher creates them, the
webhook router recognises them, the worker acts on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from bot.council.advisory import Advisory, MergedFinding
from bot.council.places import also_at_text
from bot.council.protocols import PROTOCOLS
from bot.render.blocks import cell
from bot.render.conclusion import (
    Conclusion,
    Gate,
    blocked_title,
    conclusion_for,
    gate_blockers,
    gate_note,
    no_verdict_title,
)
from bot.render.findings import top_findings_table
from bot.render.scope import scope_summary
from bot.render.usage import cost_text, usage_notes
from bot.render.verdict import (
    RESOLUTION_TITLE,
    partial_banner,
    raised_by,
    seats_phrase,
    verdict_heading,
)
from bot.safety import neutralize_mentions, strip_invisible
from bot.safety.links import defuse_links

__all__ = [
    "ANNOTATIONS_PER_REQUEST",
    "BUTTON_RECONVENE",
    "CHECK_RUN_NAME",
    "Annotation",
    "AnnotationLevel",
    "CheckRunAction",
    "CheckRunOutput",
    "Conclusion",
    "Gate",
    "annotation_batches",
    "annotations_for",
    "button_protocol",
    "check_run_actions",
    "conclusion_for",
    "render_check_run",
]

AnnotationLevel = Literal["notice", "warning", "failure"]

CHECK_RUN_NAME = "Council"  # the App's check run; re-runs of anyone else's are not ours
BUTTON_RECONVENE = "reconvene"  # requested_action identifiers
ANNOTATIONS_PER_REQUEST = 50
# GitHub's limits are 65,535 characters for summary and text; stay clear of them.
_SUMMARY_MAX = 60_000
_TEXT_MAX = 60_000
_TITLE_MAX = 200
_MESSAGE_MAX = 4_000

_LEVELS: dict[str, AnnotationLevel] = {
    "critical": "failure",
    "major": "warning",
    "minor": "warning",
    "nit": "notice",
}


class Annotation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    annotation_level: AnnotationLevel
    title: str
    message: str
    raw_details: str | None = None


class CheckRunAction(BaseModel):
    """A button on the check run; GitHub caps label 20, description 40, identifier 20."""

    model_config = ConfigDict(frozen=True)

    label: str = Field(max_length=20)
    description: str = Field(max_length=40)
    identifier: str = Field(max_length=20)


RECONVENE = CheckRunAction(
    label="Re-convene", description="Convene the council again", identifier=BUTTON_RECONVENE
)


def check_run_actions() -> tuple[CheckRunAction, ...]:
    """The check run's buttons: re-convene, then one for each registered protocol that has a
    `button` (its name is the identifier), in the registry's order."""
    return (
        RECONVENE,
        *(
            CheckRunAction(
                label=p.button.label, description=p.button.description, identifier=p.name
            )
            for p in PROTOCOLS.values()
            if p.button is not None
        ),
    )


def button_protocol(identifier: str) -> str | None:
    """The protocol a button convenes (None: re-convene the one that ran); KeyError for a
    button the check run does not have."""
    if identifier == BUTTON_RECONVENE:
        return None
    if identifier in PROTOCOLS and PROTOCOLS[identifier].button is not None:
        return identifier
    raise KeyError(identifier)


class CheckRunOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str
    summary: str = Field(max_length=65_535)
    text: str | None = Field(default=None, max_length=65_535)
    annotations: list[Annotation] = Field(default_factory=list)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _plain(text: str, limit: int) -> str:
    """Plain text (a title, an annotation) under the comment's output rule: no invisible
    or bidi character (they disguise text) and no mention that notifies. GitHub renders
    no Markdown here, so a link or an image shows as the text it is."""
    return _clip(neutralize_mentions(strip_invisible(text)).strip(), limit)


def _markdown(text: str, comment_url: str | None = None) -> str:
    """The summary or text under the comment's output rule: model text already went
    through `bot.safety` (no mention, image or HTML); links stay links only into the
    repository the council's comment is on (`comment_url`), the others become text."""
    parts = urlsplit(comment_url or "")
    path = parts.path.split("/")
    repo = "/".join(path[1:3]) if parts.scheme == "https" and len(path) > 3 else None
    return defuse_links(text, repo, host=parts.netloc or "github.com")


def _annotation(advisory: Advisory, f: MergedFinding) -> Annotation | None:
    if f.start_line is None or not f.path:
        return None
    message = f.detail.strip() or f.title
    if f.outside_diff:
        message += "\n\nOn lines this change leaves as they are (outside the diff)."
    if f.also_at:
        message += f"\n\nThe same issue {also_at_text(f)}."
    message += f"\n\nRaised by {raised_by(advisory, f.raised_by)}."
    details = [f.suggestion] if f.suggestion else []
    if f.replacement is not None:  # kept only for the lines it was written for
        details.append(f"Suggested code for these lines:\n{f.replacement}")
    return Annotation(
        path=f.path,
        start_line=f.start_line,
        end_line=max(f.end_line or f.start_line, f.start_line),
        annotation_level=_LEVELS[f.severity],
        title=_plain(f"[{f.severity}] {f.title}", 255),
        message=_plain(message, _MESSAGE_MAX),
        raw_details=_plain("\n\n".join(details), _MESSAGE_MAX) if details else None,
    )


def annotations_for(advisory: Advisory) -> list[Annotation]:
    """One annotation per merged finding anchored to a line.

    The review pipeline has anchored every finding to lines the head file has before this
    runs (bot/review/anchors.py), so an annotation names only lines of a changed file at
    head: a line of a hunk, or one outside the diff (GitHub takes an annotation on any line
    of a file in the pull request; its message says it is outside the diff). GitHub
    requires `start_line` and `end_line` on every check-run annotation, and a file-level
    finding has no line of its own: it gets no annotation (pinning it to line 1 would
    point at a line the change may not touch); it is listed in the comment and in the
    check run's text with its path."""
    found = (_annotation(advisory, f) for f in advisory.findings)
    return [a for a in found if a is not None]


def annotation_batches(
    annotations: Sequence[Annotation], size: int = ANNOTATIONS_PER_REQUEST
) -> list[list[Annotation]]:
    if size < 1:
        raise ValueError("batch size must be at least 1")
    return [list(annotations[i : i + size]) for i in range(0, len(annotations), size)]


def _title(advisory: Advisory) -> str:
    r = advisory.resolution
    if r.is_verdict:
        title = f"{RESOLUTION_TITLE[r]} · confidence {round(advisory.confidence * 100)}%"
        title += f" · {seats_phrase(advisory)}"
    else:
        reason = " ".join(strip_invisible(advisory.reason or "").split())
        title = f"{RESOLUTION_TITLE[r]}: {reason}" if reason else RESOLUTION_TITLE[r]
    return _plain(title, _TITLE_MAX)


def _summary_head(advisory: Advisory) -> list[str]:
    parts = [f"## {verdict_heading(advisory)}", seats_phrase(advisory)]
    banner = partial_banner(advisory)
    if banner:
        parts.append(banner)
    if advisory.reason:
        parts.append(f"**Why:** {cell(advisory.reason, 1_000)}")
    parts += scope_summary(advisory)  # a re-review, a diff built from the files API
    return parts


def _summary_rest(advisory: Advisory, gate: Gate, comment_url: str | None) -> list[str]:
    parts: list[str] = []
    if comment_url:
        parts.append(f"The full advisory is in [the council's comment]({comment_url}).")
    if gate == "advisory":
        parts.append("_Gate: advisory. This check reports; it never blocks a merge._")
    if advisory.synthesis and advisory.synthesis.recommendation.strip():
        parts.append(f"**Recommendation:** {cell(advisory.synthesis.recommendation, 2_000)}")
    if advisory.conditions:
        parts.append(
            "**Conditions**\n\n" + "\n".join(f"- {cell(c, 500)}" for c in advisory.conditions)
        )
    if any(s.vote or s.no_vote for s in advisory.seats):
        # "Votes: 2 approve, 0 reject, 1 no vote (timed out)." (no seat abstains)
        parts.append(f"Votes: {advisory.vote_counts().text()}.")
    if advisory.usage.calls:
        parts.append(_usage_line(advisory))
    return parts


def _usage_line(advisory: Advisory) -> str:
    """E.g. "Cost: $0.0412 · 16 calls.", "Cost: unknown (no price for x:y) · 16 calls."."""
    u = advisory.usage
    facts = [f"Cost: {cell(cost_text(u), 1_000)}", f"{u.calls} call{'' if u.calls == 1 else 's'}"]
    facts += [cell(note, 300) for note in usage_notes(u)]
    return " · ".join(facts) + "."


def _summary(advisory: Advisory, gate: Gate, comment_url: str | None) -> str:
    head, rest = _summary_head(advisory), _summary_rest(advisory, gate, comment_url)
    limit: int | None = None
    while True:
        top = [top_findings_table(advisory, limit)] if advisory.top_findings else []
        text = _markdown("\n\n".join([*head, *top, *rest]), comment_url)
        if len(text) <= _SUMMARY_MAX or limit == 0:
            return _clip(text, _SUMMARY_MAX)
        limit = len(advisory.top_findings) // 2 if limit is None else limit // 2


def _text(advisory: Advisory) -> str | None:
    if not advisory.findings:
        return None
    lines = ["### Findings", ""]
    used = 0
    for n, f in enumerate(advisory.findings):
        also = f" ({cell(also_at_text(f))})" if f.also_at else ""
        line = (
            f"- **{f.severity}** {cell(f.location())}{also}: {cell(f.title, 200)} "
            f"({raised_by(advisory, f.raised_by)})"
        )
        used += len(line) + 1
        if used > _TEXT_MAX - 200:
            lines.append(f"- …and {len(advisory.findings) - n} more.")
            break
        lines.append(line)
    return _markdown("\n".join(lines))


def render_check_run(
    advisory: Advisory, *, gate: Gate = "verdict", comment_url: str | None = None
) -> CheckRunOutput:
    """Title, summary and text of the completed check run, with every annotation.

    Under `gate: verdict` the title says first when the check blocks without a verdict
    ("No verdict: ...") or despite one ("Blocked by an open critical finding: ..."), and
    the summary opens with why and what to do. A carried verdict (nothing new to review at
    this head) names the head it was given on and has no annotations: its lines were read
    at that head.

    Send `annotations` in `annotation_batches`: the first batch with the completing call,
    the rest in updates.
    """
    title = _title(advisory)
    summary = _summary(advisory, gate, comment_url)
    if gate == "verdict":
        blockers = gate_blockers(advisory)
        title = no_verdict_title(advisory, RESOLUTION_TITLE[advisory.resolution]) or (
            f"{blocked_title(blockers)} · {title}" if blockers else title
        )
        note = gate_note(advisory, gate)
        if note:
            summary = f"{note}\n\n{summary}"
    carried = advisory.carried_from
    if carried is not None:
        title = f"Carried from {carried.head_sha[:7]}: {title}"
        summary = (
            f"**The verdict given on {carried.head_sha[:7]} stands:** this head has nothing "
            f"new to review ({cell(carried.reason, 500)}). A push with changes gets a review."
            f"\n\n{summary}"
        )
    return CheckRunOutput(
        # The comment's output rule on the whole: the gate's and the carried verdict's lines
        # name findings and reasons in the models' words too.
        title=_plain(title, _TITLE_MAX),
        summary=_clip(_markdown(summary, comment_url), _SUMMARY_MAX),
        text=_text(advisory),
        annotations=[] if carried is not None else annotations_for(advisory),
    )
