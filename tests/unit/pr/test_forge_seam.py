"""The forge seam: a second forge, written here with only the required part of
`bot.forge.Forge` (no reactions, no annotations, no buttons, no `neutral`, no thread
resolution), driven through the pull-request service, which falls back for each, and
through a pull request's review source, which reads its files at a ref."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Self

import pytest

from bot.council.advisory import Resolution
from bot.forge import (
    BlobCache,
    Capabilities,
    Comparison,
    Forge,
    ForgeError,
    ForgeValidationError,
    PostedComment,
    PullDiff,
    PullInfo,
    RefFiles,
)
from bot.forge.cache import MemoryBlobCache
from bot.forge.reviews import LineComment, ReviewComment, ReviewThread
from bot.pr.admission import (
    DENIED,
    Skip,
    acknowledge,
    admit_automatic,
    refuse,
    reply_failure,
)
from bot.pr.comment import COMMENT_MAX_CHARS, post_sticky
from bot.pr.failures import explain_failure
from bot.pr.review import without_verdict
from bot.pr.status import StatusRun, settle
from bot.render.checks import CheckRunAction, CheckRunOutput
from bot.render.conclusion import Conclusion
from bot.review.sources import PullSource

BARE = Capabilities(
    annotations=False, buttons=False, neutral=False, reactions=False, resolve_threads=False
)
LIMIT = 3_000  # this forge refuses longer comments


@dataclass
class Completed:
    status_id: int
    output: CheckRunOutput
    conclusion: Conclusion
    actions: tuple[CheckRunAction, ...]


@dataclass
class BareStatus:
    """A commit status: created, described, concluded (GitLab's and Gitea's shape)."""

    completed: list[Completed] = field(default_factory=list)

    async def create(self, head_sha: str, *, external_id: str, title: str, summary: str) -> int:
        return 7

    async def find(self, head_sha: str, external_id: str) -> int | None:
        return None

    async def progress(self, check_run_id: int, summary: str, *, title: str | None = None) -> bool:
        return True

    async def note(self, check_run_id: int, title: str, summary: str) -> None:
        return None

    async def complete(
        self,
        check_run_id: int,
        output: CheckRunOutput,
        conclusion: Conclusion,
        *,
        details_url: str | None = None,
        actions: Sequence[CheckRunAction] = (),
    ) -> None:
        self.completed.append(Completed(check_run_id, output, conclusion, tuple(actions)))

    async def cancel(self, check_run_id: int, reason: str) -> None:
        return None


@dataclass(frozen=True)
class Blob:
    sha: str


@dataclass
class BareFiles:
    """The files at a ref, all in memory (no archive to fetch)."""

    blobs: dict[str, bytes]
    truncated: bool = False

    @property
    def files(self) -> list[str]:
        return sorted(self.blobs)

    @property
    def entries(self) -> dict[str, Blob]:
        return {
            p: Blob(hashlib.sha1(b, usedforsecurity=False).hexdigest())
            for p, b in self.blobs.items()
        }

    async def expect(self, paths: Iterable[str]) -> None:
        return None

    async def read(self, path: str) -> bytes | None:
        return self.blobs.get(path)

    async def read_indexed(self, path: str) -> bytes | None:
        return self.blobs.get(path)

    def index_note(self) -> str | None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


@dataclass
class BareForge:
    """Only the required part of the protocol."""

    status_report: BareStatus = field(default_factory=BareStatus)
    comments: dict[int, str] = field(default_factory=dict)
    refused: list[int] = field(default_factory=list)  # lengths refused as too long
    diff_text: str = ""
    refs: dict[str, dict[str, bytes]] = field(default_factory=dict)  # ref -> path -> bytes

    @property
    def full_name(self) -> str:
        return "group/project"

    @property
    def capabilities(self) -> Capabilities:
        return BARE

    async def pull(self, number: int) -> PullInfo:
        return PullInfo(
            number=number,
            title="t",
            body="",
            head_sha="a" * 40,
            head_ref="feature",
            head_repo="group/project",
            base_ref="main",
            base_repo="group/project",
            default_branch="main",
            draft=False,
            state="closed",
            merged=False,
            labels=[],
            author_login="author",
        )

    async def diff(self, number: int) -> PullDiff:
        return PullDiff(text=self.diff_text)

    async def can_trigger(self, login: str) -> bool:
        return True

    async def reply(self, pr: int, body: str) -> PostedComment:
        return PostedComment(id=1, html_url="https://forge.example/c/1")

    async def upsert_sticky(self, pr: int, body: str, login: str) -> PostedComment:
        if len(body) > LIMIT:
            self.refused.append(len(body))
            raise ForgeValidationError("Note is too long", status=400)
        self.comments[pr] = body
        return PostedComment(id=2, html_url="https://forge.example/c/2")

    def comment_too_long(self, error: ForgeError) -> bool:
        return isinstance(error, ForgeValidationError) and "too long" in error.reason

    def status(self, *, update_interval_s: float) -> BareStatus:
        return self.status_report

    async def files_at(
        self,
        ref: str,
        cache: BlobCache,
        *,
        max_file_bytes: int,
        archive_max_bytes: int,
        blob_reads: int = 3,
        also: Sequence[RefFiles] = (),
    ) -> BareFiles:
        return BareFiles(self.refs.get(ref, {}))

    async def commit_messages(self, number: int) -> list[str]:
        return ["Add the parser"]

    async def compare(self, base: str, head: str) -> Comparison:
        return Comparison(status="missing")

    async def setup_config(self, branch: str, cache: BlobCache) -> str | None:
        return None

    async def setup_agents(self, branch: str, cache: BlobCache) -> dict[str, str]:
        return {}

    @property
    def org_config_repo(self) -> str:
        return "group/.council"

    # review comments and threads: each comment its own thread, none resolvable (Gitea's)
    notes: list[ReviewComment] = field(default_factory=list)

    async def review_comments(self, pr: int) -> list[ReviewComment]:
        return list(self.notes)

    async def review_threads(self, pr: int) -> list[ReviewThread]:
        return []

    async def post_review(
        self, pr: int, *, commit_id: str, body: str, comments: Sequence[LineComment]
    ) -> int:
        for c in comments:
            self.notes.append(
                ReviewComment(
                    id=100 + len(self.notes), path=c.path, line=c.line, body=c.body, user="council"
                )
            )
        return 1

    async def reply_in_thread(self, pr: int, comment_id: int, body: str) -> int:
        reply = ReviewComment(
            id=100 + len(self.notes), body=body, user="council", in_reply_to_id=comment_id
        )
        self.notes.append(reply)
        return reply.id

    async def review_comment_reactions(self, comment_id: int) -> list[tuple[str, str]]:
        return []

    async def resolve_thread(self, thread_id: str) -> bool:
        return False

    async def can_write(self, login: str) -> bool:
        return True

    async def approvals(self, pr: int, head_sha: str) -> list[str]:
        return []


def test_the_bare_forge_is_a_forge_without_the_optional_parts() -> None:
    forge: Forge = BareForge()
    assert not hasattr(forge, "react")  # no `Reactions`: "seen" is skipped
    assert forge.capabilities == BARE


async def test_a_pull_request_is_gathered_through_the_seam() -> None:
    """The review source reads the diff, the commits and the files at the head and on the
    default branch through the forge, never a forge's client."""
    forge = BareForge(
        diff_text="--- a/calc.py\n+++ b/calc.py\n@@ -1 +1,2 @@\n x = 1\n+y = x + 1\n",
        refs={"a" * 40: {"calc.py": b"x = 1\ny = x + 1\n"}, "main": {"README.md": b"# calc\n"}},
    )
    source = PullSource(forge, await forge.pull(4), cache=MemoryBlobCache())
    gathered = await source.gather(20_000, [])
    assert [f.path for f in gathered.built.files] == ["calc.py"]
    assert gathered.pr_diff == forge.diff_text and gathered.notes == []


async def test_the_sticky_comment_is_rendered_shorter_until_the_forge_takes_it() -> None:
    forge = BareForge()

    def render(limit: int) -> str:
        return "x" * limit

    posted = await post_sticky(forge, 5, render, "council")
    assert posted.html_url == "https://forge.example/c/2"
    assert forge.refused == [COMMENT_MAX_CHARS, 32_500, 16_250, 8_125, 4_062]
    assert len(forge.comments[5]) == 2_031


async def test_a_comment_still_refused_at_the_shortest_gives_up() -> None:
    forge = BareForge()
    with pytest.raises(ForgeValidationError, match="too long"):
        await post_sticky(forge, 5, lambda limit: "x" * 5_000, "council")
    assert forge.refused == [5_000, 5_000, 5_000, 5_000]  # 65,000, 2,500, 1,250, 1,000
    assert forge.comments == {}


@pytest.mark.parametrize(
    ("capabilities", "conclusion", "actions"),
    [(BARE, "success", ()), (Capabilities(), "neutral", "buttons")],
)
async def test_without_neutral_or_buttons_the_status_falls_back(
    capabilities: Capabilities, conclusion: str, actions: object
) -> None:
    """An advisory gate's failed review is `neutral` on GitHub; on a forge without it,
    `success` (neither blocks a merge), and without buttons there are none."""
    forge = BareForge()
    run = StatusRun(forge.status(update_interval_s=0), capabilities, "a" * 40, "vote", None)
    run.gate = "advisory"
    await run.open("d-1", note="")  # a repository whose council files all loaded
    failed = without_verdict("d-1", "vote", "review", Resolution.FAILED, "It failed.")
    await run.without_verdict(failed)
    [done] = forge.status_report.completed
    assert done.conclusion == conclusion
    assert (done.actions == ()) == (actions == ())
    assert run.completed


def test_without_annotations_they_are_dropped_from_the_status() -> None:
    output = CheckRunOutput(
        title="Approved",
        summary="s",
        annotations=[
            {
                "path": "a.py",
                "start_line": 1,
                "end_line": 1,
                "annotation_level": "warning",
                "title": "t",
                "message": "m",
            }
        ],
    )
    shown, conclusion = settle(output, "success", BARE)
    assert shown.annotations == [] and conclusion == "success"
    kept, _ = settle(output, "success", Capabilities())
    assert len(kept.annotations) == 1


async def test_admission_reads_the_pull_request_through_the_seam() -> None:
    pull = await BareForge().pull(3)
    with pytest.raises(Skip, match="the pull request is closed"):
        admit_automatic(_Push(), pull, config=None)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Push:
    trigger: str = "push"
    label: str | None = None
    head_sha: str | None = None


class _Log:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, event: str, **fields: object) -> None:
        self.warnings.append(event)


@dataclass
class _SeenForge(BareForge):
    """The bare forge with an emoji API, but not the `reactions` capability."""

    reacted: list[int] = field(default_factory=list)

    async def react(self, comment_id: int, content: str = "eyes") -> None:
        self.reacted.append(comment_id)


async def test_without_reactions_seen_is_skipped() -> None:
    """`Capabilities.reactions` off (or no `react` at all): no emoji, no error; the review
    itself answers the comment."""
    log = _Log()
    await acknowledge(BareForge(), 11, log)
    forge = _SeenForge()
    await acknowledge(forge, 11, log)
    assert forge.reacted == [] and log.warnings == []


@dataclass
class _Window:
    open: bool

    async def first_in_window(self, pr: int) -> bool:
        return self.open


@dataclass(frozen=True)
class _Command:
    trigger: str = "command"
    sender_login: str = "octocat"
    delivery_id: str = "d-9"


@dataclass
class _ReplyingForge(BareForge):
    replies: list[str] = field(default_factory=list)

    async def reply(self, pr: int, body: str) -> PostedComment:
        self.replies.append(body)
        return PostedComment(id=3, html_url="https://forge.example/c/3")


async def test_a_refusal_once_per_window_and_a_failure_said_to_the_commenter() -> None:
    forge = _ReplyingForge()
    await refuse(forge, _Window(open=True), 5, "octocat")
    await refuse(forge, _Window(open=False), 5, "octocat")
    await reply_failure(forge, _Command(), 5, TimeoutError(), _Log())
    await reply_failure(forge, _Command(trigger="push"), 5, TimeoutError(), _Log())
    assert forge.replies == [
        f"@octocat {DENIED}",
        f"@octocat {explain_failure(TimeoutError(), delivery_id='d-9')}",
    ]
