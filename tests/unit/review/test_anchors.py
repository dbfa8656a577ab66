"""Anchors that exist, given only runs of lines per file (no head length known): a line in
them exists, any other is moved or made file-level. With a context's hunks and lengths:
tests/unit/review/test_anchors_head.py."""

from __future__ import annotations

from bot.council.advisory import Advisory, MergedFinding, Resolution, SeatReport, TopFinding
from bot.council.schemas import Assessment, Finding
from bot.review.anchors import anchor, anchor_advisory

# app/auth.py adds lines 10-14 and 40; app/gone.py only deletes.
CHANGED = {"app/auth.py": [(10, 14), (40, 40)], "app/gone.py": []}


def test_a_range_inside_the_added_lines_is_kept() -> None:
    assert anchor("app/auth.py", 11, 13, CHANGED) == ((11, 13), "kept")
    assert anchor("app/auth.py", 40, None, CHANGED) == ((40, None), "kept")


def test_two_lines_off_moves_to_the_nearest_added_line() -> None:
    assert anchor("app/auth.py", 16, None, CHANGED) == ((14, None), "moved")
    assert anchor("app/auth.py", 8, None, CHANGED) == ((10, None), "moved")
    assert anchor("app/auth.py", 42, 43, CHANGED) == ((40, None), "moved")
    assert anchor("app/auth.py", 17, None, CHANGED) == ((14, None), "moved")  # 3 off: still


def test_twenty_lines_off_becomes_file_level() -> None:
    assert anchor("app/auth.py", 60, None, CHANGED) == ((None, None), "file-level")
    assert anchor("app/auth.py", 18, None, CHANGED) == ((None, None), "file-level")  # 4 off


def test_an_unknown_file_or_one_without_added_lines_is_file_level() -> None:
    assert anchor("app/other.py", 12, None, CHANGED) == ((None, None), "file-level")
    assert anchor("app/gone.py", 3, None, CHANGED) == ((None, None), "file-level")


def test_ranges_are_clipped_to_the_added_lines() -> None:
    assert anchor("app/auth.py", 5, 12, CHANGED) == ((10, 12), "clipped")
    assert anchor("app/auth.py", 12, 30, CHANGED) == ((12, 14), "clipped")
    # Over two runs: the run it covers most, never the unchanged lines between them.
    assert anchor("app/auth.py", 9, 45, CHANGED) == ((10, 14), "clipped")
    assert anchor("app/auth.py", 38, 41, CHANGED) == ((40, None), "clipped")


def test_a_file_level_finding_stays_file_level() -> None:
    assert anchor("app/auth.py", None, None, CHANGED) == ((None, None), "kept")


def _merged(path: str, start: int | None, end: int | None = None) -> MergedFinding:
    return MergedFinding(
        severity="major",
        path=path,
        start_line=start,
        end_line=end,
        title=f"at {start}",
        detail="d",
        raised_by=["seat-1"],
        consensus=1,
    )


def _advisory() -> Advisory:
    finding = Finding(severity="major", path="app/auth.py", start_line=16, title="t", detail="d")
    seat = SeatReport(
        seat_id="seat-1",
        label="Member A",
        persona_id="p",
        persona_name="P",
        model="anthropic:x",
        assessment=Assessment(
            verdict="APPROVE",
            score=8,
            summary="s",
            lens_scores=[],
            confidence=80,
            findings=[finding],
        ),
    )
    return Advisory(
        deliberation_id="d",
        protocol="council",
        topic="t",
        resolution=Resolution.APPROVED,
        seats=[seat],
        findings=[
            _merged("app/auth.py", 11, 12),
            _merged("app/auth.py", 16),
            _merged("app/auth.py", 90),
            _merged("docs/elsewhere.md", 3),
        ],
        top_findings=[
            TopFinding(
                kind="finding",
                severity="major",
                path="app/auth.py",
                start_line=90,
                title="t",
                raised_by=["seat-1"],
            ),
        ],
        notes=["single-model council"],
    )


def test_the_advisory_is_anchored_and_says_so() -> None:
    anchored = anchor_advisory(_advisory(), CHANGED)
    where = [(f.path, f.start_line, f.end_line) for f in anchored.findings]
    assert where == [
        ("app/auth.py", 11, 12),
        ("app/auth.py", 14, None),
        ("app/auth.py", None, None),
        ("docs/elsewhere.md", None, None),
    ]
    assert [f.location() for f in anchored.findings][1:] == [
        "app/auth.py:L14",
        "app/auth.py",
        "docs/elsewhere.md",
    ]
    assert anchored.top_findings[0].location() == "app/auth.py"
    seat = anchored.seats[0].assessment
    assert seat is not None and seat.findings[0].start_line == 14
    assert anchored.notes == [
        "single-model council",
        "Anchors: 1 finding moved to the nearest line of the diff, 1 finding made file-level "
        "(the lines cited are not in the diff, and the file at head was not read); "
        "1 finding made file-level (the file is not part of this change).",
    ]


def test_anchoring_twice_changes_nothing_more() -> None:
    once = anchor_advisory(_advisory(), CHANGED)
    twice = anchor_advisory(once.model_copy(update={"notes": []}), CHANGED)
    assert twice.findings == once.findings and twice.notes == []


def test_no_diff_to_check_against_leaves_the_advisory_alone() -> None:
    advisory = _advisory()
    assert anchor_advisory(advisory, {}) == advisory


def test_a_path_written_with_a_dot_or_a_diff_prefix_is_the_same_file() -> None:
    from bot.review.anchors import anchor

    changed = {"app/x.py": [(10, 12)]}
    for written in ("./app/x.py", "b/app/x.py", "/app/x.py"):
        assert anchor(written, 11, None, changed)[0] == (11, None), written
