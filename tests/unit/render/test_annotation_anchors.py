"""Check-run annotations name only lines the diff adds; file-level findings get none."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.council.advisory import Advisory, MergedFinding, Resolution
from bot.render import render_check_run
from bot.review.anchors import anchor_advisory

CHANGED = {"app/auth.py": [(10, 14), (40, 40)], "app/new.py": [(1, 90)], "app/gone.py": []}
PATHS = [*CHANGED, "docs/untouched.md"]


def _finding(path: str, start: int | None, end: int | None) -> MergedFinding:
    return MergedFinding(
        severity="major",
        path=path,
        start_line=start,
        end_line=end,
        title=f"{path} {start}-{end}",
        detail="d",
        raised_by=["seat-1"],
        consensus=1,
    )


def _advisory(findings: list[MergedFinding]) -> Advisory:
    return Advisory(
        deliberation_id="d",
        protocol="council",
        topic="t",
        resolution=Resolution.APPROVED,
        findings=findings,
    )


def _added(path: str, line: int) -> bool:
    return any(a <= line <= b for a, b in CHANGED.get(path, []))


cited = st.builds(
    lambda path, start, length: _finding(path, start, start + length if length else None),
    st.sampled_from(PATHS),
    st.integers(min_value=1, max_value=120),
    st.integers(min_value=0, max_value=40),
)


@given(st.lists(cited, max_size=12))
def test_no_annotation_names_a_line_outside_the_diff(findings: list[MergedFinding]) -> None:
    output = render_check_run(anchor_advisory(_advisory(findings), CHANGED))
    for a in output.annotations:
        assert all(_added(a.path, n) for n in range(a.start_line, a.end_line + 1)), a


def test_moved_kept_and_file_level_findings_as_the_check_run_shows_them() -> None:
    findings = [
        _finding("app/auth.py", 12, 13),  # kept
        _finding("app/auth.py", 16, None),  # 2 off: moved to 14
        _finding("app/new.py", 86, None),  # kept: a new file's line 86
        _finding("app/auth.py", 60, None),  # 20 off: file-level
        _finding("docs/untouched.md", 3, None),  # not in the diff: file-level
    ]
    output = render_check_run(anchor_advisory(_advisory(findings), CHANGED))
    where = [(a.path, a.start_line, a.end_line) for a in output.annotations]
    assert where == [("app/auth.py", 12, 13), ("app/auth.py", 14, 14), ("app/new.py", 86, 86)]
    # The file-level ones are not annotated but the check run's text lists them by path.
    assert output.text is not None
    assert "- **major** app/auth.py: app/auth.py 60-None" in output.text
    assert "- **major** docs/untouched.md: docs/untouched.md 3-None" in output.text
    assert "- **major** app/auth.py:L14: app/auth.py 16-None" in output.text
