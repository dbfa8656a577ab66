"""One issue, one finding: three seats word one issue three ways and the advisory lists it
once, raised by all three, over the wire (the real SDKs through the provider registry, the
fake model server answering as `CouncilScript`). The chair groups the findings in one call
made only when two findings share a file and overlapping lines, or read alike elsewhere;
its groups may span files (one finding, the other places in `also_at`), and a group the
code refuses is said in the notes. Without a valid answer the findings merge by their
wording."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal

import pytest

from bot.council.advisory import Advisory
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import EventKind, InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.scoring import ReviewSignals
from bot.providers import ProviderRegistry
from bot.render import render_comment
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer
from tests.unit.providers.test_providers import make_settings

ANTHROPIC = "anthropic:claude-sonnet-5-5"
OPENAI = "openai:gpt-5.4"
TOPIC = "Review this pull request"
MERGE = "submit_merge"


def finding(
    title: str,
    detail: str,
    start: int,
    end: int | None = None,
    severity: str = "major",
    path: str = "app/client.py",
) -> dict[str, Any]:
    return {
        "severity": severity,
        "path": path,
        "start_line": start,
        "end_line": end,
        "title": title,
        "detail": detail,
        "suggestion": None,
    }


# One issue (the retry is unbounded), worded three ways as three models word it: no two
# titles are alike enough for the title rule alone.
RETRY = [
    finding(
        "Retry loop has no upper bound",
        "The retry in fetch() loops forever when the upstream keeps failing; "
        "nothing caps the attempts.",
        40,
        44,
    ),
    finding(
        "Unbounded retries on upstream failure",
        "fetch() retries without a limit, so a failing upstream keeps the worker busy forever.",
        42,
        46,
        severity="critical",
    ),
    finding(
        "No cap on retry attempts",
        "There is no maximum number of attempts: the while loop retries the request "
        "indefinitely when the call fails.",
        41,
    ),
]


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


def request(deliberation_id: str) -> DeliberationRequest:
    return DeliberationRequest(
        deliberation_id=deliberation_id,
        protocol="quick",
        topic=TOPIC,
        context="<untrusted-diff>\n+ while True: retry(request)\n</untrusted-diff>",
        signals=ReviewSignals(topic=TOPIC, languages=["python"], areas=["reliability"]),
        models=[ANTHROPIC, OPENAI],
        board=BoardConfig(default_size=3, min_size=3, discussion_rounds=1),
        assessment_timeout_s=10.0,
    )


async def deliberate(
    models: FakeModelServer,
    registry: ProviderRegistry,
    findings: list[list[dict[str, Any]]],
    merge_groups: list[list[str]] | Literal["invalid"],
    ledger: InMemoryLedger | None = None,
) -> tuple[Advisory, InMemoryLedger]:
    """A quick board of three whose n-th seat (in the stored member order) reports
    `findings[n]`; the chair answers the merge with `merge_groups`."""
    ledger = ledger or InMemoryLedger()
    engine = Engine(registry, load_catalog(), ledger)
    req = request("merge-1")
    convened = await engine.preview(req)
    assert convened is not None
    by_id = {s.seat_id: s for s in convened.seats}
    order = [by_id[i] for i in convened.order]
    assert len(order) == len(findings) == 3
    script = CouncilScript(
        findings={seat.persona_name: found for seat, found in zip(order, findings, strict=True)},
        merge_groups=merge_groups,
    )
    models.default(script.reply)
    advisory = await engine.deliberate(req)
    return advisory, ledger


def merge_calls(models: FakeModelServer) -> list[Any]:
    return [c for c in models.calls if c.request.output_name == MERGE]


async def merge_returns(ledger: InMemoryLedger) -> list[dict[str, Any]]:
    return [
        e.payload
        for e in await ledger.events("merge-1")
        if e.kind is EventKind.SEAT_RETURNED and e.payload.get("phase") == "merge"
    ]


async def test_three_wordings_of_one_issue_are_one_finding_raised_by_3_through_the_chair(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    advisory, ledger = await deliberate(
        models, registry, [[RETRY[0]], [RETRY[1]], [RETRY[2]]], [["F1", "F2", "F3"]]
    )

    # The chair was asked once, with the three candidates by id, and its answer recorded.
    asked = merge_calls(models)
    assert len(asked) == 1
    text = asked[0].request.messages_text
    for n, wording in enumerate(RETRY, start=1):
        assert f"F{n} | Member " in text and wording["title"] in text
    assert "app/client.py:L40-L44" in text and "app/client.py:L41" in text
    returned = await merge_returns(ledger)
    assert [(r["status"], r["step"]) for r in returned] == [("ok", returned[0]["step"])]
    assert str(returned[0]["step"]).startswith("merge/") and returned[0]["cost"] is not None
    assert advisory.usage.calls == len(models.calls)

    # One finding, raised by all three seats, the most severe wording's, over the union.
    assert len(advisory.findings) == 1
    merged = advisory.findings[0]
    assert merged.consensus == 3 and len(set(merged.raised_by)) == 3
    assert merged.severity == "critical" and merged.title == RETRY[1]["title"]
    assert (merged.path, merged.start_line, merged.end_line) == ("app/client.py", 40, 46)
    # A critical finding raised by 2+ seats is a top finding.
    assert [t.title for t in advisory.top_findings if t.kind == "finding"] == [merged.title]
    comment = render_comment(advisory)
    assert "3 seats (Member A, Member B, Member C)" in comment
    assert "Unbounded retries on upstream failure" in comment
    assert "Retry loop has no upper bound" not in comment  # not listed as a finding of its own
    assert "No cap on retry attempts" not in comment


async def test_an_invalid_merge_answer_twice_falls_back_to_the_wording(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    advisory, ledger = await deliberate(
        models, registry, [[RETRY[0]], [RETRY[1]], [RETRY[2]]], "invalid"
    )

    assert len(merge_calls(models)) == 2  # the call and its one re-ask
    assert [r["status"] for r in await merge_returns(ledger)] == ["invalid_output"] * 2
    assert advisory.usage.calls == len(models.calls)
    assert [(f.consensus, f.severity) for f in advisory.findings] == [(3, "critical")]
    assert "3 seats (Member A, Member B, Member C)" in render_comment(advisory)
    assert any("merged by their wording" in note for note in advisory.notes)


async def test_no_two_findings_on_the_same_lines_or_alike_make_no_merge_call(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    apart = [
        [RETRY[0]],
        [finding("Port read from env unchecked", "int() raises on a bad PORT.", 5, path="s.py")],
        [finding("Slow scan of the rows", "The lookup is quadratic in the table size.", 90)],
    ]
    advisory, ledger = await deliberate(models, registry, apart, [["F1", "F2", "F3"]])

    assert merge_calls(models) == [] and await merge_returns(ledger) == []
    assert sorted(f.consensus for f in advisory.findings) == [1, 1, 1]
    assert advisory.usage.calls == len(models.calls)


async def test_one_issue_in_two_files_is_one_row_with_the_other_place(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    # The ragflow#6553 shape: the same None-return bug where the function returns None and
    # where a caller uses the result; a third seat reports something else.
    service = finding(
        "get_by_id returns None for a missing document",
        "DocumentService.get_by_id now returns None when the id is unknown instead of "
        "raising; every caller that reads .kb_id from the result crashes.",
        338,
        340,
        severity="critical",
        path="document_service.py",
    )
    caller = finding(
        "Unchecked None from DocumentService.get_by_id",
        "doc.kb_id is read right after get_by_id without a None check: a 500.",
        618,
        severity="critical",
        path="api_app.py",
    )
    other = finding("Retry loop has no upper bound", RETRY[0]["detail"], 40, severity="minor")
    advisory, _ = await deliberate(models, registry, [[service], [caller], [other]], [["F1", "F2"]])

    # The chair was asked about the two findings though they share no file, and only them.
    (asked,) = merge_calls(models)
    text = asked.request.messages_text
    assert "F1 | Member " in text and "document_service.py:L338-L340" in text
    assert "F2 | Member " in text and "api_app.py:L618" in text
    assert "F3 |" not in text and other["title"] not in text
    # One finding at the representative's location, the other place listed.
    critical = [f for f in advisory.findings if f.severity == "critical"]
    assert len(critical) == 1
    (one,) = critical
    assert (one.path, one.start_line, one.end_line) == ("document_service.py", 338, 340)
    assert one.also_at == ["api_app.py:L618"] and one.consensus == 2
    assert not any(n.startswith("The chair's group") for n in advisory.notes)
    comment = render_comment(advisory)
    rows = [line for line in comment.splitlines() if line.startswith("| #")]
    assert len(rows) == 2  # the merged finding and the minor one
    assert "document_service.py:L338-L340 · also at api_app.py:L618" in rows[0]
    assert "2 seats" in comment
    assert "Unchecked None from DocumentService.get_by_id" not in comment


async def test_a_chair_group_of_two_unrelated_files_is_merged_in_parts_and_said(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    # Two findings of one issue in app/client.py the wording alone would not join, and two
    # on the same lines of app/server.py; the chair puts all four in one group and names
    # an id that does not exist.
    timeout = finding(
        "Request has no timeout",
        "httpx.get is called without a timeout, so a stalled server hangs the worker.",
        10,
    )
    hangs = finding(
        "Worker can hang on a stalled upstream",
        "Nothing stops the call to the upstream from waiting forever.",
        11,
    )
    server_a = finding(
        "Port read from env unchecked", "int() raises on a bad PORT.", 5, path="app/server.py"
    )
    server_b = finding(
        "PORT parsed without validation",
        "A non-numeric PORT crashes the start with a ValueError.",
        6,
        path="app/server.py",
    )
    advisory, _ = await deliberate(
        models,
        registry,
        [[timeout, server_a], [hangs], [server_b]],
        [["F1", "F3", "F2", "F4", "F9"]],
    )

    assert len(merge_calls(models)) == 1
    text = merge_calls(models)[0].request.messages_text
    assert "F4 |" in text and "F5 |" not in text  # four candidates, numbered in seat order
    # The chair's group joined the two client.py findings (F1: timeout, F3: hangs) ...
    client = [f for f in advisory.findings if f.path == "app/client.py"]
    assert [(f.title, f.consensus, f.also_at) for f in client] == [
        ("Request has no timeout", 2, [])
    ]
    # ... and the two server.py findings (F2, F4) as a part of their own: the two files
    # share no title word, code name or wording.
    server = [f for f in advisory.findings if f.path == "app/server.py"]
    assert [(f.consensus, f.also_at) for f in server] == [(2, [])]
    assert len(advisory.findings) == 2
    # Not silently: the notes, and so the comment, say what was not merged and why.
    note = (
        "The chair's group F1, F3, F2, F4, F9 was merged as F1, F3 and F2, F4 without F9: "
        "F9 is not a finding it was shown; F1, F3 and F2, F4 share no file, title word or "
        "code name."
    )
    assert note in advisory.notes and f"- {note}" in render_comment(advisory)


async def test_a_chair_group_joining_findings_that_share_nothing_joins_nothing(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    client = [
        RETRY[0],
        finding(
            "Secret token logged on every retry", "Each retry logs the Authorization header.", 42
        ),
    ]
    server = finding(
        "Port read from env unchecked", "int() raises on a bad PORT.", 3, path="app/server.py"
    )
    server_b = finding(
        "PORT parsed without validation", "A bad PORT is a ValueError.", 4, path="app/server.py"
    )
    advisory, _ = await deliberate(models, registry, [client, [server], [server_b]], [["F1", "F3"]])

    assert len(merge_calls(models)) == 1
    # F1 (the retry, client.py) and F3 (the PORT, server.py) share no file, title word or
    # code name: the chair's group is refused, and said; the title rule joins no pair.
    assert len(advisory.findings) == 4
    assert all(f.consensus == 1 and f.also_at == [] for f in advisory.findings)
    note = (
        "The chair's group F1, F3 was not merged: F1 and F3 share no file, title word or code name."
    )
    assert note in advisory.notes
    # After the board's three notes: in the comment's "More notes" (the first three show).
    assert advisory.notes.index(note) == 3 and f"- {note}" in render_comment(advisory)


async def test_a_resumed_deliberation_replays_the_chairs_groups(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    spoken = [[RETRY[0]], [RETRY[1]], [RETRY[2]]]
    first, ledger = await deliberate(models, registry, spoken, [["F1", "F2", "F3"]])
    made = len(models.calls)
    # Run again on the same ledger, the chair now answering otherwise: nothing is asked
    # again, and the recorded groups still make one finding.
    again, _ = await deliberate(models, registry, spoken, [], ledger)
    assert len(models.calls) == made
    assert (
        [(f.title, f.consensus) for f in again.findings]
        == [(f.title, f.consensus) for f in first.findings]
        == [(RETRY[1]["title"], 3)]
    )
