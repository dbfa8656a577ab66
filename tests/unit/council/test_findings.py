"""Merging the seats' findings into one list attributed to everyone who raised each issue."""

from __future__ import annotations

from bot.council.findings import merge_findings, same_issue
from bot.council.schemas import Finding, Severity


def finding(
    title: str,
    path: str = "app/db.py",
    start: int | None = 10,
    end: int | None = None,
    severity: Severity = "major",
    detail: str = "detail",
    suggestion: str | None = None,
) -> Finding:
    return Finding(
        severity=severity,
        path=path,
        start_line=start,
        end_line=end,
        title=title,
        detail=detail,
        suggestion=suggestion,
    )


def test_same_issue_on_overlapping_lines_is_one_finding_raised_by_both() -> None:
    merged = merge_findings(
        [
            ("s1", [finding("SQL injection in query builder", start=10, end=14, severity="major")]),
            (
                "s2",
                [
                    finding(
                        "SQL injection via the query builder",
                        path="./app/db.py",
                        start=13,
                        end=20,
                        severity="critical",
                        detail="User input is formatted into the SQL string.",
                        suggestion="Use bound parameters.",
                    )
                ],
            ),
        ]
    )
    assert len(merged) == 1
    m = merged[0]
    assert m.raised_by == ["s1", "s2"]
    assert m.consensus == 2
    assert m.severity == "critical"  # the highest
    assert m.detail == "User input is formatted into the SQL string."  # the longest
    assert m.suggestion == "Use bound parameters."
    assert (m.path, m.start_line, m.end_line) == ("app/db.py", 10, 20)  # union of ranges
    assert m.location() == "app/db.py:L10-L20"


def test_different_file_lines_or_issue_stay_apart() -> None:
    merged = merge_findings(
        [
            ("s1", [finding("Missing input validation", start=10)]),
            ("s2", [finding("Missing input validation", path="app/api.py", start=10)]),
            ("s3", [finding("Missing input validation", start=40)]),
            ("s4", [finding("N+1 queries in the order loop", start=10)]),
        ]
    )
    assert len(merged) == 4
    assert all(m.consensus == 1 for m in merged)


def test_lines_within_two_lines_of_each_other_overlap() -> None:
    merged = merge_findings(
        [
            ("s1", [finding("Unchecked return value", start=10)]),
            ("s2", [finding("Unchecked return value", start=12)]),
        ]
    )
    assert [m.raised_by for m in merged] == [["s1", "s2"]]


def test_file_wide_findings_merge_only_with_file_wide_findings() -> None:
    merged = merge_findings(
        [
            ("s1", [finding("No tests for the new module", start=None)]),
            ("s2", [finding("No tests for new module", start=None)]),
            ("s3", [finding("No tests for the new module", start=5)]),
        ]
    )
    by_consensus = sorted((m.consensus, m.start_line) for m in merged)
    assert by_consensus == [(1, 5), (2, None)]


def test_one_seat_raising_an_issue_twice_counts_once() -> None:
    merged = merge_findings(
        [
            (
                "s1",
                [
                    finding("Race on cache refresh", start=3),
                    finding("Race on the cache refresh", start=4),
                ],
            )
        ]
    )
    assert len(merged) == 1
    assert merged[0].raised_by == ["s1"]
    assert merged[0].consensus == 1


def test_order_is_severity_then_consensus_then_path_then_line() -> None:
    merged = merge_findings(
        [
            ("s1", [finding("Typo in log message", path="b.py", start=1, severity="nit")]),
            ("s2", [finding("Leaks file handle", path="z.py", start=5, severity="major")]),
            ("s3", [finding("Unbounded queue growth", path="a.py", start=9, severity="major")]),
            ("s4", [finding("Unbounded queue growth", path="a.py", start=9, severity="major")]),
            ("s5", [finding("Deadlock on shutdown", path="c.py", start=7, severity="critical")]),
            ("s6", [finding("Wrong default timeout", path="a.py", start=2, severity="major")]),
        ]
    )
    assert [(m.severity, m.path, m.start_line) for m in merged] == [
        ("critical", "c.py", 7),
        ("major", "a.py", 9),  # raised by two seats
        ("major", "a.py", 2),
        ("major", "z.py", 5),
        ("nit", "b.py", 1),
    ]


def test_result_does_not_depend_on_input_order() -> None:
    per_seat = [
        ("s1", [finding("Token written to the log", start=4), finding("Slow regex", start=30)]),
        ("s2", [finding("Token is written to logs", start=5, severity="critical")]),
        (
            "s3",
            [
                finding("Slow regex backtracking", start=31),
                finding("Token written to log", start=3),
            ],
        ),
    ]
    forward = merge_findings(per_seat)
    backward = merge_findings(list(reversed(per_seat)))
    assert [(m.title, m.severity, sorted(m.raised_by)) for m in forward] == [
        (m.title, m.severity, sorted(m.raised_by)) for m in backward
    ]
    assert [m.consensus for m in forward] == [3, 2]


def test_same_issue_similarity() -> None:
    assert same_issue("Missing tests for parser", "Parser is missing tests")
    assert same_issue("Hard-coded API key", "API key is hard-coded in the settings module")
    assert not same_issue("Hard-coded API key", "Slow database query")
    assert not same_issue("Missing tests", "Missing docs")


def test_no_findings() -> None:
    assert merge_findings([]) == []
    assert merge_findings([("s1", [])]) == []
