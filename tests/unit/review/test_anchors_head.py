"""Anchors keep what the seat cited: a line the head file has stays where it is.

The shape of ragflow#6691: `rag/extractor.py` (300 lines) changes in two hunks, head lines
204-211 (added 207-208) and 213-222 (added 216-219). Every seat cited line 196 - a `set`
still `.extend`ed, unchanged, 8 lines above the first hunk - with a one-line fix; another
finding cited 206-224. The context is built by `build_context` from the diff and the head,
as a review builds it; the advisory is anchored against it and rendered as people see it:
the sticky comment, the terminal, the transcript, the check run, the inline review.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.context import BuiltContext, PullRequestMeta, build_context
from bot.council.advisory import Advisory, MergedFinding, Resolution, TopFinding
from bot.github.client import RepoClient
from bot.github.forge import GitHubForge
from bot.pr.followup.inline import publish_inline
from bot.render import render_check_run, render_comment
from bot.render.terminal import render_text
from bot.render.transcript import transcript_html
from bot.review.anchors import DiffLines, HeadLines, anchor_advisory, place
from tests.support.diffs import diff_of
from tests.support.github_app import github_app
from tests.support.github_reviews import reviews_of
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app
from tests.unit.render.test_transcript import record

PATH = "rag/extractor.py"
HEAD = "6691" * 10
FIX = "        entities = []"


class EverySeat(dict[str, list[dict[str, Any]]]):
    """A `CouncilScript`'s findings: the same from whichever personas the board seats."""

    def __init__(self, findings: list[dict[str, Any]]) -> None:
        super().__init__()
        self.findings = findings

    def get(self, key: str, default: object = None) -> list[dict[str, Any]]:
        return self.findings


def source(after: bool) -> str:
    """rag/extractor.py before the change or at head."""
    lines = [f"        value_{n} = compute({n})" for n in range(1, 301)]
    lines[195] = "        entities = set()"  # line 196: a set...
    lines[206] = "        entities.extend(found)"  # ...still extended at 207
    if after:
        lines[206] = "        entities.extend(found_in(chunk))"
        lines[207] = "        value_208 = compute(208, cache=True)"
        for n in range(216, 220):
            lines[n - 1] = f"        value_{n} = compute({n}, cache=True)"
    return "\n".join(lines) + "\n"


DIFF = diff_of(PATH, source(False), source(True))


def _build(head: str | None = source(True)) -> BuiltContext:
    async def read(path: str) -> bytes | None:
        return head.encode() if path == PATH and head is not None else None

    return asyncio.run(build_context(PullRequestMeta(title="Fix extraction"), DIFF, [PATH], read))


@functools.cache
def built() -> BuiltContext:
    """The context of the change, its head read."""
    return _build()


def _finding(
    title: str, start: int | None, end: int | None = None, *, path: str = PATH, **extra: object
) -> MergedFinding:
    return MergedFinding.model_validate(
        {
            "severity": "major",
            "path": path,
            "start_line": start,
            "end_line": end,
            "title": title,
            "detail": f"{title}: it matters.",
            "raised_by": ["s1", "s2", "s3"],
            "consensus": 3,
            **extra,
        }
    )


SET_EXTENDED = _finding("A set is extended", 196, replacement=FIX)
CONTEXT = _finding("The chunk loop swallows errors", 205)
RANGE = _finding("The cache key ignores the chunk", 206, 224, replacement="x = 1")
PAST_END = _finding("A line the file does not have", 900)
ELSEWHERE = _finding("Another file", 3, path="rag/other.py")


def _advisory(*findings: MergedFinding) -> Advisory:
    return Advisory(
        deliberation_id="d-6691",
        protocol="council",
        topic="Is it ready?",
        resolution=Resolution.APPROVED_WITH_CONDITIONS,
        findings=list(findings),
        top_findings=[
            TopFinding(
                kind="finding",
                severity="critical",
                path=PATH,
                start_line=196,
                title="A set is extended",
                raised_by=["s1", "s2"],
            )
        ],
        conditions=["Make entities a list."],
    )


def test_the_builder_records_the_hunks_and_the_heads_length() -> None:
    assert built().changed_lines == {PATH: [(207, 208), (216, 219)]}
    assert built().hunk_lines == {PATH: [(204, 211), (213, 222)]}
    assert built().head_line_counts == {PATH: 300}
    # A context stored before these were kept still loads (and anchors to its added lines).
    old = built().model_dump(exclude={"hunk_lines", "head_line_counts"})
    stored = BuiltContext.model_validate(old)
    assert stored.hunk_lines == {} and stored.head_line_counts == {}
    assert anchor_advisory(_advisory(CONTEXT), stored).findings[0].start_line == 207  # moved


def test_the_6691_shape_keeps_every_cited_line_and_its_fix() -> None:
    anchored = anchor_advisory(
        _advisory(SET_EXTENDED, CONTEXT, RANGE, PAST_END, ELSEWHERE), built()
    )
    got = [(f.start_line, f.end_line, f.outside_diff, f.replacement) for f in anchored.findings]
    assert got == [
        (196, None, True, FIX),  # above the hunk: kept, with its one-line fix
        (205, None, False, None),  # a context line of a hunk
        (206, 224, False, "x = 1"),  # every line exists: exactly as cited, not 216-219
        (None, None, False, None),  # line 900 of 300
        (None, None, False, None),  # not in the diff
    ]
    assert anchored.findings[0].location() == "rag/extractor.py:L196 (outside the diff)"
    assert anchored.top_findings[0].location() == "rag/extractor.py:L196 (outside the diff)"
    assert anchored.notes == [
        "Anchors: 1 finding made file-level (the lines cited are not in the file at head); "
        "1 finding made file-level (the file is not part of this change)."
    ]


def test_what_people_see_of_a_finding_outside_the_diff() -> None:
    anchored = anchor_advisory(_advisory(SET_EXTENDED, CONTEXT), built())
    comment = render_comment(anchored)
    assert "rag/extractor.py:L196 (outside the diff)" in comment
    assert "rag/extractor.py:L205 (outside" not in comment and "rag/extractor.py:L205" in comment
    assert "rag/extractor.py:196 (outside the diff)" in render_text(anchored, width=200)
    page = transcript_html(record(), anchored, [])
    assert "<code>rag/extractor.py:196</code> (outside the diff)" in page
    output = render_check_run(anchored)
    where = [(a.path, a.start_line, a.end_line) for a in output.annotations]
    assert where == [(PATH, 196, 196), (PATH, 205, 205)]
    outside = output.annotations[0]
    assert "outside the diff" in outside.message
    assert outside.raw_details is not None and outside.raw_details.endswith(FIX)
    assert "outside the diff" not in output.annotations[1].message
    assert output.text is not None and "rag/extractor.py:L196 (outside the diff)" in output.text


def test_a_context_without_the_heads_length_moves_or_drops_only_what_it_cannot_place() -> None:
    unread = _build(head=None)
    assert unread.head_line_counts == {} and unread.hunk_lines == built().hunk_lines
    anchored = anchor_advisory(_advisory(SET_EXTENDED, CONTEXT, RANGE), unread)
    got = [(f.start_line, f.end_line, f.replacement) for f in anchored.findings]
    assert got == [(None, None, None), (205, None, None), (213, 222, None)]
    assert anchored.notes == [
        "Anchors: 1 finding clipped to the lines of the diff, 1 finding made file-level "
        "(the lines cited are not in the diff, and the file at head was not read)."
    ]


def test_a_range_past_the_end_is_clipped_and_a_line_past_it_moved() -> None:
    head = HeadLines({"a.py": [(8, 10)]}, {"a.py": 10})
    assert (place("a.py", 9, 14, head).lines, place("a.py", 9, 14, head).outcome) == (
        (9, 10),
        "clipped",
    )
    moved = place("a.py", 12, None, head)
    assert (moved.lines, moved.outcome, moved.reason) == ((10, None), "moved", "past-end")
    assert place("a.py", 2, 3, head).outside_diff
    clipped = anchor_advisory(_advisory(_finding("x", 9, 14, path="a.py", replacement="y")), head)
    assert (clipped.findings[0].start_line, clipped.findings[0].replacement) == (9, None)
    assert clipped.notes == [
        "Anchors: 1 finding clipped to the lines the file has "
        "(the lines cited are not in the file at head)."
    ]
    gone = HeadLines({"old.py": []}, {"old.py": 0})  # deleted: no line at head
    assert place("old.py", 1, None, gone).outcome == "file-level"


def test_anchoring_twice_changes_nothing_more() -> None:
    once = anchor_advisory(_advisory(SET_EXTENDED, CONTEXT, RANGE, PAST_END), built())
    twice = anchor_advisory(once.model_copy(update={"notes": []}), built())
    assert twice.findings == once.findings and twice.notes == []


# -- any finding: what survives is a line the head has ---------------------------------------

HEAD_LINES = HeadLines(
    {"a.py": [(10, 14), (40, 45)], "new.py": [(1, 30)], "unread.py": [(5, 9)], "gone.py": []},
    {"a.py": 60, "new.py": 30, "gone.py": 0},  # unread.py: its head was not read
)


def _exists(path: str, line: int) -> bool:
    count = HEAD_LINES.line_counts.get(path)
    in_hunk = any(a <= line <= b for a, b in HEAD_LINES.hunks.get(path, []))
    return in_hunk or (count is not None and 1 <= line <= count)


cited = st.builds(
    lambda path, start, length: _finding(
        f"{path} {start}+{length}",
        start,
        start + length if length else None,
        path=path,
        replacement="fix",
    ),
    st.sampled_from([*HEAD_LINES.hunks, "elsewhere.py"]),
    st.integers(min_value=1, max_value=80),
    st.integers(min_value=0, max_value=30),
)


@given(st.lists(cited, max_size=10))
def test_every_anchor_on_a_line_the_head_has_survives(findings: list[MergedFinding]) -> None:
    anchored = anchor_advisory(_advisory(*findings), HEAD_LINES)
    for before, after in zip(findings, anchored.findings, strict=True):
        start, end = before.start_line or 0, before.end_line or before.start_line or 0
        if all(_exists(before.path, n) for n in range(start, end + 1)):
            assert (after.start_line, after.end_line, after.replacement) == (
                before.start_line,
                before.end_line,
                "fix",
            )
        else:
            assert after.replacement is None
        if after.start_line is not None:
            last = after.end_line or after.start_line
            assert all(_exists(after.path, n) for n in range(after.start_line, last + 1))
            touches = any(
                a <= last and b >= after.start_line for a, b in HEAD_LINES.hunks[after.path]
            )
            assert after.outside_diff is not touches
    for a in render_check_run(anchored).annotations:
        assert all(_exists(a.path, n) for n in range(a.start_line, a.end_line + 1)), a


# -- inline review comments: on hunk lines, never outside the diff ---------------------------


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.reset()
    install_app(fake_github)
    fake_github.add_repo(REPO, installation_id=INSTALLATION_ID, files={PATH: source(False)})
    fake_github.add_pull(
        REPO, 1, title="t", body="b", head_sha=HEAD, diff=DIFF, files_at_head={PATH: source(True)}
    )
    return fake_github


@pytest.fixture
async def client(fake: FakeGitHub) -> AsyncIterator[RepoClient]:
    async with github_app(fake) as app, app.for_installation(INSTALLATION_ID, REPO) as client:
        yield client


def test_placement_takes_every_line_of_a_hunk_the_review_read() -> None:
    lines = DiffLines.from_diff(DIFF, built().hunk_lines)
    assert lines.placement(PATH, 205, None) == (None, 205)  # context
    assert lines.placement(PATH, 204, 208) == (204, 208)  # context and added, one hunk
    assert lines.placement(PATH, 196, None) is None  # outside every hunk
    only_first = DiffLines.from_diff(DIFF, {PATH: [(204, 211)]})  # the review read one hunk
    assert only_first.placement(PATH, 214, None) is None


async def test_the_finding_outside_the_diff_is_not_posted_inline(
    fake: FakeGitHub, client: RepoClient
) -> None:
    anchored = anchor_advisory(_advisory(SET_EXTENDED, CONTEXT), built())
    lines = DiffLines.from_diff(DIFF, built().hunk_lines)
    result = await publish_inline(
        GitHubForge(client), 1, HEAD, anchored, lines, None,
        bot_login=fake.app_login, pr_author="octocat", can_resolve_threads=True,
    )  # fmt: skip
    assert (result.posted, result.off_diff, result.error) == (1, 1, None)
    posts = fake.calls_to("POST", rf"/repos/{REPO}/pulls/1/reviews")
    assert [p.status for p in posts] == [200]
    (comment,) = reviews_of(fake).comments(REPO, 1)
    assert (comment.path, comment.start_line, comment.line) == (PATH, None, 205)
    assert "The chunk loop swallows errors" in comment.body
    sent = [c["line"] for p in posts for c in (p.json or {})["comments"]]
    assert sent == [205]  # 196 was never asked for


async def test_the_fake_refuses_a_line_outside_the_diff_as_github_does(
    fake: FakeGitHub, client: RepoClient
) -> None:
    from bot.forge.errors import ForgeValidationError
    from bot.github.reviews import create_review
    from tests.support.github_reviews import LINE_NOT_IN_DIFF

    outside = {"path": PATH, "line": 196, "side": "RIGHT", "body": "a set"}
    with pytest.raises(ForgeValidationError) as refused:
        await create_review(client, 1, commit_id=HEAD, body="", comments=[outside])
    assert LINE_NOT_IN_DIFF in refused.value.reason
    assert reviews_of(fake).reviews(REPO, 1) == []


def test_a_finding_on_a_context_line_has_one_fingerprint_tracked_and_posted() -> None:
    """The store records a finding by its tracked fingerprint and, posted inline, by the
    comment's: on a context line both read that line's text (one row, not two)."""
    from bot.pr.followup.markers import finding_fingerprint
    from bot.review.fingerprints import fingerprint
    from bot.review.rereview import FindingTracking, added_lines

    (tracked,) = FindingTracking(added=added_lines(DIFF)).raised([CONTEXT])
    assert tracked.fingerprint == finding_fingerprint(CONTEXT, DiffLines.from_diff(DIFF))
    assert tracked.fingerprint == fingerprint(PATH, CONTEXT.title, source(True).split("\n")[204])
