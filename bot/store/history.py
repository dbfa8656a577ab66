"""The store read back: past deliberations, one deliberation's whole record, usage figures.

`deliberation_history` lists deliberations newest first; `load_transcript` gives one with
its advisory and its ledger (the transcript page, `council show`); `usage_stats` sums the
store up (`council stats`, the stats page). Each may be restricted to some repositories
(`repos`): the web pages pass the ones their reader can read.

What the figures mean (`usage_stats`), over the deliberations selected:

- per persona (from each stored advisory's seats):
  - `reviews`: deliberations in which the persona held a seat whose assessment counted
    (a valid seat; once per deliberation, however many of its seats it held);
  - `closed`, `merged`: of those, the ones whose pull request closed (an outcome record
    exists) and, of these, the ones merged;
  - `findings_raised`: the advisory's merged findings its seats raised (each once);
  - `findings_addressed`: of those, the ones addressed: listed as addressed in the PR's
    outcome record (their lines changed before the PR closed), or marked `fixed` in
    `pr_findings` by a later re-review (matched by path, line and title);
  - `outcomes`, `held_up`: its persona outcome records and the successful ones (a finding
    of it addressed, or its vote, else its assessment's verdict, matched what the people
    did; `bot.review.outcomes`);
  - `bases`: its outcome records by how each was scored (`OUTCOME_BASES`: "vote",
    "assessment", "finding-addressed", "legacy"), every basis listed; they add up to
    `outcomes`.
- cost by day and by repository: each answer's cost as its ledger records it (the
  `seat_returned` events: what was paid, on the UTC day it was paid); a deliberation whose
  ledger holds no priced answer counts its recorded `cost_usd` on the day it started. So
  the days, the repositories and `total_cost_usd` add up to the same figure. Both tables
  count every deliberation selected once, priced or not: a repository's, and a day's on
  the UTC day it started (a day a deliberation started on is listed even if nothing was
  paid on it). So each table's `deliberations` add up to `deliberations`.
- `protocols`: deliberations by protocol; `resolutions`: by resolution (a deliberation
  without one, e.g. still running or failed, by its status).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from datetime import UTC, date, datetime, time

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.council.advisory import Advisory, finding_key
from bot.council.ledger import EventKind, LedgerEvent
from bot.store.db import Database
from bot.store.deliberations import DeliberationRecord, get_deliberation
from bot.store.ledger import SqlLedger
from bot.store.models import (
    DeliberationRow,
    LedgerEventRow,
    OutcomeRow,
    PersonaOutcomeRow,
    PrFindingRow,
)
from bot.store.outcomes import OUTCOME_BASES, OutcomeRecord

__all__ = [
    "DayCost",
    "PersonaStats",
    "RepoCost",
    "UsageStats",
    "deliberation_history",
    "load_transcript",
    "parse_advisory",
    "reviewed_repos",
    "usage_stats",
]

# The most deliberations `usage_stats` reads (newest first); `truncated` says it stopped.
MAX_STATS_DELIBERATIONS = 20_000


class _Stats(BaseModel):
    model_config = ConfigDict(frozen=True)


def _no_bases() -> dict[str, int]:
    return {basis: 0 for basis in OUTCOME_BASES}


class PersonaStats(_Stats):
    persona_id: str
    reviews: int = 0
    closed: int = 0
    merged: int = 0
    findings_raised: int = 0
    findings_addressed: int = 0
    outcomes: int = 0
    held_up: int = 0
    # Outcome records by how they were scored, every basis of `OUTCOME_BASES` in its order.
    bases: dict[str, int] = Field(default_factory=_no_bases)


class DayCost(_Stats):
    day: date
    cost_usd: float = 0.0  # what was paid that day (UTC)
    deliberations: int = 0  # deliberations started that day (UTC)


class RepoCost(_Stats):
    repo: str
    cost_usd: float = 0.0
    deliberations: int = 0


class UsageStats(_Stats):
    """What `usage_stats` found; see the module docstring for each figure's meaning."""

    since: date | None = None
    repos: list[str] | None = None  # the restriction asked for; None: every repository
    deliberations: int = 0
    total_cost_usd: float = 0.0
    personas: list[PersonaStats] = []  # most reviews first, then persona id
    cost_by_day: list[DayCost] = []  # oldest day first
    cost_by_repo: list[RepoCost] = []  # most expensive first, then repo
    protocols: dict[str, int] = {}  # most used first
    resolutions: dict[str, int] = {}  # most frequent first
    truncated: bool = False


def _restricted(
    query: Select[tuple[DeliberationRow]],
    *,
    repo: str | None = None,
    pr: int | None = None,
    repos: Collection[str] | None = None,
    since: date | None = None,
) -> Select[tuple[DeliberationRow]]:
    if repo is not None:
        query = query.where(DeliberationRow.repo == repo)
    if pr is not None:
        query = query.where(DeliberationRow.pr_number == pr)
    if repos is not None:
        query = query.where(DeliberationRow.repo.in_(sorted(set(repos))))
    if since is not None:
        query = query.where(DeliberationRow.created_at >= datetime.combine(since, time(), UTC))
    return query


async def reviewed_repos(db: Database) -> list[str]:
    """Every repository the store has a deliberation of, sorted."""
    async with db.session(readonly=True) as session:
        rows = await session.scalars(select(DeliberationRow.repo).distinct())
        return sorted(rows)


async def deliberation_history(
    db: Database,
    *,
    repo: str | None = None,
    pr: int | None = None,
    repos: Collection[str] | None = None,
    limit: int = 50,
) -> list[DeliberationRecord]:
    """Deliberations, newest first: of `repo` (and its PR `pr`) when given, and only of
    `repos` when given (an empty collection: none). At most `limit`."""
    if repos is not None and not repos:
        return []
    query = _restricted(select(DeliberationRow), repo=repo, pr=pr, repos=repos)
    query = query.order_by(DeliberationRow.created_at.desc(), DeliberationRow.id).limit(
        max(limit, 0)
    )
    async with db.session(readonly=True) as session:
        return [DeliberationRecord.model_validate(row) for row in await session.scalars(query)]


def parse_advisory(record: DeliberationRecord) -> Advisory | None:
    """The record's stored advisory; None when it has none or it no longer parses."""
    if not record.advisory_json:
        return None
    try:
        return Advisory.model_validate_json(record.advisory_json)
    except ValidationError:
        return None


async def load_transcript(
    db: Database, deliberation_id: str, *, repos: Collection[str] | None = None
) -> tuple[DeliberationRecord, Advisory | None, list[LedgerEvent]] | None:
    """A deliberation's record, its advisory (None: none stored, or unreadable) and its
    ledger events in order; None when there is no such deliberation, or (`repos` given)
    when its repository is not one of `repos` (a reader who may not read it learns
    nothing of it, not even that it exists)."""
    record = await get_deliberation(db, deliberation_id)
    if record is None or (repos is not None and record.repo not in set(repos)):
        return None
    return record, parse_advisory(record), await SqlLedger(db).events(record.id)


def _priced(payload: object) -> float:
    cost = payload.get("cost") if isinstance(payload, dict) else None
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0


async def usage_stats(
    db: Database, *, repos: Collection[str] | None = None, since: date | None = None
) -> UsageStats:
    """The store's figures over the deliberations of `repos` (every repository when None,
    none when empty) started on or after `since` (UTC): see the module docstring."""
    restriction = sorted(set(repos)) if repos is not None else None
    if restriction is not None and not restriction:
        return UsageStats(since=since, repos=[])
    query = _restricted(select(DeliberationRow), repos=restriction, since=since)
    query = query.order_by(DeliberationRow.created_at.desc(), DeliberationRow.id)
    async with db.session(readonly=True) as session:
        rows = (await session.scalars(query.limit(MAX_STATS_DELIBERATIONS + 1))).all()
        records = [DeliberationRecord.model_validate(r) for r in rows]
        truncated = len(records) > MAX_STATS_DELIBERATIONS
        records = records[:MAX_STATS_DELIBERATIONS]
        ids = [r.id for r in records]
        outcomes = await _outcomes(session, ids)
        persona_outcomes = await _persona_outcomes(session, ids)
        paid = await _paid_by_day(session, ids)
        fixed = await _fixed_findings(session, records)
    personas = _persona_stats(records, outcomes, fixed, persona_outcomes)
    by_day, by_repo = _costs(records, paid)
    return UsageStats(
        since=since,
        repos=restriction,
        deliberations=len(records),
        total_cost_usd=sum(c.cost_usd for c in by_repo),
        personas=personas,
        cost_by_day=by_day,
        cost_by_repo=by_repo,
        protocols=dict(Counter(r.protocol for r in records).most_common()),
        resolutions=dict(Counter(r.resolution or r.status.value for r in records).most_common()),
        truncated=truncated,
    )


def _chunks(ids: Sequence[str], size: int = 500) -> list[Sequence[str]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


async def _outcomes(session: AsyncSession, ids: Sequence[str]) -> dict[str, OutcomeRecord]:
    found: dict[str, OutcomeRecord] = {}
    for chunk in _chunks(ids):
        query = select(OutcomeRow).where(OutcomeRow.deliberation_id.in_(list(chunk)))
        for row in await session.scalars(query):
            found[row.deliberation_id] = OutcomeRecord.model_validate(row)
    return found


async def _persona_outcomes(session: AsyncSession, ids: Sequence[str]) -> dict[str, Counter[str]]:
    """Per persona: its outcome records ("outcomes"), the successful ones ("held_up"), and
    the records by basis (each basis's name)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for chunk in _chunks(ids):
        query = select(
            PersonaOutcomeRow.persona_id, PersonaOutcomeRow.success, PersonaOutcomeRow.basis
        ).where(PersonaOutcomeRow.deliberation_id.in_(list(chunk)))
        for persona_id, success, basis in (await session.execute(query)).all():
            counts[persona_id].update(
                {"outcomes": 1, "held_up": 1 if success else 0, _basis(basis): 1}
            )
    return counts


def _basis(stored: str) -> str:
    """A stored basis this code knows; anything else counts as "legacy"."""
    return stored if stored in OUTCOME_BASES else "legacy"


async def _paid_by_day(session: AsyncSession, ids: Sequence[str]) -> dict[str, dict[date, float]]:
    """Per deliberation, per UTC day: what its ledger's answers cost."""
    paid: dict[str, dict[date, float]] = defaultdict(lambda: defaultdict(float))
    for chunk in _chunks(ids):
        query = select(
            LedgerEventRow.deliberation_id, LedgerEventRow.payload, LedgerEventRow.created_at
        ).where(
            LedgerEventRow.deliberation_id.in_(list(chunk)),
            LedgerEventRow.kind == EventKind.SEAT_RETURNED.value,
        )
        for deliberation_id, payload, created_at in (await session.execute(query)).all():
            cost = _priced(payload)
            if cost > 0:
                paid[deliberation_id][created_at.astimezone(UTC).date()] += cost
    return paid


async def _fixed_findings(
    session: AsyncSession, records: Sequence[DeliberationRecord]
) -> set[tuple[str, int, str, int | None, str]]:
    """(repo, pr, path, line, title) of every finding a re-review marked fixed."""
    repos = sorted({r.repo for r in records if r.pr_number is not None})
    fixed: set[tuple[str, int, str, int | None, str]] = set()
    for chunk in _chunks(repos):
        query = select(PrFindingRow).where(
            PrFindingRow.repo.in_(list(chunk)), PrFindingRow.status == "fixed"
        )
        for row in await session.scalars(query):
            fixed.add((row.repo, row.pr_number, row.path, row.line, row.title))
    return fixed


def _persona_stats(
    records: Sequence[DeliberationRecord],
    outcomes: dict[str, OutcomeRecord],
    fixed: set[tuple[str, int, str, int | None, str]],
    persona_outcomes: dict[str, Counter[str]],
) -> list[PersonaStats]:
    stats: dict[str, dict[str, int]] = defaultdict(Counter)
    for record in records:
        advisory = parse_advisory(record)
        if advisory is None:
            continue
        outcome = outcomes.get(record.id)
        addressed = set(outcome.addressed_findings) if outcome else set()
        persona_of = {s.seat_id: s.persona_id for s in advisory.seats}
        for persona in {s.persona_id for s in advisory.valid_seats()}:
            counts = stats[persona]
            counts["reviews"] += 1
            if outcome is not None:
                counts["closed"] += 1
                counts["merged"] += 1 if outcome.merged else 0
        for finding in advisory.findings:
            was_fixed = finding_key(finding) in addressed or (
                record.pr_number is not None
                and (record.repo, record.pr_number, finding.path, finding.start_line, finding.title)
                in fixed
            )
            for persona in {persona_of[s] for s in finding.raised_by if s in persona_of}:
                stats[persona]["findings_raised"] += 1
                stats[persona]["findings_addressed"] += 1 if was_fixed else 0
    for persona, counted in persona_outcomes.items():
        stats[persona]["outcomes"] += counted["outcomes"]
        stats[persona]["held_up"] += counted["held_up"]
    found = [
        PersonaStats(
            persona_id=p,
            **counts,
            bases={b: persona_outcomes.get(p, Counter())[b] for b in OUTCOME_BASES},
        )
        for p, counts in stats.items()
    ]
    return sorted(found, key=lambda s: (-s.reviews, s.persona_id))


def _costs(
    records: Sequence[DeliberationRecord], paid: dict[str, dict[date, float]]
) -> tuple[list[DayCost], list[RepoCost]]:
    day_cost: dict[date, float] = defaultdict(float)
    day_count: Counter[date] = Counter()
    repo_cost: dict[str, float] = defaultdict(float)
    repo_count: Counter[str] = Counter()
    for record in records:
        by_day = paid.get(record.id) or (
            {record.created_at.astimezone(UTC).date(): record.cost_usd}
            if record.cost_usd > 0
            else {}
        )
        for day, cost in by_day.items():
            day_cost[day] += cost
        started = record.created_at.astimezone(UTC).date()
        day_count[started] += 1
        repo_cost[record.repo] += sum(by_day.values())
        repo_count[record.repo] += 1
    days = [
        DayCost(day=d, cost_usd=day_cost.get(d, 0.0), deliberations=day_count[d])
        for d in sorted(day_cost.keys() | day_count.keys())
    ]
    repos = sorted(
        (RepoCost(repo=r, cost_usd=repo_cost[r], deliberations=repo_count[r]) for r in repo_count),
        key=lambda c: (-c.cost_usd, c.repo),
    )
    return days, repos
