"""After the advice: a finding is addressed when a later change touched its lines."""

from __future__ import annotations

from bot.context.diff import HunkRange, hunk_ranges
from bot.council.advisory import MergedFinding
from bot.github.fetch import PullFile
from bot.review.outcomes import touched

PATCH = (
    "@@ -10,3 +10,4 @@ def login(user):\n"
    "     check(user)\n"
    "-    password = 'admin'\n"
    "+    password = read_secret()\n"
    "+    audit(user)\n"
    "@@ -40 +41,0 @@\n"
    "-@@ -1 +1 @@ is a line, not a header\n"
)


def finding(start: int | None, end: int | None = None, path: str = "app/auth.py") -> MergedFinding:
    return MergedFinding(
        severity="critical",
        path=path,
        start_line=start,
        end_line=end,
        title="Hard-coded admin password",
        detail="Anyone can log in.",
        raised_by=["seat-1"],
        consensus=1,
    )


def changed(patch: str | None = PATCH) -> dict[str, PullFile]:
    file = PullFile(path="app/auth.py", status="modified", additions=2, deletions=2, patch=patch)
    return {file.path: file}


def test_hunk_ranges_read_every_header_and_only_headers() -> None:
    assert hunk_ranges(PATCH) == [HunkRange(10, 3, 10, 4), HunkRange(40, 1, 41, 0)]
    assert hunk_ranges("@@ -1,2 +1,2 @@\r\n-a\r\n+b\r\n") == [HunkRange(1, 2, 1, 2)]
    assert hunk_ranges("not a patch") == []


def test_a_finding_on_changed_lines_was_addressed() -> None:
    assert touched(finding(11), changed())
    assert touched(finding(5, 10), changed())  # overlaps the hunk's first line
    assert touched(finding(40), changed())  # a one-line hunk without a length


def test_a_finding_beside_the_change_was_not() -> None:
    assert not touched(finding(13, 20), changed())
    assert not touched(finding(1, 9), changed())
    assert not touched(finding(11, path="app/other.py"), changed())


def test_without_lines_or_a_patch_any_change_to_the_file_counts() -> None:
    assert touched(finding(None), changed())
    assert touched(finding(100), changed(patch=None))  # a binary file, or too big to show
