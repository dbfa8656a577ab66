"""The store's typed queries, where their callers import them: the deliberations
(bot/store/deliberations.py), how reviewed pull requests ended and the personas' track
records (bot/store/outcomes.py), the installations and their daily costs
(bot/store/installations.py).

Every function takes the `Database` first and returns pydantic models (never rows or
dicts), so callers outside `bot.store` never see SQLAlchemy. Each write is one transaction,
tried again while SQLite says the database is locked (`bot.store.db.retries_when_locked`).
"""

from __future__ import annotations

from bot.store.deliberations import (
    DeliberationNotFoundError,
    DeliberationRecord,
    DeliberationStatus,
    create_deliberation,
    find_by_check_run,
    find_deliberation,
    get_deliberation,
    last_published_for_pr,
    latest_for_pr,
    record_publication,
    reviewed_at,
    running_for_pr,
    set_status,
    stale_pending,
    stale_running,
)
from bot.store.installations import (
    InstallationRecord,
    add_cost,
    daily_cost,
    delete_installation,
    get_installation,
    upsert_installation,
)
from bot.store.outcomes import (
    OUTCOME_BASES,
    OutcomeBasis,
    OutcomeRecord,
    PersonaOutcome,
    PersonaTrackRecord,
    get_outcome,
    persona_track_records,
    record_outcome,
    record_persona_outcomes,
)

__all__ = [
    "OUTCOME_BASES",
    "DeliberationNotFoundError",
    "DeliberationRecord",
    "DeliberationStatus",
    "InstallationRecord",
    "OutcomeBasis",
    "OutcomeRecord",
    "PersonaOutcome",
    "PersonaTrackRecord",
    "add_cost",
    "create_deliberation",
    "daily_cost",
    "delete_installation",
    "find_by_check_run",
    "find_deliberation",
    "get_deliberation",
    "get_installation",
    "get_outcome",
    "last_published_for_pr",
    "latest_for_pr",
    "persona_track_records",
    "record_outcome",
    "record_persona_outcomes",
    "record_publication",
    "reviewed_at",
    "running_for_pr",
    "set_status",
    "stale_pending",
    "stale_running",
    "upsert_installation",
]
