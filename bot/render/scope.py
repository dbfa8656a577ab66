"""What the review covered (`Advisory.scope`), for the comment's header area and the check run.

A few short visible lines, each list collapsed below its line when it is long:

- "Re-review of 2 new commits (since abc1234): only what they changed was reviewed." and
  "Earlier findings: 2 fixed, 1 still open; 1 new." with the findings listed, collapsed;
- "Full review: the reviewed head was rewritten (force-push)." when a push could not be
  reviewed incrementally;
- "Built from the files API: GitHub refused the diff (more than 300 files); 2 files had
  no patch and were not reviewed: ..." with the files and the reasons (collapsed when long).

Paths and titles are the PR author's and the models' words: sanitized as inline text.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.council.advisory import Advisory
from bot.council.scope import EarlierFinding, LargeDiff, Rereview, SkippedFile
from bot.safety.markdown import sanitize_inline

__all__ = ["scope_summary", "scope_visible"]

INLINE_FILES = 3  # skipped files named on the line itself; more are collapsed
LISTED = 30  # items a collapsed list shows
_STATUS = {"fixed": "fixed", "open": "still open", "new": "new"}


def _text(text: str, limit: int = 200) -> str:
    one = " ".join(text.split())
    if len(one) > limit:
        one = one[: limit - 1].rstrip() + "…"
    return sanitize_inline(one)


def _code(path: str) -> str:
    return "`" + _text(path).replace("`", "'") + "`"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _details(summary: str, items: Sequence[str]) -> str:
    shown = [f"- {item}" for item in items[:LISTED]]
    if len(items) > LISTED:
        shown.append(f"- …and {len(items) - LISTED} more")
    body = "\n".join(shown)
    return f"<details>\n<summary>{summary}</summary>\n\n{body}\n\n</details>"


def _skipped_item(f: SkippedFile) -> str:
    return f"{_code(f.path)} ({_text(f.reason, 80)})"


def large_diff_line(large: LargeDiff) -> str:
    """E.g. "Built from the files API: GitHub refused the diff (more than 300 files); 2 files
    had no patch and were not reviewed: `logo.png` (binary), `data.csv` (too large...)."""
    line = f"Built from the files API: GitHub refused the diff ({_text(large.refused, 80)})"
    if large.capped:
        line += f"; the files API lists at most {large.files:,} files, the rest were not seen"
    n = len(large.skipped)
    if not n:
        return line + "."
    line += f"; {_plural(n, 'file')} had no patch and {'was' if n == 1 else 'were'} not reviewed"
    if n <= INLINE_FILES:
        return line + ": " + ", ".join(_skipped_item(f) for f in large.skipped) + "."
    return line + " (listed below)."


def _finding_item(f: EarlierFinding) -> str:
    where = f.path if f.line is None else f"{f.path}:{f.line}"
    title, severity = _text(f.title, 120), _text(f.severity, 20)
    return f"{_STATUS[f.status]}: {_code(where)} **{title}** ({severity})"


def rereview_lines(re: Rereview) -> list[str]:
    head = (
        f"**Re-review of {_plural(re.commits, 'new commit')}** (since `{re.since[:7]}`): only "
        "what they changed was reviewed, with the earlier findings still open."
    )
    fixed, still, new = re.of("fixed"), re.of("open"), re.of("new")
    if not re.findings:
        return [head]
    tally = f"Earlier findings: {len(fixed)} fixed, {len(still)} still open; {len(new)} new."
    items = [_finding_item(f) for f in (*fixed, *still, *new)]
    return [head, tally + "\n\n" + _details("Earlier and new findings", items)]


def scope_visible(advisory: Advisory) -> str:
    """The comment's lines on what was reviewed ("" for a plain full review)."""
    scope = advisory.scope
    if scope is None:
        return ""
    parts: list[str] = []
    if scope.rereview is not None:
        parts += rereview_lines(scope.rereview)
    if scope.full_review_reason:
        parts.append(f"**Full review:** {_text(scope.full_review_reason, 300)}")
    if scope.large_diff is not None:
        line = large_diff_line(scope.large_diff)
        skipped = scope.large_diff.skipped
        if len(skipped) > INLINE_FILES:
            items = [_skipped_item(f) for f in skipped]
            line += "\n\n" + _details(f"Not reviewed: {_plural(len(skipped), 'file')}", items)
        parts.append(line)
    return "\n\n".join(parts)


def scope_summary(advisory: Advisory) -> list[str]:
    """The same facts for the check run's summary, lists shortened to their first items."""
    scope = advisory.scope
    if scope is None:
        return []
    parts: list[str] = []
    if scope.rereview is not None:
        re = scope.rereview
        line = f"Re-review of {_plural(re.commits, 'new commit')} (since `{re.since[:7]}`)."
        if re.findings:
            line += (
                f" Earlier findings: {len(re.of('fixed'))} fixed, {len(re.of('open'))} still "
                f"open; {len(re.of('new'))} new."
            )
        parts.append(line)
    if scope.full_review_reason:
        parts.append(f"Full review: {_text(scope.full_review_reason, 300)}")
    if scope.large_diff is not None:
        large = scope.large_diff
        line = large_diff_line(large)
        if len(large.skipped) > INLINE_FILES:
            named = ", ".join(_skipped_item(f) for f in large.skipped[:10])
            more = len(large.skipped) - 10
            line += f" Not reviewed: {named}" + (f", …and {more} more." if more > 0 else ".")
        parts.append(line)
    return parts
