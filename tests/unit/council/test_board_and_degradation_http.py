"""Issue 12, part 4, over the wire (the real SDKs through the provider registry, the fake
model server answering as `CouncilScript`): `/council board +x -y` seats and removes; the
"why this board" sentence; the limited advisory at 1 of 3 (never green); the partial
synthesis at 2 of 3 ("consensus 2/3", the missing view named in Divergence); `chair_votes`
seats the chair (one more assessment); model strengths decide a tie and are named."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.council.advisory import Resolution
from bot.council.board import BoardConfig
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import EventKind, InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.protocols import planned_calls
from bot.council.scoring import ReviewSignals
from bot.providers import ProviderRegistry
from bot.render import conclusion_for, render_check_run, render_comment
from tests.support.council_answers import CouncilScript, persona_of
from tests.support.model_server import FakeModelServer, FakeRequest, Fault, Reply
from tests.unit.providers.test_providers import make_settings

ANTHROPIC = "anthropic:claude-sonnet-5-5"
OPENAI = "openai:gpt-5.4"
TOPIC = "Review this pull request"
ASSESS = "submit_assessment"
SIGNALS = ReviewSignals(
    topic=TOPIC,
    languages=("python",),
    areas=("security", "dependencies", "database"),
    artifact_types=("package-manifest", "migration"),
    dominant_area="security",
)


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


def request(did: str, protocol: str = "quick", **kw: Any) -> DeliberationRequest:
    values: dict[str, Any] = {
        "deliberation_id": did,
        "protocol": protocol,
        "topic": TOPIC,
        "context": "<untrusted-diff>\n+ import requests\n</untrusted-diff>",
        "signals": SIGNALS,
        "models": [ANTHROPIC, OPENAI],
        "board": BoardConfig(default_size=5, min_size=3, discussion_rounds=1),
        "assessment_timeout_s": 10.0,
    }
    values.update(kw)
    return DeliberationRequest(**values)


def assessed(models: FakeModelServer) -> list[str]:
    """The persona of every assessment call, in the order they were made."""
    return [
        persona_of(c.request.messages_text) for c in models.calls if c.request.output_name == ASSESS
    ]


def fail_assessments_of(models: FakeModelServer, names: set[str]) -> None:
    """Every assessment call of these personas fails with a server error (no retries)."""

    def match(r: FakeRequest) -> bool:
        return r.output_name == ASSESS and persona_of(r.messages_text) in names

    models.on(match, reply=Fault.server_error(500))


async def seats_of(registry: ProviderRegistry, req: DeliberationRequest) -> list[str]:
    convened = await Engine(registry, load_catalog(), InMemoryLedger()).preview(req)
    assert convened is not None
    return [s.persona_name for s in convened.seats]


# --- board +x -y ---------------------------------------------------------------------------


async def test_board_plus_and_minus_seat_and_remove_through_the_engine(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    plain = await seats_of(registry, request("plain"))
    catalog = load_catalog()
    docs, migration = (
        catalog.personas["docs-reviewer"].name,
        catalog.personas["migration-safety"].name,
    )
    assert migration in plain and docs not in plain
    req = request("adjusted", board_add=["docs-reviewer"], board_remove=["migration-safety"])
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req)

    called = assessed(models)
    assert docs in called and migration not in called and len(called) == 3
    assert docs in [s.persona_name for s in advisory.seats]
    comment = render_comment(advisory)
    assert "Adjusted for this run: +docs-reviewer" in comment
    assert "-migration-safety" in comment
    assert "Why this board: " in comment and "docs-reviewer was added for this run" in comment


async def test_why_this_board_is_the_first_board_note_of_the_advisory(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        request("why", protocol="board")
    )
    why = next(n for n in advisory.notes if n.startswith("Why this board: "))
    assert "the change's security signals seated" in why
    for seat in advisory.seats:
        assert seat.persona_id in why
    assert why in render_comment(advisory)


# --- lost seats: limited advisory, partial synthesis ---------------------------------------------


async def test_limited_advisory_at_one_of_three_is_never_green(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    req = request("limited")
    names = await seats_of(registry, req)
    assert len(names) == 3
    fail_assessments_of(models, set(names[1:]))
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req)

    assert advisory.resolution is Resolution.NO_QUORUM
    assert len(advisory.valid_seats()) == 1
    assert conclusion_for(advisory, "verdict") == "failure"  # no verdict: blocks the merge
    assert conclusion_for(advisory, "advisory") == "neutral"
    comment = render_comment(advisory)
    assert "Limited advisory: 1 of 3 seats answered" in comment
    lost = {s.persona_name: s.model for s in advisory.lost_seats()}
    for name in names[1:]:
        assert f"{name} on {lost[name]} (its call failed)" in comment
    assert f"Only {names[0]}'s answer" in comment and "one reviewer's opinion" in comment
    check = render_check_run(advisory)
    assert check.title.startswith(
        "No verdict: the council could not convene: Limited advisory: 1 of 3"
    )


async def test_a_limited_council_names_each_missing_seat_by_its_model(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    """A council's seats all sit as "Council member": the missing one is told by its model."""
    models.default(CouncilScript().reply)
    models.on(
        lambda r: r.output_name == ASSESS and r.model == OPENAI.split(":", 1)[1],
        reply=Fault.server_error(500),
    )
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        request("limited-council", "council")
    )

    assert advisory.resolution is Resolution.NO_QUORUM
    comment = render_comment(advisory)
    assert "Limited advisory: 1 of 2 seats answered" in comment
    (lost,) = advisory.lost_seats()
    assert lost.model == OPENAI
    assert f"Missing: {lost.persona_name} on {OPENAI} (its call failed)." in comment
    assert "view (" not in comment.split("Missing:")[1].split(".")[0]


async def test_partial_synthesis_says_consensus_2_of_3_and_names_the_missing_view(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    req = request("partial")
    names = await seats_of(registry, req)
    fail_assessments_of(models, {names[2]})
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req)

    assert advisory.resolution.is_verdict and len(advisory.valid_seats()) == 2
    assert advisory.synthesis is not None
    assert advisory.synthesis.consensus[0].startswith("Partial consensus (2/3 seats)")
    comment = render_comment(advisory)
    assert "Partial consensus (2/3 seats)" in comment
    assert f"The {names[2]} view (" in comment and "is missing: its call failed" in comment
    # The chair's own points are kept after the council's words.
    assert "Tests are needed for the new branch." in comment


async def test_a_full_council_has_no_partial_wording(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(request("full"))
    comment = render_comment(advisory)
    assert "Partial consensus" not in comment and "Limited advisory" not in comment


# --- chair_votes ---------------------------------------------------------------------------


async def test_chair_votes_seats_the_chair_as_one_more_member(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    req = request("chair", protocol="board", chair_model=OPENAI, chair_votes=True)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(req)

    called = assessed(models)
    assert called.count("Chair (voting member)") == 1
    seat = next(s for s in advisory.seats if s.persona_id == "chair-member")
    assert seat.model == OPENAI and seat.vote is not None  # it voted
    votes = [c for c in models.calls if c.request.output_name == "submit_vote"]
    assert len(votes) == len(advisory.seats)
    synth = [c for c in models.calls if c.request.output_name == "submit_synthesis"]
    assert len(synth) == 1 and synth[0].request.model == "gpt-5.4"
    # The plan counts it: one assess, one discuss and one vote call more.
    members = len(advisory.seats) - 1
    plain = planned_calls("board", seats=members, rounds=1)
    voting = planned_calls("board", seats=members, rounds=1, chair_votes=True)
    assert len(voting) == len(plain) + 3
    assert [c.phase for c in voting if c.party == "chair"] == [
        "assess",
        "discuss 1",
        "vote",
        "merge",
        "synthesize",
    ]
    assert len(called) == len([c for c in voting if c.phase == "assess"])
    assert "Chair (voting member)" in render_comment(advisory)


async def test_without_chair_votes_the_chair_does_not_assess(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(CouncilScript().reply)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        request("no-chair", chair_model=OPENAI)
    )
    assert "Chair (voting member)" not in assessed(models)
    assert all(s.persona_id != "chair-member" for s in advisory.seats)


# --- model strengths -------------------------------------------------------------------------


def split_by_model(verdicts: dict[str, str]) -> Any:
    """Council seats answer by their model: `verdicts[model]` (APPROVE or REJECT)."""
    script = CouncilScript()

    def reply(r: FakeRequest) -> Reply:
        data = script.answer(r.output_name, r.messages_text)
        if data is not None and r.output_name == ASSESS:
            verdict = verdicts[r.model]
            data = {**data, "verdict": verdict, "score": 8 if verdict == "APPROVE" else 3}
        return Reply(json=data) if data is not None else Reply(text="OK")

    return reply


async def test_model_strengths_decide_the_recommendation_on_a_tie_and_are_named(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    models.default(split_by_model({"claude-sonnet-5-5": "APPROVE", "gpt-5.4": "REJECT"}))
    tie = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        request("tie", protocol="council")
    )
    assert tie.resolution is Resolution.ESCALATE  # 1 approve, 1 reject
    assert tie.synthesis is not None and "Weighted toward" not in tie.synthesis.recommendation

    models.reset()
    models.default(split_by_model({"claude-sonnet-5-5": "APPROVE", "gpt-5.4": "REJECT"}))
    strong = {OPENAI: ["appsec", "performance"]}  # appsec is the security concept
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        request("weighted", protocol="council", model_strengths=strong)
    )
    # Votes are not weighted (docs/deliberation.md): the tie stands, a person decides.
    assert advisory.resolution is Resolution.ESCALATE
    assert conclusion_for(advisory) == "action_required"
    assert advisory.synthesis is not None
    recommendation = advisory.synthesis.recommendation
    assert recommendation.startswith("Bound the retry")  # the chair's own words first
    assert f"Weighted toward {OPENAI}, strong in security" in recommendation
    assert "on the divergence about security (1 approve, 1 reject)" in recommendation
    assert "leans toward rejection" in recommendation
    assert f"Weighted toward {OPENAI}" in render_comment(advisory)
    assert f"Weighted toward {OPENAI}" in render_check_run(advisory).summary


async def test_strengths_do_not_lean_toward_approval_past_a_red_flag(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    script = split_by_model({"claude-sonnet-5-5": "APPROVE", "gpt-5.4": "REJECT"})

    def reply(r: FakeRequest) -> Reply:
        answer = script(r)
        if r.output_name == ASSESS and r.model == "gpt-5.4" and answer.json is not None:
            return Reply(json={**answer.json, "red_flags": ["Secrets are logged in plain text"]})
        return answer

    models.default(reply)
    advisory = await Engine(registry, load_catalog(), InMemoryLedger()).deliberate(
        request("flagged", protocol="council", model_strengths={ANTHROPIC: ["security"]})
    )
    assert advisory.resolution is Resolution.ESCALATE
    assert advisory.synthesis is not None
    recommendation = advisory.synthesis.recommendation
    assert f"Weighted toward {ANTHROPIC}" in recommendation
    assert "does not lean toward approval" in recommendation


async def test_a_score_out_of_range_is_kept_clamped_and_said_in_the_answers_record(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    """A server whose grammar drops ranges lets a seat answer an overall score of 0: the
    assessment counts (no re-ask, the seat is valid) and its ledger record says how it was
    read."""
    script = CouncilScript()

    def reply(request: FakeRequest) -> Reply:
        data = script.answer(request.output_name, request.messages_text)
        if request.output_name == ASSESS and data is not None:
            data = {**data, "score": 0}
        return Reply(json=data) if data is not None else Reply(text="OK")

    models.default(reply)
    ledger = InMemoryLedger()
    advisory = await Engine(registry, load_catalog(), ledger).deliberate(request("clamped"))

    assert len(advisory.valid_seats()) == 3
    assert sum(c.request.output_name == ASSESS for c in models.calls) == 3  # no re-ask
    events = await ledger.events("clamped")
    returned = [
        e.payload for e in events if e.kind == EventKind.SEAT_RETURNED and "assess" in str(e.step)
    ]
    assert len(returned) == 3
    assert all(p["adjusted"] == ["score: 0 is below the minimum 1; read as 1"] for p in returned)
    assert all(isinstance(p["output"], dict) and p["output"]["score"] == 1 for p in returned)
