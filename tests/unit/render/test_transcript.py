"""The transcript page and the stats page: complete, self-contained, every untrusted string
escaped; a debate's judge and report shown."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from bot.council.ledger import EventKind, InMemoryLedger, LedgerEvent
from bot.render.blocks import place
from bot.render.transcript import stats_html, transcript_html
from bot.store.deliberations import DeliberationRecord, DeliberationStatus
from bot.store.history import DayCost, PersonaStats, RepoCost, UsageStats
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer
from tests.unit.council.test_engine import engine, request
from tests.unit.council.test_engine import registry as registry  # the fixture

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HOSTILE = '<img src=x onerror="alert(1)"> & <script>alert(2)</script>'


def record(**overrides: object) -> DeliberationRecord:
    values: dict[str, object] = {
        "id": "d-1",
        "key": "job-1",
        "repo": "o/r",
        "pr_number": 7,
        "head_sha": "abc123",
        "installation_id": 1,
        "trigger": "command",
        "protocol": "debate",
        "topic": HOSTILE,
        "status": DeliberationStatus.COMPLETED,
        "resolution": "APPROVED",
        "conclusion": "success",
        "comment_id": None,
        "check_run_id": None,
        "cost_usd": 0.5,
        "created_at": NOW,
        "updated_at": NOW,
        "finished_at": NOW + timedelta(seconds=30),
        "advisory_json": None,
    }
    values.update(overrides)
    return DeliberationRecord.model_validate(values)


def no_markup_from_text(page: str) -> None:
    assert "<script" not in page and "<img" not in page and 'onerror="' not in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert not re.search(r"(src|href)=\"?https?:", page)  # nothing loaded from elsewhere


async def test_a_debate_transcript_shows_the_judge_the_report_and_escapes_everything(
    models: FakeModelServer, registry: object
) -> None:
    script = CouncilScript(
        judge=["FULL", "CONVERGED"],
        judge_fields={"blind_spots": [HOSTILE]},
        findings={"Panelist 1": [{
            "severity": "critical", "path": "src/a.py", "start_line": 3, "end_line": 5,
            "title": HOSTILE, "detail": HOSTILE, "suggestion": None,
        }]},
    )  # fmt: skip
    models.default(script.reply)
    ledger = InMemoryLedger()
    advisory = await engine(registry, ledger).deliberate(  # type: ignore[arg-type]
        request("debate", debate_mode="standard")
    )
    assert advisory.debate is not None and advisory.judge_decisions
    events = await ledger.events("d-1")
    page = transcript_html(record(), advisory, events)
    assert page.startswith("<!DOCTYPE html>")
    for section in ("seats", "assessments", "discussion", "judge", "votes", "debate", "timings"):
        assert f'id="{section}"' in page
    assert "Cycle 1: FULL" in page and "Cycle 2: CONVERGED" in page
    assert "src/a.py:3-5" in page
    assert {s.persona_id for s in advisory.seats} <= set(re.findall(r"[\w-]+", page))
    no_markup_from_text(page)
    assert page.count("<style>") == 1 and "<link" not in page


def test_the_timings_give_the_time_between_events_and_phases() -> None:
    kinds = [EventKind.CONVENED, EventKind.SEAT_CALLED, EventKind.SEAT_RETURNED,
             EventKind.RESOLVED, EventKind.SYNTHESIZED]  # fmt: skip
    events = [
        LedgerEvent(
            deliberation_id="d-1",
            seq=i,
            kind=kind,
            step=None,
            payload={"cost": 0.25} if kind == EventKind.SEAT_RETURNED else {},
            created_at=NOW + timedelta(seconds=2 * i),
        )
        for i, kind in enumerate(kinds)
    ]
    page = transcript_html(record(), None, events, title="T <b>")
    assert "<title>T &lt;b&gt;</title>" in page
    assert "No advisory is stored" in page
    assert "5 events over 8.0 s" in page
    assert '<td>convened</td><td>resolved</td><td class="n">6.0 s</td>' in page
    assert "$0.2500" in page
    no_markup_from_text(page)  # the topic


def test_the_stats_page_escapes_names_and_shows_every_figure() -> None:
    stats = UsageStats(
        since=date(2026, 11, 1),
        repos=["o/<r>"],
        deliberations=2,
        total_cost_usd=1.5,
        personas=[PersonaStats(persona_id="<script>alert(2)</script>", reviews=2, merged=1)],
        cost_by_day=[DayCost(day=date(2026, 11, 2), cost_usd=1.5, deliberations=2)],
        cost_by_repo=[RepoCost(repo="o/<r>", cost_usd=1.5, deliberations=2)],
        protocols={"board": 2},
        resolutions={"APPROVED": 2},
    )
    page = stats_html(stats)
    assert page.startswith("<!DOCTYPE html>") and "o/&lt;r&gt;" in page
    assert "2026-11-02" in page and "$1.5000" in page and "since 2026-11-01" in page
    assert "<td>board</td>" in page and "<td>APPROVED</td>" in page
    no_markup_from_text(page)


def test_an_anchor_is_path_and_line() -> None:
    assert place("a.py", 3) == "a.py:3"
    assert place("a.py", 3, 5) == "a.py:3-5"
    assert place("a.py", None) == "a.py"
