"""Inline review comments: an advisory's anchored findings on the lines they are about.

Opt-in (`inline_comments: true` in `.github/council.yml`, or `/council --inline` for one
run). `publish_inline` is the one entry point, for the App's worker and the Action alike:

1. **Dismissed** findings are read first: a thread of ours that a person resolved (not the
   bot itself), or a thumbs-down on our comment, dismisses its finding only when that
   person may write to the repository (admin, maintain or write: `bot.github.permissions`,
   each person's permission read once per review), and never when the person is the pull
   request's author and the finding is critical. A dismissed finding is marked `dismissed`
   in the store (`bot.store.findings`), dropped from the advisory for this pull request
   (the sticky comment says how many) and never posted again - except a **critical** one:
   no dismissal takes it out of the advisory, its check run annotations or its verdict;
   it stays a finding, the sticky comment says who dismissed it, and the store keeps it
   open.
2. **Posted once**: each comment carries its finding's fingerprint in a hidden marker
   (`<!-- pr-council:finding <fp> -->`), and the store keeps the comment's id, so a
   re-review posts only the findings not on the PR yet, whether or not the store remembers
   (a second marker, `<!-- pr-council:anchor <key> -->`, hashes the anchored line's text,
   so a fixed finding is told from its comment alone too).
3. **Lines GitHub accepts**: GitHub refuses a whole review when one comment's line is not
   in the diff, so each finding is placed first (`DiffLines.placement`): its lines must be
   in one hunk of the diff's right side, added or context lines (and lines of the hunks
   of the diff the review read); a range spanning hunks is put on its last line; a
   finding on head lines outside the diff (`outside_diff`, bot/review/anchors.py) and the
   rest stay in the sticky comment and the check run's annotations only.
   Findings from `min_severity` up are posted as ONE review with event COMMENT (never
   APPROVE or REQUEST_CHANGES), a ```suggestion block where the finding carries the exact
   replacement for all its lines.
4. **Fixed**: a finding posted inline that a later review no longer raises, whose anchored
   line is no longer in the head's diff with that text, is marked `fixed`; `resolve_fixed`
   then resolves its thread where the token may (the App), or replies "Fixed in <sha>."
   once (a workflow token, to which GitHub answers FORBIDDEN).

Fingerprints (`finding_fingerprint`) are `bot.review.fingerprints.fingerprint` of the path,
the title and the text of the finding's first anchored line at head.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog

from bot.context.diff import parse_diff
from bot.council.advisory import SEVERITY_ORDER, Advisory, MergedFinding
from bot.council.schemas import Severity
from bot.forge.errors import ForgeError
from bot.github.client import RepoClient
from bot.github.permissions import can_write
from bot.github.reviews import (
    ReviewComment,
    ReviewThread,
    create_review,
    list_review_comments,
    reply_in_thread,
    resolve_thread,
    review_comment_reactions,
    review_threads,
)
from bot.review.fingerprints import fingerprint
from bot.safety import sanitize_inline, sanitize_markdown, strip_invisible
from bot.store.db import Database
from bot.store.findings import PrFinding, RaisedFinding, mark, posted, pr_findings, record_raised

__all__ = [
    "FINDING_MARKER",
    "DiffLines",
    "FixedResult",
    "InlineResult",
    "Severity",
    "comment_body",
    "finding_fingerprint",
    "marker_fingerprint",
    "publish_inline",
    "resolve_fixed",
]

log = structlog.get_logger(__name__)

FINDING_MARKER = "<!-- pr-council:finding {fp} -->"
# As the sticky comment shows them (bot.render.markdown, which review does not import).
SEVERITY_EMOJI: dict[Severity, str] = {"critical": "🔴", "major": "🟠", "minor": "🟡", "nit": "⚪"}
_MARKER = re.compile(r"<!-- pr-council:finding ([0-9a-f]{16}) -->")
# The anchored line's text (hashed with its path), so a later review tells a fixed finding
# from the comment alone when no store remembers it (the Action's store lasts one run).
ANCHOR_MARKER = "<!-- pr-council:anchor {key} -->"
_ANCHOR = re.compile(r"<!-- pr-council:anchor ([0-9a-f]{16}) -->")
# The severity line of `comment_body`: "🔴 **critical**: **title**".
_SEVERITY = re.compile(r"^\S+ \*\*(critical|major|minor|nit)\*\*: \*\*", re.MULTILINE)
MAX_COMMENTS = 25  # per review: more than this on one PR is noise, the sticky lists the rest
MAX_REACTION_READS = 50  # our comments whose reactions are read per review
FIXED_REPLY = "Fixed in {sha}."
_FIXED_PREFIX = "Fixed in "


# -- the diff's lines ------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffLines:
    """The diff's right side: each file's hunks as (first, last) line ranges, and the text
    of every line in them; `changed`, when given, limits placements to the lines of the
    hunks of the diff the review read, added and context (`BuiltContext.hunk_lines`)."""

    hunks: Mapping[str, Sequence[tuple[int, int]]]
    text: Mapping[str, Mapping[int, str]]
    changed: Mapping[str, Sequence[tuple[int, int]]] | None = None

    @classmethod
    def from_diff(
        cls, diff_text: str, changed: Mapping[str, Sequence[tuple[int, int]]] | None = None
    ) -> DiffLines:
        hunks: dict[str, list[tuple[int, int]]] = {}
        text: dict[str, dict[int, str]] = {}
        for parsed in parse_diff(diff_text):
            if parsed.info.binary or not parsed.hunks:
                continue
            path = parsed.info.path
            ranges, lines = hunks.setdefault(path, []), text.setdefault(path, {})
            for hunk in parsed.hunks:
                number = hunk.target_start
                for line in hunk.lines:
                    if line[:1] in ("+", " ", ""):
                        lines[number] = line[1:]
                        number += 1
                if number > hunk.target_start:
                    ranges.append((hunk.target_start, number - 1))
        return cls(hunks=hunks, text=text, changed=changed or None)

    def line(self, path: str, number: int | None) -> str | None:
        if number is None:
            return None
        return self.text.get(path, {}).get(number)

    def _hunk(self, path: str, number: int) -> tuple[int, int] | None:
        return next((h for h in self.hunks.get(path, ()) if h[0] <= number <= h[1]), None)

    def _read(self, path: str, number: int) -> bool:
        """Is `number` a line of a hunk of the diff the review read?"""
        if self.changed is None:
            return True
        return any(a <= number <= b for a, b in self.changed.get(path, ()))

    def placement(
        self, path: str, start: int | None, end: int | None
    ) -> tuple[int | None, int] | None:
        """(start_line or None, line) GitHub accepts for the finding's lines, or None."""
        if start is None:
            return None
        last = end if end is not None and end >= start else start
        hunk = self._hunk(path, last)
        if hunk is None or not self._read(path, last):
            return None
        if last > start and hunk[0] <= start and self._read(path, start):
            return start, last
        return None, last

    def has_anchor(self, path: str, key: str) -> bool:
        return any(anchor_key(path, text) == key for text in self.text.get(path, {}).values())

    def still_there(self, row: PrFinding) -> bool:
        """Is the finding's anchored line in the diff with the text it was raised on?"""
        if row.line is None:
            return row.path in self.hunks
        return any(
            fingerprint(row.path, row.title, text) == row.fingerprint
            for text in self.text.get(row.path, {}).values()
        )


def anchor_key(path: str, code_line: str | None) -> str:
    line = " ".join((code_line or "").split())
    return hashlib.sha256(f"{path}\0{line}".encode()).hexdigest()[:16]


def finding_fingerprint(finding: MergedFinding, lines: DiffLines) -> str:
    """The finding's fingerprint: path, title and its first anchored line's text at head."""
    return fingerprint(finding.path, finding.title, lines.line(finding.path, finding.start_line))


def marker_fingerprint(body: str) -> str | None:
    found = _MARKER.search(body or "")
    return found.group(1) if found else None


def _marker_anchor(body: str) -> str | None:
    found = _ANCHOR.search(body or "")
    return found.group(1) if found else None


def _marker_severity(body: str) -> str | None:
    found = _SEVERITY.search(body or "")
    return found.group(1) if found else None


def _same_login(a: str | None, b: str | None) -> bool:
    """REST says `name[bot]`, GraphQL `name`: the same account."""
    if not a or not b:
        return False
    return a.removesuffix("[bot]").casefold() == b.removesuffix("[bot]").casefold()


# -- the comment -----------------------------------------------------------------------------


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


# -- publishing ------------------------------------------------------------------------------


@dataclass
class FixedResult:
    resolved: int = 0  # threads resolved
    replied: int = 0  # "Fixed in <sha>." replies


@dataclass
class InlineResult:
    """What `publish_inline` did; `advisory` is the one to render (dismissed ones dropped,
    notes added)."""

    advisory: Advisory
    posted: int = 0  # comments posted by this review
    already: int = 0  # this advisory's findings already on the PR as review comments
    dismissed: int = 0  # findings of this advisory dropped: a person dismissed them
    # Critical findings of this advisory a person with write access dismissed, kept all the
    # same: (title, who dismissed it).
    kept_critical: list[tuple[str, str]] = field(default_factory=list)
    off_diff: int = 0  # from the severity up, anchored, but not on a line of the diff
    review_id: int | None = None
    fixed: FixedResult = field(default_factory=FixedResult)
    error: str | None = None  # why the review could not be posted


async def publish_inline(
    client: RepoClient,
    pr: int,
    head_sha: str,
    advisory: Advisory,
    lines: DiffLines,
    db: Database | None,
    *,
    bot_login: str,
    pr_author: str,
    can_resolve_threads: bool,
    min_severity: Severity = "major",
    post: bool = True,
) -> InlineResult:
    """Dismissals read, the advisory filtered, new findings posted as one COMMENT review,
    fixed ones resolved (or replied to). `post=False` only filters (inline comments off:
    a dismissed finding is still not raised again) and resolves fixed threads.
    `pr_author`: the pull request's author, whose dismissal of a critical finding never
    counts.

    Never raises ForgeError for the review itself (the sticky comment matters more): a
    refusal is in `error` and in the advisory's notes."""
    repo = client.full_name
    comments = await list_review_comments(client, pr)
    threads = await _threads(client, pr)
    ours = _our_comments(comments, bot_login)
    store = {f.fingerprint: f for f in await pr_findings(db, repo, pr)} if db else {}

    prints = [finding_fingerprint(f, lines) for f in advisory.findings]
    critical = _critical(advisory.findings, prints, ours, store)
    who = await _dismissals(
        client,
        ours,
        threads,
        store,
        critical,
        _Deciders(bot_login=bot_login, pr_author=pr_author),
    )
    # A critical finding is never marked dismissed: it stays open, whoever dismissed it.
    if db is not None:
        await mark(db, repo, pr, sorted(set(who) - critical - _dismissed(store)), "dismissed")
    dismissed = set(who) | _dismissed(store)

    pairs = list(zip(advisory.findings, prints, strict=True))
    kept = [(f, fp) for f, fp in pairs if fp not in dismissed or fp in critical]
    dropped = [f for f, fp in pairs if fp in dismissed and fp not in critical]
    result = InlineResult(advisory=advisory, dismissed=len(dropped))
    result.kept_critical = [(f.title, who[fp]) for f, fp in pairs if fp in critical and fp in who]

    on_pr = set(ours) | {fp for fp, row in store.items() if row.review_comment_id is not None}
    wanted: list[tuple[MergedFinding, str, tuple[int | None, int]]] = []
    for f, fp in kept:
        if SEVERITY_ORDER[f.severity] > SEVERITY_ORDER[min_severity] or f.start_line is None:
            continue
        if fp in on_pr:
            result.already += 1
            continue
        placed = None if f.outside_diff else lines.placement(f.path, f.start_line, f.end_line)
        if placed is None:
            result.off_diff += 1
            continue
        wanted.append((f, fp, placed))
    if post and wanted:
        await _post(
            client,
            pr,
            head_sha,
            wanted[:MAX_COMMENTS],
            db,
            result,
            can_resolve_threads,
            bot_login,
            lines,
        )

    raised = set(prints)
    fixed = await _newly_fixed(db, repo, pr, store, raised, lines, head_sha)
    if db is not None:
        fixed = await pr_findings(db, repo, pr, status="fixed")
    fixed += _fixed_by_markers(repo, pr, ours, store, raised | dismissed, lines, head_sha)
    # Fixed by this head (here or by the re-review's tracking): a thread closed at an earlier
    # head and reopened by a person since is theirs to close.
    fixed = [
        f for f in fixed if f.review_comment_id is not None and f.fixed_sha in (None, head_sha)
    ]
    if fixed:
        result.fixed = await resolve_fixed(
            client,
            pr,
            fixed,
            head_sha,
            bot_login=bot_login,
            can_resolve_threads=can_resolve_threads,
            comments=comments,
            threads=threads,
        )
    result.advisory = _filtered(advisory, dropped, dismissed - critical, lines, result)
    log.info(
        "inline_published",
        repo=repo,
        pr=pr,
        posted=result.posted,
        already=result.already,
        dismissed=result.dismissed,
        off_diff=result.off_diff,
        kept_critical=len(result.kept_critical),
        resolved=result.fixed.resolved,
        replied=result.fixed.replied,
    )
    return result


async def _threads(client: RepoClient, pr: int) -> list[ReviewThread]:
    try:
        return await review_threads(client, pr)
    except ForgeError as error:  # no threads read: no dismissal seen, nothing resolved
        log.warning("review_threads_unreadable", error=str(error))
        return []


def _our_comments(comments: Sequence[ReviewComment], bot_login: str) -> dict[str, ReviewComment]:
    """Our findings' first comments by fingerprint: the marker AND the bot's own login
    (anyone can paste a marker)."""
    ours: dict[str, ReviewComment] = {}
    for c in comments:
        fp = marker_fingerprint(c.body)
        if fp and c.in_reply_to_id is None and _same_login(c.user, bot_login):
            ours.setdefault(fp, c)
    return ours


def _dismissed(store: Mapping[str, PrFinding]) -> set[str]:
    return {fp for fp, row in store.items() if row.status == "dismissed"}


def _critical(
    findings: Sequence[MergedFinding],
    prints: Sequence[str],
    ours: Mapping[str, ReviewComment],
    store: Mapping[str, PrFinding],
) -> set[str]:
    """Fingerprints of the critical findings: as this advisory rates them; one it does not
    raise, as the store or, without one (the Action's lasts one run), our comment says."""
    severity: dict[str, str] = {fp: f.severity for f, fp in zip(findings, prints, strict=True)}
    for fp, row in store.items():
        severity.setdefault(fp, row.severity)
    for fp, c in ours.items():
        severity.setdefault(fp, _marker_severity(c.body) or "")
    return {fp for fp, rated in severity.items() if rated == "critical"}


@dataclass
class _Deciders:
    """Whose dismissal counts, each person's permission read once per review: a person
    with write access (never the bot), and for a critical finding not the PR's author."""

    bot_login: str
    pr_author: str
    unreadable: set[str] = field(default_factory=set)  # logins GitHub did not answer for

    async def counts(self, client: RepoClient, login: str | None, *, critical: bool) -> bool:
        if not login or _same_login(login, self.bot_login):
            return False
        if critical and _same_login(login, self.pr_author):
            return False
        if login.casefold() in self.unreadable:
            return False
        try:
            return await can_write(client, login)
        except ForgeError as error:  # not known to write: the finding stands
            log.warning("dismisser_permission_unreadable", login=login, error=str(error))
            self.unreadable.add(login.casefold())
            return False


async def _dismissals(
    client: RepoClient,
    ours: Mapping[str, ReviewComment],
    threads: Sequence[ReviewThread],
    store: Mapping[str, PrFinding],
    critical: set[str],
    deciders: _Deciders,
) -> dict[str, str]:
    """Fingerprints dismissed, and by whom: our thread resolved by a person whose word
    counts, or their thumbs-down. Non-critical findings already dismissed in the store are
    not read again; critical ones are (the store keeps them open), to say who dismissed
    them."""
    by_comment = {t.first_comment_id: t for t in threads}
    found: dict[str, str] = {}
    for n, (fp, comment) in enumerate(ours.items()):
        is_critical = fp in critical
        if fp in found or (fp in store and store[fp].status == "dismissed" and not is_critical):
            continue
        thread = by_comment.get(comment.id)
        fixed = fp in store and store[fp].status == "fixed"
        if (
            thread is not None
            and thread.is_resolved
            and not fixed  # resolved after it was fixed: not a dismissal
            and await deciders.counts(client, thread.resolved_by, critical=is_critical)
        ):
            assert thread.resolved_by is not None
            found[fp] = thread.resolved_by
            continue
        if n >= MAX_REACTION_READS:
            continue
        try:
            reactions = await review_comment_reactions(client, comment.id)
        except ForgeError as error:
            log.warning("reactions_unreadable", comment_id=comment.id, error=str(error))
            continue
        for content, login in reactions:
            if content == "-1" and await deciders.counts(client, login, critical=is_critical):
                found[fp] = login
                break
    return found


async def _post(
    client: RepoClient,
    pr: int,
    head_sha: str,
    wanted: Sequence[tuple[MergedFinding, str, tuple[int | None, int]]],
    db: Database | None,
    result: InlineResult,
    can_resolve_threads: bool,
    bot_login: str,
    lines: DiffLines,
) -> None:
    comments = []
    for f, fp, (start, line) in wanted:
        # A suggested change replaces the lines commented on: only when they are all of them.
        whole = (line if start is None else start, line) == (
            f.start_line,
            f.end_line or f.start_line,
        )
        comment: dict[str, object] = {
            "path": f.path,
            "line": line,
            "side": "RIGHT",
            "body": comment_body(
                f, fp, suggestion=whole, anchor=anchor_key(f.path, lines.line(f.path, f.start_line))
            ),
        }
        if start is not None:
            comment.update(start_line=start, start_side="RIGHT")
        comments.append(comment)
    n = len(comments)
    body = (
        f"**PR Council**: {n} finding{'s' if n != 1 else ''} of the council's advisory on "
        f"{'its line' if n == 1 else 'their lines'}. The advisory itself is the council's "
        "comment on this pull request; the council advises, people decide."
    )
    try:
        result.review_id = await create_review(
            client, pr, commit_id=head_sha, body=body, comments=comments
        )
    except ForgeError as error:
        log.warning("inline_review_refused", pr=pr, error=str(error))
        result.error = str(error.reason)
        return
    result.posted = n
    if db is None:
        return
    repo = client.full_name
    await record_raised(
        db,
        repo,
        pr,
        _deliberation(result.advisory),
        head_sha,
        [
            RaisedFinding(
                fingerprint=fp, path=f.path, line=f.start_line, title=f.title, severity=f.severity
            )
            for f, fp, _ in wanted
        ],
    )
    try:
        mine = _our_comments(await list_review_comments(client, pr), bot_login)
        threads = (
            {t.first_comment_id: t.id for t in await _threads(client, pr)}
            if can_resolve_threads
            else {}
        )
    except ForgeError as error:
        log.warning("inline_comments_not_recorded", error=str(error))
        return
    for _, fp, _ in wanted:
        found = mine.get(fp)
        if found is not None:
            await posted(
                db, repo, pr, fp, review_comment_id=found.id, thread_node_id=threads.get(found.id)
            )


def _deliberation(advisory: Advisory) -> str:
    return advisory.deliberation_id


async def _newly_fixed(
    db: Database | None,
    repo: str,
    pr: int,
    store: Mapping[str, PrFinding],
    raised: set[str],
    lines: DiffLines,
    head_sha: str,
) -> list[PrFinding]:
    """Open findings posted inline that this review does not raise and whose line is no
    longer in the diff with its text: a push fixed them (marked `fixed` at `head_sha`)."""
    if db is None:
        return []
    fixed = [
        row
        for fp, row in store.items()
        if row.status == "open"
        and row.review_comment_id is not None
        and fp not in raised
        and row.head_sha != head_sha
        and not lines.still_there(row)
    ]
    if fixed:
        await mark(db, repo, pr, [f.fingerprint for f in fixed], "fixed", fixed_sha=head_sha)
    return fixed


def _fixed_by_markers(
    repo: str,
    pr: int,
    ours: Mapping[str, ReviewComment],
    store: Mapping[str, PrFinding],
    skip: set[str],
    lines: DiffLines,
    head_sha: str,
) -> list[PrFinding]:
    """Our comments the store does not know (a store that lasted one run: the Action's),
    not raised now, whose anchored line's text is gone from the diff: fixed at this head."""
    found = []
    for fp, c in ours.items():
        key = _marker_anchor(c.body)
        if fp in store or fp in skip or key is None or lines.has_anchor(c.path, key):
            continue
        found.append(
            PrFinding(
                repo=repo,
                pr_number=pr,
                fingerprint=fp,
                path=c.path,
                line=c.line,
                title="",
                severity="",
                status="fixed",
                first_deliberation_id="",
                last_deliberation_id="",
                head_sha=None,
                fixed_sha=head_sha,
                review_comment_id=c.id,
                thread_node_id=None,
                updated_at=datetime.now(UTC),
            )
        )
    return found


async def resolve_fixed(
    client: RepoClient,
    pr: int,
    fixed: Sequence[PrFinding],
    head_sha: str,
    *,
    bot_login: str,
    can_resolve_threads: bool,
    comments: Sequence[ReviewComment] | None = None,
    threads: Sequence[ReviewThread] | None = None,
) -> FixedResult:
    """For each fixed finding posted inline: resolve its thread where the token may (the
    App); else, or when GitHub answers FORBIDDEN (a workflow token), reply "Fixed in <sha>."
    in it once. A thread already resolved, or already replied to, is left as it is.
    `comments` and `threads`: the PR's, when the caller has read them already."""
    result = FixedResult()
    posted_on = [f for f in fixed if f.review_comment_id is not None]
    if not posted_on:
        return result
    if comments is None:
        comments = await list_review_comments(client, pr)
    if threads is None:
        threads = await _threads(client, pr)
    by_comment = {t.first_comment_id: t for t in threads}
    replied = {
        c.in_reply_to_id
        for c in comments
        if c.in_reply_to_id is not None
        and _same_login(c.user, bot_login)
        and c.body.startswith(_FIXED_PREFIX)
    }
    existing = {c.id for c in comments}
    may_resolve = can_resolve_threads
    for f in posted_on:
        comment_id = f.review_comment_id
        assert comment_id is not None
        if comment_id not in existing:  # deleted by someone: nothing to close
            continue
        thread = by_comment.get(comment_id)
        if (thread is not None and thread.is_resolved) or comment_id in replied:
            continue
        if may_resolve and thread is not None:
            try:
                if await resolve_thread(client, thread.id):
                    result.resolved += 1
                    continue
            except ForgeError as error:
                log.warning("thread_not_resolved", thread=thread.id, error=str(error))
            may_resolve = False  # FORBIDDEN once is FORBIDDEN for every thread
        sha = f.fixed_sha or head_sha
        try:
            await reply_in_thread(client, pr, comment_id, FIXED_REPLY.format(sha=sha[:7]))
            result.replied += 1
        except ForgeError as error:
            log.warning("fixed_reply_failed", comment_id=comment_id, error=str(error))
    return result


# -- the advisory shown ----------------------------------------------------------------------


def _plural(n: int, one: str, many: str) -> str:
    return one.format(n=n) if n == 1 else many.format(n=n)


def _kept_critical_note(kept: Sequence[tuple[str, str]]) -> str:
    """Who dismissed the critical findings that stay (the renderer neutralises mentions)."""
    waived = "no dismissal waives a critical finding"
    if len(kept) == 1:
        ((title, login),) = kept
        return (
            f'The critical finding "{" ".join(title.split())}" was dismissed by @{login}; it '
            f"stays in the advisory and on the check run ({waived})."
        )
    named = ", ".join(f'"{" ".join(title.split())}" by @{login}' for title, login in kept)
    return (
        f"{len(kept)} critical findings were dismissed and stay in the advisory and on the "
        f"check run ({waived}): {named}."
    )


def _filtered(
    advisory: Advisory,
    dropped: Sequence[MergedFinding],
    dismissed: set[str],
    lines: DiffLines,
    result: InlineResult,
) -> Advisory:
    """The advisory without the dropped findings (merged, top, and each seat's own, so no
    collapsed section shows them either: `dismissed` holds no critical finding's
    fingerprint), with what happened said first."""
    gone = {(f.path, f.start_line, f.title) for f in dropped}
    findings = [f for f in advisory.findings if (f.path, f.start_line, f.title) not in gone]
    top = [
        t
        for t in advisory.top_findings
        if t.kind != "finding" or (t.path, t.start_line, t.title) not in gone
    ]
    said: list[str] = []
    shown = result.posted + result.already
    if shown:
        text = _plural(
            shown,
            "{n} finding posted as a review comment on its line",
            "{n} findings posted as review comments on their lines",
        )
        if result.already and result.posted:
            text += f" ({result.already} of them by an earlier review)"
        said.append(text + ".")
    if result.dismissed:
        said.append(
            _plural(
                result.dismissed,
                "{n} finding dismissed earlier is not raised again.",
                "{n} findings dismissed earlier are not raised again.",
            )
        )
    if result.kept_critical:
        said.append(_kept_critical_note(result.kept_critical))
    if result.fixed.resolved or result.fixed.replied:
        n = result.fixed.resolved + result.fixed.replied
        said.append(
            _plural(
                n,
                "{n} review thread closed: its finding was fixed.",
                "{n} review threads closed: their findings were fixed.",
            )
        )
    if result.error:
        said.append(
            f"The review comments could not be posted ({result.error}); the findings are "
            "listed here."
        )
    if not (said or dropped):
        return advisory
    seats = []
    for seat in advisory.seats:
        own = seat.assessment.findings if seat.assessment is not None else []
        kept = [
            f
            for f in own
            if fingerprint(f.path, f.title, lines.line(f.path, f.start_line)) not in dismissed
        ]
        if seat.assessment is not None and len(kept) != len(own):
            seat = seat.model_copy(
                update={"assessment": seat.assessment.model_copy(update={"findings": kept})}
            )
        seats.append(seat)
    # The conditions stay as they are: only a critical finding adds one ("Resolve the
    # critical finding: ..."), and no critical finding is dropped.
    return advisory.model_copy(
        update={
            "findings": findings,
            "top_findings": top,
            "seats": seats,
            "notes": [*said, *advisory.notes],
        }
    )
