"""Merging the seats' findings into one list attributed to everyone who raised each issue."""

from __future__ import annotations

import itertools

import pytest

from bot.council.findings import (
    TEXT_COSINE,
    candidate_pair,
    merge_candidates,
    merge_findings,
    same_issue,
    text_similarity,
)
from bot.council.merge_groups import resolve_groups
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


# --- one issue in any wording: the fallback similarity and the chair's groups -----------------

# The set `bot.council.findings` calibrated `TEXT_COSINE` and `TITLE_WEIGHT` on: four issues,
# each worded three ways as different models word it (title, detail), and different issues
# reported on the same lines as one of them.
CALIBRATION: dict[str, list[tuple[str, str]]] = {
    "retry": [
        (
            "Retry loop has no upper bound",
            "The retry in fetch() loops forever when the upstream keeps failing; nothing caps "
            "the attempts.",
        ),
        (
            "Unbounded retries on upstream failure",
            "fetch() retries without a limit, so a failing upstream keeps the worker busy forever.",
        ),
        (
            "No cap on retry attempts",
            "There is no maximum number of attempts: the while loop retries the request "
            "indefinitely when the call fails.",
        ),
    ],
    "sql": [
        (
            "SQL injection in user search",
            "The search term is interpolated into the SQL string with an f-string, so a "
            "crafted name can run arbitrary SQL.",
        ),
        (
            "Unsanitized input reaches the query",
            "request.args['name'] is formatted directly into the query text instead of being "
            "passed as a bound parameter.",
        ),
        (
            "Query built by string formatting",
            "Building the WHERE clause with f-strings from user input allows injection; use "
            "parameters.",
        ),
    ],
    "lock": [
        (
            "Race on the shared cache dict",
            "Two requests can write the cache at once: the check-then-set is not guarded by "
            "the lock.",
        ),
        (
            "Missing lock around cache update",
            "cache[key] is read and written without holding self._lock, so concurrent "
            "requests race.",
        ),
        (
            "Thread-unsafe cache write",
            "The cache is mutated from several threads with no synchronization; updates can "
            "be lost.",
        ),
    ],
    "token": [
        (
            "Access token written to the log",
            "logger.info prints the full headers, including the Authorization bearer token.",
        ),
        (
            "Secret leaked in debug logging",
            "The debug log line dumps request headers, exposing the bearer token to anyone "
            "reading logs.",
        ),
        (
            "Credentials appear in logs",
            "Logging the headers dict puts the Authorization token in plain text into the log "
            "output.",
        ),
    ],
}
DIFFERENT_ON_THE_SAME_LINES: list[tuple[tuple[str, str], tuple[str, str]]] = [
    (
        CALIBRATION["retry"][0],
        (
            "Secret token logged on every retry",
            "Each retry logs the full request including the Authorization header, leaking "
            "the token.",
        ),
    ),
    (
        CALIBRATION["retry"][0],
        (
            "Retry sleeps without jitter",
            "All workers retry at the same fixed interval, so a recovering upstream gets a "
            "thundering herd.",
        ),
    ),
    (
        CALIBRATION["sql"][0],
        (
            "Search has no pagination",
            "The user search query returns every matching row; a broad term loads the whole table.",
        ),
    ),
    (
        CALIBRATION["lock"][0],
        (
            "Cache never evicts entries",
            "The cache dict grows without bound: nothing removes old keys, so memory use "
            "grows forever.",
        ),
    ),
    (
        CALIBRATION["token"][0],
        (
            "Headers logged at info level are noisy",
            "Logging every request's headers at info floods the log; use debug.",
        ),
    ),
    (
        CALIBRATION["retry"][1],
        (
            "Retry swallows the original exception",
            "When the retries end, the last error is discarded and a generic failure is "
            "raised instead.",
        ),
    ),
]


def worded(
    title: str,
    detail: str,
    start: int = 10,
    end: int | None = None,
    severity: Severity = "major",
    path: str = "app/db.py",
) -> Finding:
    return finding(title, path, start, end, severity, detail)


@pytest.mark.parametrize("issue", ["retry", "lock", "token"])
def test_three_wordings_of_one_issue_merge_by_title_and_detail(issue: str) -> None:
    wordings = CALIBRATION[issue]
    assert not any(same_issue(a[0], b[0]) for a, b in itertools.combinations(wordings, 2))
    merged = merge_findings([(f"s{n}", [worded(*w, start=10 + n)]) for n, w in enumerate(wordings)])
    assert [m.consensus for m in merged] == [3]


def test_the_calibration_keeps_every_different_issue_apart() -> None:
    for same, other in DIFFERENT_ON_THE_SAME_LINES:
        assert text_similarity(worded(*same), worded(*other)) < TEXT_COSINE, other[0]
        merged = merge_findings([("s1", [worded(*same)]), ("s2", [worded(*other)])])
        assert [m.consensus for m in merged] == [1, 1], other[0]


def test_two_different_issues_on_the_same_lines_stay_apart() -> None:
    unbounded = worded(*CALIBRATION["retry"][0], start=40, end=44)
    logged = worded(
        "Secret token logged on every retry",
        "Each retry logs the full request including the Authorization header, leaking the token.",
        start=40,
        end=44,
        severity="critical",
    )
    merged = merge_findings([("s1", [unbounded]), ("s2", [logged])])
    assert sorted((m.title, m.consensus) for m in merged) == [
        ("Retry loop has no upper bound", 1),
        ("Secret token logged on every retry", 1),
    ]


def test_the_similarity_never_joins_other_files_or_lines() -> None:
    a, b = CALIBRATION["lock"][:2]
    assert text_similarity(worded(*a), worded(*b)) >= TEXT_COSINE
    far = merge_findings([("s1", [worded(*a)]), ("s2", [worded(*b, start=30)])])
    other_file = merge_findings([("s1", [worded(*a)]), ("s2", [worded(*b, path="x.py")])])
    assert [m.consensus for m in far] == [m.consensus for m in other_file] == [1, 1]


def test_candidates_are_the_findings_sharing_a_file_and_lines() -> None:
    # Details that share no term: nothing reads alike elsewhere (see test_findings_across).
    def at(title: str, path: str = "app/db.py", start: int | None = 10) -> Finding:
        return finding(title, path, start, detail=title.lower() * 3)

    per_seat = [
        ("s1", [at("A"), at("B", path="other.py")]),
        ("s2", [at("C", start=12), at("D", start=50)]),
        ("s3", [at("E", start=None), at("F", path="./app/db.py", start=None)]),
    ]
    candidates = merge_candidates(per_seat)
    assert [(c.id, c.seat, c.index, c.finding.title) for c in candidates] == [
        ("F1", "s1", 0, "A"),
        ("F2", "s2", 0, "C"),
        ("F3", "s3", 0, "E"),
        ("F4", "s3", 1, "F"),  # file-wide only with file-wide
    ]
    assert candidate_pair(finding("A", start=10, end=12), finding("B", start=14))
    assert not candidate_pair(finding("A", start=10), finding("B", start=None))
    assert merge_candidates([("s1", [at("A")]), ("s2", [at("B", start=40)])]) == []


def test_the_chairs_groups_are_checked_against_the_candidates() -> None:
    def at(title: str, path: str, start: int, detail: str) -> Finding:
        return finding(title, path, start, detail=detail)

    per_seat = [
        (
            "s1",
            [
                at("Timeout missing", "app/db.py", 10, "The HTTP call can wait forever."),
                at("Port unchecked", "b.py", 5, "int() raises on a bad PORT."),
            ],
        ),
        ("s2", [at("Worker may hang", "app/db.py", 11, "A stalled upstream blocks it.")]),
        (
            "s3",
            [
                at("Bad PORT crashes", "b.py", 6, "A non-numeric PORT is a ValueError."),
                at("Slow loop", "app/db.py", 12, "Quadratic scan of the rows."),
            ],
        ),
    ]
    candidates = merge_candidates(per_seat)
    ids = {c.finding.title: c.id for c in candidates}
    assert ids == {
        "Timeout missing": "F1",
        "Port unchecked": "F2",
        "Worker may hang": "F3",
        "Bad PORT crashes": "F4",
        "Slow loop": "F5",
    }
    resolved = resolve_groups(
        candidates,
        [
            # Two files that share no title word, code name or wording: merged in their
            # two parts; F77 unknown.
            ["F1", "F2", "f3", "F4", "F77"],
            ["F3", "F5"],  # F3 is already merged by the first group: only F5 is left, alone
            ["F2"],  # one finding: nothing to merge, nothing said
        ],
    )
    assert resolved.groups == [[("s1", 0), ("s2", 0)], [("s1", 1), ("s3", 0)]]
    assert resolved.notes() == [
        "The chair's group F1, F2, F3, F4, F77 was merged as F1, F3 and F2, F4 without F77: "
        "F77 is not a finding it was shown; F1, F3 and F2, F4 share no file, title word or "
        "code name.",
        "The chair's group F3, F5 was not merged: F3 is in the earlier group F1, F3.",
    ]
    merged = merge_findings(per_seat, resolved.groups)
    assert sorted((m.path, m.consensus) for m in merged) == [
        ("app/db.py", 1),
        ("app/db.py", 2),
        ("b.py", 2),
    ]


def test_with_the_chairs_groups_the_wording_alone_does_not_merge() -> None:
    """The chair's answer replaces the similarity; near-identical titles still merge."""
    a, b = CALIBRATION["lock"][:2]
    per_seat = [
        ("s1", [worded(*a), finding("Race on cache refresh", start=40)]),
        ("s2", [worded(*b), finding("Race on the cache refresh", start=41)]),
    ]
    assert [m.consensus for m in merge_findings(per_seat)] == [2, 2]
    assert [m.consensus for m in merge_findings(per_seat, [])] == [2, 1, 1]
    # A key naming no finding is ignored.
    grouped = merge_findings(per_seat, [[("s1", 0), ("s2", 0), ("s9", 3)]])
    assert [m.consensus for m in grouped] == [2, 2]
