"""Issue 23, item 8: a slow, silent server's deliberation says what happened, over the wire
(the real SDKs through the provider registry, the fake model server answering as
`CouncilScript`).

A vote that timed out is no abstention: it reads "no vote (timed out)" in the advisory, its
tally, the record the chair reads, the ledger's VOTE_CAST, the comment, the check run, the
terminal report and the HTML transcript, and counts in no majority (as before). The tokens
a server did not report (llama-cpp-python's streams carry no usage) are counted by the
estimator and said to be estimated wherever tokens are shown. A ledger written before,
whose VOTE_CAST said "ABSTAIN", resumes without a new call.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.council.advisory import Advisory, Resolution, SeatState
from bot.council.board import BoardConfig
from bot.council.calls import ledger_tokens
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import EventKind, InMemoryLedger, LedgerEvent
from bot.council.personas import load_catalog
from bot.providers import ProviderRegistry
from bot.render import render_check_run, render_comment
from bot.render.terminal import render_text
from bot.render.transcript import transcript_html
from bot.store.deliberations import DeliberationRecord, DeliberationStatus
from tests.support.council_answers import CouncilScript, persona_of
from tests.support.model_server import FakeModelServer, FakeRequest, Fault, FaultReply, Reply
from tests.unit.providers.test_providers import make_settings

HOSTED = "anthropic:claude-sonnet-5-5"
LOCAL_MODEL = "qwen2.5-coder:7b"
LOCAL = f"box:{LOCAL_MODEL}"
VOTE = "submit_vote"
DEADLINE_S = 2.0
TIMED_OUT = "no vote (timed out)"
# "About 1,234 of the 5,678 tokens are estimated: the server reported no usage for 3 of
# 16 calls" (the comment and terminal say it as a note; the check run too).
ESTIMATED = re.compile(
    r"[Aa]bout ([\d,]+) of the ([\d,]+) tokens are estimated: the server reported no usage "
    r"for (\d+) of (\d+) calls"
)


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    """The hosted model at the fake, and a local llama-cpp-python server ("box")."""
    models.behave_as("llama-cpp-python", LOCAL_MODEL)
    box = {"base_url": models.openai_url, "local": True, "structured": "json_object"}
    reg = ProviderRegistry(make_settings(models, endpoints={"box": box}, max_retries=0))
    yield reg
    await reg.aclose()


def request(did: str, **kw: Any) -> DeliberationRequest:
    values: dict[str, Any] = {
        "deliberation_id": did,
        "protocol": "board",
        "topic": "Review this pull request",
        "context": "<untrusted-diff>\n+ import requests\n</untrusted-diff>",
        "models": [HOSTED, LOCAL],
        "board": BoardConfig(default_size=3, min_size=3, discussion_rounds=1),
        "assessment_timeout_s": DEADLINE_S,
    }
    values.update(kw)
    return DeliberationRequest(**values)


async def hosted_seat(registry: ProviderRegistry) -> str:
    """The persona of the first seat the hosted model sits (the seating is deterministic)."""
    convened = await Engine(registry, load_catalog(), InMemoryLedger()).preview(request("x"))
    assert convened is not None
    return next(s.persona_name for s in convened.seats if s.model == HOSTED)


def votes_of(persona: str) -> Callable[[FakeRequest], bool]:
    return lambda r: r.output_name == VOTE and persona_of(r.messages_text) == persona


async def one_vote_times_out(models: FakeModelServer, registry: ProviderRegistry) -> str:
    """Every answer at once, but one seat's vote (on the hosted model) comes after the
    call's deadline; that seat's persona."""
    persona = await hosted_seat(registry)
    models.default(CouncilScript().reply)
    models.on(votes_of(persona), reply=Reply(latency_s=3 * DEADLINE_S))
    return persona


def late_seat(advisory: Advisory) -> str:
    (seat,) = [s for s in advisory.seats if s.state is SeatState.NO_VOTE]
    return seat.label


def transcript_record(advisory: Advisory) -> DeliberationRecord:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    return DeliberationRecord.model_validate(
        {
            "id": advisory.deliberation_id,
            "key": "job-1",
            "repo": "o/r",
            "pr_number": 7,
            "head_sha": "abc123",
            "installation_id": 1,
            "trigger": "command",
            "protocol": advisory.protocol,
            "topic": advisory.topic,
            "status": DeliberationStatus.COMPLETED,
            "resolution": advisory.resolution.value,
            "conclusion": "success",
            "comment_id": None,
            "check_run_id": None,
            "cost_usd": advisory.usage.cost_usd,
            "created_at": now,
            "updated_at": now,
            "finished_at": now,
            "advisory_json": advisory.model_dump_json(),
        }
    )


async def test_a_timed_out_vote_is_no_vote_everywhere_and_unreported_tokens_are_estimated(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    persona = await one_vote_times_out(models, registry)
    ledger = InMemoryLedger()
    advisory = await Engine(registry, load_catalog(), ledger).deliberate(request("slow"))

    # The advisory: the seat keeps its assessment, its vote did not come, and why.
    (late,) = [s for s in advisory.seats if s.vote is None]
    assert late.persona_name == persona
    assert (late.state, late.vote_missing, late.no_vote) == (
        SeatState.NO_VOTE,
        "timed out",
        TIMED_OUT,
    )
    assert late.is_valid and late.assessment is not None
    assert len([c for c in models.calls if votes_of(persona)(c.request)]) == 1  # not re-asked
    # The arithmetic is as before: the missing vote is in no majority (2 of 2 approve).
    counts = advisory.vote_counts()
    assert (counts.approve, counts.reject, counts.missing) == (2, 0, {"timed out": 1})
    assert advisory.resolution is Resolution.APPROVED
    assert counts.text() == "2 approve, 0 reject, 1 no vote (timed out)"

    # The ledger: `vote` stays the field it was, null, and says why.
    cast = [e.payload for e in await ledger.events("slow") if e.kind is EventKind.VOTE_CAST]
    assert {"seat": late.seat_id, "vote": None, "missing": "timed out"} in cast
    assert sorted(str(p["vote"]) for p in cast) == ["APPROVE", "APPROVE", "None"]

    # The record the chair synthesizes from says so too.
    synthesis = next(c for c in models.calls if c.request.output_name == "submit_synthesis")
    assert f"- {late.label}: {TIMED_OUT}" in synthesis.request.messages_text

    # Tokens the llama-cpp-python server did not report are counted and marked.
    usage = advisory.usage
    assert 0 < usage.estimated_calls < usage.calls
    assert 0 < usage.estimated_tokens < usage.tokens

    comment = render_comment(advisory)
    summary = render_check_run(advisory).summary
    terminal = render_text(advisory)
    page = transcript_html(transcript_record(advisory), advisory, [])
    for shown in (comment, summary, terminal, page):
        assert TIMED_OUT in shown
        assert "abstain" not in shown.lower()
    assert re.search(rf"\| {late.label} \|[^\n]*\| {re.escape(TIMED_OUT)} \| - \| - \|", comment)
    assert "Votes: 2 approve, 0 reject, 1 no vote (timed out)." in summary
    assert "2 approve, 0 reject, 1 no vote (timed out)" in page
    row = next(ln for ln in terminal.splitlines() if ln.startswith(late.persona_name[:12]))
    assert TIMED_OUT in row
    said = f"{usage.estimated_tokens:,} of the {usage.tokens:,} tokens are estimated"
    for shown in (comment, summary, terminal, page):
        words = " ".join(shown.split())  # the terminal wraps its lines
        found = ESTIMATED.search(words)
        assert found is not None and said in words, shown[-600:]
        assert found.group(3, 4) == (str(usage.estimated_calls), str(usage.calls))


@pytest.mark.parametrize(
    ("answer", "said", "calls"),
    [
        (
            Reply(json={"vote": "MAYBE", "confidence": 0.5, "rationale": "?"}),
            "invalid answer twice",
            2,
        ),
        (Fault.server_error(500), "server error", 1),
    ],
)
async def test_a_vote_that_failed_otherwise_says_how(
    models: FakeModelServer,
    registry: ProviderRegistry,
    answer: Reply | FaultReply,
    said: str,
    calls: int,
) -> None:
    """Not every missing vote timed out: an answer invalid on the re-ask too reads "no vote
    (invalid answer twice)", a server error "no vote (server error)"."""
    persona = await hosted_seat(registry)
    models.default(CouncilScript().reply)
    models.on(votes_of(persona), reply=answer)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        request("failed")
    )
    (late,) = [s for s in advisory.seats if s.vote is None]
    assert (late.persona_name, late.no_vote) == (persona, f"no vote ({said})")
    assert len([c for c in models.calls if votes_of(persona)(c.request)]) == calls
    assert f"Votes: 2 approve, 0 reject, 1 no vote ({said})." in (
        render_check_run(advisory).summary
    )


async def test_an_older_ledger_that_said_abstain_resumes_without_a_new_call(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    """A deliberation stopped after its votes, by a version whose VOTE_CAST said "ABSTAIN":
    resumed, it replays every answer (no call is made again), the missing vote reads as
    what the recorded call says happened, and the events recorded before stay as they were."""
    await one_vote_times_out(models, registry)
    ledger = InMemoryLedger()
    first = await Engine(registry, load_catalog(), ledger).deliberate(request("old"))
    kept = [e for e in await ledger.events("old") if e.kind is not EventKind.SYNTHESIZED]
    last_vote = max(i for i, e in enumerate(kept) if e.kind is EventKind.VOTE_CAST)
    older = InMemoryLedger()
    for event in kept[: last_vote + 1]:  # stopped once the votes were cast, as written then
        payload = dict(event.payload)
        if event.kind is EventKind.VOTE_CAST and payload.get("vote") is None:
            payload = {"seat": payload["seat"], "vote": "ABSTAIN"}
        await older.append("old", event.kind, payload, step=event.step)
    models.reset()
    models.default(CouncilScript().reply)

    resumed = await Engine(registry, load_catalog(), older).deliberate(request("old"))

    asked = {c.request.output_name for c in models.calls}
    assert asked <= {"submit_merge", "submit_synthesis"}  # no assessment, no vote again
    assert late_seat(resumed) == late_seat(first)
    assert TIMED_OUT in render_comment(resumed)
    assert resumed.vote_counts() == first.vote_counts()
    events: list[LedgerEvent] = await older.events("old")
    cast = [e.payload["vote"] for e in events if e.kind is EventKind.VOTE_CAST]
    assert sorted(map(str, cast)) == ["ABSTAIN", "APPROVE", "APPROVE"]
    assert events[-1].kind is EventKind.SYNTHESIZED


async def test_votes_a_cap_stopped_say_so(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    """Resumed before its votes with a token cap that leaves no room for one: no vote is
    asked, and each reads "no vote (stopped by the token cap)" (a cap's stop records no
    VOTE_CAST, so a later resume with room asks them)."""
    models.default(CouncilScript().reply)
    ledger = InMemoryLedger()
    await Engine(registry, load_catalog(), ledger).deliberate(request("capped"))
    events = await ledger.events("capped")
    first_vote = next(
        i for i, e in enumerate(events) if str(e.payload.get("step", "")).startswith("vote/")
    )
    before = InMemoryLedger()
    for event in events[:first_vote]:
        await before.append("capped", event.kind, dict(event.payload), step=event.step)
    paid = sum(ledger_tokens(e.payload) for e in events[:first_vote] if e.payload.get("step"))
    models.reset()
    models.default(CouncilScript().reply)

    advisory = await Engine(registry, load_catalog(), before).deliberate(
        request("capped", max_spend_tokens=paid + 1)
    )

    assert models.calls == []
    assert advisory.resolution is Resolution.COST_LIMIT
    stopped = "no vote (stopped by the token cap)"
    assert [s.no_vote for s in advisory.seats] == [stopped] * 3
    assert stopped in render_comment(advisory)
    after = await before.events("capped")
    assert not [e for e in after if e.kind is EventKind.VOTE_CAST]
