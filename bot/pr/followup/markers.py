"""The review comment a finding gets: what a person sees, and the hidden markers by which
a later review finds the finding again in the comment alone (`<!-- pr-council:finding
<fp> -->`, and `<!-- pr-council:anchor <key> -->`: the anchored line's text hashed with its
path, so a fixed finding is told from its comment when no store remembers it - the
Action's lasts one run)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.council.advisory import MergedFinding
from bot.council.schemas import Severity
from bot.forge.reviews import ReviewComment
from bot.review.anchors import DiffLines
from bot.review.fingerprints import fingerprint
from bot.safety import strip_invisible
from bot.safety.markdown import sanitize_inline, sanitize_markdown

__all__ = [
    "ANCHOR_MARKER",
    "FINDING_MARKER",
    "comment_body",
    "finding_fingerprint",
    "marker_anchor",
    "marker_fingerprint",
    "marker_severity",
    "our_comments",
    "same_login",
]

FINDING_MARKER = "<!-- pr-council:finding {fp} -->"
ANCHOR_MARKER = "<!-- pr-council:anchor {key} -->"
# As the sticky comment shows them (bot.render.markdown).
SEVERITY_EMOJI: dict[Severity, str] = {"critical": "🔴", "major": "🟠", "minor": "🟡", "nit": "⚪"}
_MARKER = re.compile(r"<!-- pr-council:finding ([0-9a-f]{16}) -->")
_ANCHOR = re.compile(r"<!-- pr-council:anchor ([0-9a-f]{16}) -->")
# The severity line of `comment_body`: "🔴 **critical**: **title**".
_SEVERITY = re.compile(r"^\S+ \*\*(critical|major|minor|nit)\*\*: \*\*", re.MULTILINE)


def finding_fingerprint(finding: MergedFinding, lines: DiffLines) -> str:
    """The finding's fingerprint: path, title and its first anchored line's text at head."""
    return fingerprint(finding.path, finding.title, lines.line(finding.path, finding.start_line))


def marker_fingerprint(body: str) -> str | None:
    found = _MARKER.search(body or "")
    return found.group(1) if found else None


def marker_anchor(body: str) -> str | None:
    found = _ANCHOR.search(body or "")
    return found.group(1) if found else None


def marker_severity(body: str) -> str | None:
    found = _SEVERITY.search(body or "")
    return found.group(1) if found else None


def same_login(a: str | None, b: str | None) -> bool:
    """REST says `name[bot]`, GraphQL `name`: the same account."""
    if not a or not b:
        return False
    return a.removesuffix("[bot]").casefold() == b.removesuffix("[bot]").casefold()


def our_comments(comments: Sequence[ReviewComment], bot_login: str) -> dict[str, ReviewComment]:
    """Our findings' first comments by fingerprint: the marker AND the bot's own login
    (anyone can paste a marker)."""
    ours: dict[str, ReviewComment] = {}
    for c in comments:
        fp = marker_fingerprint(c.body)
        if fp and c.in_reply_to_id is None and same_login(c.user, bot_login):
            ours.setdefault(fp, c)
    return ours


def _fence(code: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


def comment_body(
    finding: MergedFinding, fp: str, *, suggestion: bool, anchor: str | None = None
) -> str:
    """What a person sees on the line: severity, title, detail, the fix, the suggested
    change (when the finding carries replacement code for exactly these lines); hidden,
    the fingerprint and the anchored line's `anchor_key`."""
    title = sanitize_inline(finding.title)
    hidden = FINDING_MARKER.format(fp=fp)
    if anchor is not None:
        hidden += "\n" + ANCHOR_MARKER.format(key=anchor)
    parts = [
        hidden,
        f"{SEVERITY_EMOJI[finding.severity]} **{finding.severity}**: **{title}**",
        sanitize_markdown(finding.detail.strip()) if finding.detail.strip() else "",
    ]
    if finding.suggestion and finding.suggestion.strip():
        parts.append(f"**Fix:** {sanitize_markdown(finding.suggestion.strip())}")
    if suggestion and finding.replacement is not None:
        code = strip_invisible(finding.replacement).rstrip("\n")
        fence = _fence(code)
        parts.append(f"{fence}suggestion\n{code}\n{fence}")
    seats = len(finding.raised_by)
    parts.append(f"<sub>PR Council · raised by {seats} seat{'s' if seats != 1 else ''}</sub>")
    return "\n\n".join(p for p in parts if p)
