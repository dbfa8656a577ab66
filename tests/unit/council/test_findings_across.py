"""One issue at several places: the chair is asked about findings that read alike in other
files (or on distant lines), its groups may span them, the merged finding keeps one
location and lists the others in `also_at`, and every group the code refuses is said."""

from __future__ import annotations

import itertools

from bot.cli.report import advisory_json
from bot.council.advisory import Resolution
from bot.council.findings import (
    ELSEWHERE_COSINE,
    ELSEWHERE_MAX,
    code_names,
    merge_candidates,
    merge_findings,
    text_similarity,
)
from bot.council.merge_groups import resolve_groups
from bot.council.places import parse_location, places
from bot.council.schemas import Finding, Severity
from bot.github.fetch import PullFile
from bot.render import render_check_run, render_comment
from bot.render.checks import annotations_for
from bot.render.terminal import render_text
from bot.review.outcomes import touched
from tests.unit.council.test_findings import CALIBRATION, worded
from tests.unit.render.test_render import advisory, seat


def finding(
    title: str,
    detail: str,
    path: str,
    start: int | None,
    end: int | None = None,
    severity: Severity = "critical",
    replacement: str | None = None,
) -> Finding:
    return Finding(
        severity=severity,
        path=path,
        start_line=start,
        end_line=end,
        title=title,
        detail=detail,
        replacement=replacement,
    )


# The ragflow#6553 shape: two seats report one `None`-return bug, one where the function
# returns None, one where a caller uses the result unchecked.
SERVICE = finding(
    "get_by_id returns None for a missing document",
    "DocumentService.get_by_id now returns None when the id is unknown instead of raising; "
    "every caller that reads .kb_id from the result crashes with an AttributeError.",
    "api/db/services/document_service.py",
    338,
    340,
)
CALLER = finding(
    "Unchecked None from DocumentService.get_by_id",
    "The handler reads doc.kb_id right after get_by_id without a None check: a deleted "
    "document is a 500.",
    "api/apps/api_app.py",
    618,
)
OTHER = finding(
    "Pagination parameters are not validated",
    "page_size comes from the query string unbounded; a huge value loads the whole table.",
    "api/apps/kb_app.py",
    40,
    severity="minor",
)


def ragflow() -> list[tuple[str, list[Finding]]]:
    return [("seat-0", [SERVICE]), ("seat-1", [CALLER]), ("seat-2", [OTHER])]


def test_the_chair_is_shown_one_issue_in_two_files_and_its_group_makes_one_finding() -> None:
    per_seat = ragflow()
    candidates = merge_candidates(per_seat)
    # No two findings share a file: before, the chair was not even asked.
    assert [(c.id, c.finding.path) for c in candidates] == [
        ("F1", SERVICE.path),
        ("F2", CALLER.path),
    ]
    resolved = resolve_groups(candidates, [["F1", "F2"]])
    assert resolved.groups == [[("seat-0", 0), ("seat-1", 0)]] and resolved.notes() == []

    merged = merge_findings(per_seat, resolved.groups)
    assert len(merged) == 2
    one = merged[0]
    assert (one.severity, one.consensus, one.raised_by) == ("critical", 2, ["seat-0", "seat-1"])
    # One location, the representative's (most severe, then most detailed: the service's),
    # its lines not widened by the other file's; the other place listed.
    assert (one.path, one.start_line, one.end_line) == (SERVICE.path, 338, 340)
    assert one.title == SERVICE.title and one.detail == SERVICE.detail
    assert one.also_at == ["api/apps/api_app.py:L618"]
    assert merged[1].title == OTHER.title and merged[1].also_at == []


def test_the_more_severe_place_is_the_one_kept() -> None:
    minor = SERVICE.model_copy(update={"severity": "major"})
    merged = merge_findings([("s1", [minor]), ("s2", [CALLER])], [[("s1", 0), ("s2", 0)]])
    assert [(f.location(), f.also_at) for f in merged] == [
        ("api/apps/api_app.py:L618", ["api/db/services/document_service.py:L338-L340"])
    ]
    # Whatever the order the seats come in.
    again = merge_findings([("s2", [CALLER]), ("s1", [minor])], [[("s2", 0), ("s1", 0)]])
    assert again[0].location() == merged[0].location() and again[0].also_at == merged[0].also_at


def test_places_of_one_file_are_folded_only_when_their_lines_overlap() -> None:
    # Three seats: two on overlapping lines of one place, one 150 lines further down.
    near_a = finding(
        "Token compared with ==", "check_token leaks timing: == stops early.", "auth.py", 40, 44
    )
    near_b = finding("check_token not constant-time", "Use hmac.compare_digest.", "auth.py", 43)
    far = finding(
        "Same == compare in refresh", "refresh() compares tokens with ==.", "auth.py", 200
    )
    wide = finding("Auth module compares secrets unsafely", "Throughout.", "auth.py", None)
    merged = merge_findings(
        [("s1", [near_a]), ("s2", [near_b]), ("s3", [far, wide])],
        [[("s1", 0), ("s2", 0), ("s3", 0), ("s3", 1)]],
    )
    assert len(merged) == 1
    # The kept range is the union of its own place (40-44 and 43), never 40-200; the
    # file-wide member adds nothing to a location in its own file.
    assert (merged[0].start_line, merged[0].end_line) == (40, 44)
    assert merged[0].also_at == ["auth.py:L200"]
    assert merged[0].consensus == 3


def test_a_replacement_is_kept_only_for_the_kept_place() -> None:
    # The other file's finding has a replacement for "its" line 618; the kept place
    # (338-340) has none: no replacement rides along onto the wrong file.
    caller = CALLER.model_copy(update={"replacement": "if doc is None:\n    abort(404)"})
    merged = merge_findings([("s1", [SERVICE]), ("s2", [caller])], [[("s1", 0), ("s2", 0)]])
    assert merged[0].path == SERVICE.path and merged[0].replacement is None
    service = SERVICE.model_copy(update={"replacement": "raise LookupError(doc_id)"})
    merged = merge_findings([("s1", [service]), ("s2", [caller])], [[("s1", 0), ("s2", 0)]])
    assert merged[0].replacement == "raise LookupError(doc_id)"


def test_code_names_are_words_of_code_only() -> None:
    assert code_names("DocumentService.get_by_id returns None") == {
        "documentservice.get_by_id",
        "documentservice",
        "get_by_id",
    }
    assert code_names("fetchAll() leaks, run() twice, `Retry`") == {"fetchall", "run", "retry"}
    assert code_names("Port read from env unchecked, e.g. v1.2 with `None`") == set()


def test_findings_elsewhere_are_candidates_when_they_read_alike_calibrated() -> None:
    """`ELSEWHERE_COSINE` on the calibration set: every issue's three wordings are joined by
    pairs at or above it, and no two different issues in different code reach it."""
    for wordings in CALIBRATION.values():
        pairs = [
            (a, b)
            for a, b in itertools.combinations(range(3), 2)
            if text_similarity(worded(*wordings[a]), worded(*wordings[b])) >= ELSEWHERE_COSINE
        ]
        assert len(pairs) >= 2, wordings[0][0]  # two pairs of three join all three
    for (_, one), (_, other) in itertools.combinations(CALIBRATION.items(), 2):
        for a, b in itertools.product(one, other):
            assert text_similarity(worded(*a), worded(*b)) < ELSEWHERE_COSINE, (a[0], b[0])
    # So three wordings of one issue in three files are asked about; an unrelated one not.
    per_seat = [
        (f"s{n}", [worded(*w, path=f"svc/{n}.py")]) for n, w in enumerate(CALIBRATION["lock"])
    ]
    per_seat.append(("s9", [worded(*CALIBRATION["sql"][0], path="db.py")]))
    assert [c.seat for c in merge_candidates(per_seat)] == ["s0", "s1", "s2"]


def test_the_findings_added_from_elsewhere_are_bounded() -> None:
    # 20 seats each report the same thing in their own file: every pair reads alike.
    per_seat = [
        (f"s{n}", [finding(f"Unchecked None from get_by_id ({n})", "x", f"m{n}.py", 5)])
        for n in range(20)
    ]
    assert len(merge_candidates(per_seat)) == ELSEWHERE_MAX
    # Findings that share a place are always listed, and do not count against the bound.
    same_place = [(f"t{n}", [finding(f"Slow loop {n}", f"y{n}", "hot.py", 7)]) for n in range(3)]
    listed = merge_candidates(per_seat + same_place)
    assert len(listed) == ELSEWHERE_MAX + 3
    assert {c.seat for c in listed} >= {"t0", "t1", "t2"}


def test_a_group_of_findings_that_share_nothing_is_refused_and_said() -> None:
    per_seat = ragflow()
    # Shown: F1, F2 (alike) and F3, F4 (OTHER and a finding on its lines).
    per_seat[2] = ("seat-2", [OTHER, finding("page_size unbounded", "z", "api/apps/kb_app.py", 41)])
    candidates = merge_candidates(per_seat)
    assert [c.id for c in candidates] == ["F1", "F2", "F3", "F4"]
    resolved = resolve_groups(candidates, [["F1", "F3"], ["F2", "F1", "F2", "F7"], ["F4", "f2"]])
    assert resolved.groups == [[("seat-1", 0), ("seat-0", 0)]]
    assert resolved.notes() == [
        "The chair's group F1, F3 was not merged: F1 and F3 share no file, title word or "
        "code name.",
        "The chair's group F2, F1, F7 was merged without F7: F7 is not a finding it was shown.",
        "The chair's group F4, F2 was not merged: F2 is in the earlier group F2, F1.",
    ]
    # An id the chair made up is model text: a long one is clipped in the note.
    long = resolve_groups(candidates, [["F1", "F2 and also every other one"]])
    assert long.notes() == [
        "The chair's group F1, F2 and also… was not merged: F2 and also… is not a finding it "
        "was shown."
    ]


def test_a_refused_group_is_in_the_notes_of_the_comment_and_the_json() -> None:
    per_seat = ragflow()
    candidates = merge_candidates(per_seat)
    resolved = resolve_groups(candidates, [["F1", "F2", "F5"]])
    merged = merge_findings(per_seat, resolved.groups)
    seats = [seat(0), seat(1), seat(2)]
    adv = advisory(
        Resolution.REJECTED, seats=seats, findings=merged, top_findings=[], notes=resolved.notes()
    )
    note = "The chair's group F1, F2, F5 was merged without F5: F5 is not a finding it was shown."
    assert adv.notes == [note]
    comment = render_comment(adv)
    assert f"_Note: {note}_" in comment
    data = advisory_json(adv, comment)
    assert data["notes"] == [note]
    assert data["findings"][0]["also_at"] == ["api/apps/api_app.py:L618"]


def test_every_renderer_shows_the_other_places() -> None:
    merged = merge_findings(ragflow(), [[("seat-0", 0), ("seat-1", 0)]])
    adv = advisory(Resolution.REJECTED, findings=merged, top_findings=[])
    comment = render_comment(adv)
    # One row in the visible table, at the kept location, naming the other place.
    rows = [line for line in comment.splitlines() if "get_by_id returns None" in line]
    assert len(rows) == 2  # the visible table's row and the "All findings" item
    assert (
        "api/db/services/document_service.py:L338-L340 · also at api/apps/api_app.py:L618"
        in rows[0]
    )
    assert "(also at api/apps/api_app.py:L618)" in rows[1]
    assert "Unchecked None from DocumentService.get_by_id" not in comment
    text = render_text(adv, width=200)
    assert "also at api/apps/api_app.py:618" in text
    check = render_check_run(adv)
    assert check.text is not None
    assert "(also at api/apps/api_app.py:L618)" in check.text
    (note,) = [a for a in annotations_for(adv) if a.path == SERVICE.path]
    assert "The same issue also at api/apps/api_app.py:L618." in note.message


def test_the_outcome_counts_a_change_at_any_place_of_the_finding() -> None:
    (one, _) = merge_findings(ragflow(), [[("seat-0", 0), ("seat-1", 0)]])
    assert places(one) == [(SERVICE.path, 338, 340), ("api/apps/api_app.py", 618, None)]
    assert parse_location("a:b.py:L3-L9") == ("a:b.py", 3, 9)
    assert parse_location("notes.md") == ("notes.md", None, None)
    fix = PullFile(
        path="api/apps/api_app.py",
        status="modified",
        additions=2,
        deletions=1,
        patch="@@ -617,2 +617,3 @@\n e, doc = get_by(i)\n-x = doc.kb_id\n+if not e:\n+  abort\n",
    )
    elsewhere = PullFile(
        path="api/apps/api_app.py",
        status="modified",
        additions=1,
        deletions=1,
        patch="@@ -10 +10 @@\n-a\n+b\n",
    )
    assert touched(one, {fix.path: fix})
    assert not touched(one, {elsewhere.path: elsewhere})
    assert not touched(one.model_copy(update={"also_at": []}), {fix.path: fix})
