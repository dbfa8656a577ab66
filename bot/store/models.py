"""SQLAlchemy tables. Alembic revisions under `migrations/versions` must match these.

Rows stay inside `bot.store`: its query functions and `ledger.py` return pydantic models,
never rows.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Deterministic constraint names, so migrations can refer to them on every backend.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# JSONB on PostgreSQL (indexable, compact), JSON text elsewhere.
JsonColumn = JSON().with_variant(JSONB(), "postgresql")
# SQLite autoincrements only an INTEGER PRIMARY KEY.
BigIntPk = BigInteger().with_variant(Integer(), "sqlite")


def utc_now() -> datetime:
    return datetime.now(UTC)


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both backends.

    PostgreSQL keeps the zone (timestamptz); SQLite stores naive text, so values are
    stored as naive UTC and marked UTC again on the way out.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime from the database, got {type(value).__name__}")
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class DeliberationRow(Base):
    __tablename__ = "deliberations"
    __table_args__ = (
        Index("ix_deliberations_repo_pr_number_created_at", "repo", "pr_number", "created_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    # The idempotency key (e.g. the job id): one deliberation per key.
    key: Mapped[str] = mapped_column(String(255), unique=True)
    repo: Mapped[str] = mapped_column(String(255))
    pr_number: Mapped[int | None] = mapped_column(Integer)
    head_sha: Mapped[str] = mapped_column(String(64))
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    trigger: Mapped[str] = mapped_column(String(64))
    protocol: Mapped[str] = mapped_column(String(32))
    topic: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16), index=True)
    resolution: Mapped[str | None] = mapped_column(String(32))
    conclusion: Mapped[str | None] = mapped_column(String(32))
    comment_id: Mapped[int | None] = mapped_column(BigInteger)
    check_run_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now, onupdate=utc_now)
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    advisory_json: Mapped[str | None] = mapped_column(Text)


class LedgerEventRow(Base):
    __tablename__ = "ledger_events"
    # Both backends let a plain unique constraint hold many NULL steps.
    __table_args__ = (
        UniqueConstraint("deliberation_id", "seq"),
        UniqueConstraint("deliberation_id", "step"),
    )

    id: Mapped[int] = mapped_column(BigIntPk, primary_key=True, autoincrement=True)
    deliberation_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("deliberations.id", ondelete="CASCADE")
    )
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(32))
    step: Mapped[str | None] = mapped_column(String(255))
    payload: Mapped[dict[str, Any]] = mapped_column(JsonColumn)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class OutcomeRow(Base):
    __tablename__ = "outcomes"

    deliberation_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("deliberations.id", ondelete="CASCADE"), primary_key=True
    )
    merged: Mapped[bool] = mapped_column(Boolean)
    closed_at: Mapped[datetime] = mapped_column(UtcDateTime)
    addressed_findings: Mapped[list[Any]] = mapped_column(JsonColumn)
    unaddressed_findings: Mapped[list[Any]] = mapped_column(JsonColumn)


class PersonaOutcomeRow(Base):
    __tablename__ = "persona_outcomes"
    __table_args__ = (Index("ix_persona_outcomes_task_type_persona_id", "task_type", "persona_id"),)

    id: Mapped[int] = mapped_column(BigIntPk, primary_key=True, autoincrement=True)
    deliberation_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("deliberations.id", ondelete="CASCADE"), index=True
    )
    persona_id: Mapped[str] = mapped_column(String(128))
    task_type: Mapped[str] = mapped_column(String(128))
    success: Mapped[bool] = mapped_column(Boolean)
    # How `success` was decided (`bot.store.outcomes.OutcomeBasis`); rows older than the
    # column that could not be re-scored say "legacy".
    basis: Mapped[str] = mapped_column(String(32), server_default="legacy")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class InstallationRow(Base):
    __tablename__ = "installations"

    installation_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    account: Mapped[str] = mapped_column(String(255))
    repositories: Mapped[list[Any]] = mapped_column(JsonColumn)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now, onupdate=utc_now)


class DailyCostRow(Base):
    __tablename__ = "daily_costs"

    installation_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)


class PullRequestCostRow(Base):
    """What a pull request's deliberations have spent or hold, all of them together."""

    __tablename__ = "pr_costs"

    repo: Mapped[str] = mapped_column(String(255), primary_key=True)
    pr_number: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)


class SpendReservationRow(Base):
    """One call's reservation: `reserved_usd` is charged until the call is settled (then
    `actual_usd` is) or released (then nothing is). A row left `reserved` is a call whose
    outcome nobody learnt (its worker died): it stays charged in full."""

    __tablename__ = "spend_reservations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    deliberation_id: Mapped[str] = mapped_column(
        String(36), ForeignKey("deliberations.id", ondelete="CASCADE"), index=True
    )
    label: Mapped[str] = mapped_column(String(255))
    # Where it is charged, copied at reservation: a call is charged to the day it started.
    installation_id: Mapped[int | None] = mapped_column(BigInteger)
    day: Mapped[date | None] = mapped_column(Date)
    repo: Mapped[str] = mapped_column(String(255))
    pr_number: Mapped[int | None] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    reserved_usd: Mapped[float] = mapped_column(Float)
    actual_usd: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
    settled_at: Mapped[datetime | None] = mapped_column(UtcDateTime)


class PendingDeliveryRow(Base):
    """A routed delivery the receiver could not enqueue (Redis failed or did not answer in
    time), kept until the web process's drainer enqueues it; see `bot.store.pending`."""

    __tablename__ = "pending_deliveries"

    delivery_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    job_id: Mapped[str] = mapped_column(String(512))
    function: Mapped[str] = mapped_column(String(64))
    # The job's argument, the `JobRequest` as JSON text, exactly as the receiver routed it.
    payload: Mapped[str] = mapped_column(Text)
    # The body's digest (`BodyDigest`: its HMAC-SHA256 under the webhook secret): enqueueing
    # later still refuses a replay of the same body.
    body_digest: Mapped[str] = mapped_column(String(64))
    received_at: Mapped[datetime] = mapped_column(UtcDateTime, index=True)


class PrFindingRow(Base):
    """A finding raised on a pull request, by fingerprint (`bot.review.fingerprints`), over
    all its reviews: whether it is still open, fixed by a later push, or dismissed by a
    person, and where it was posted inline. See `bot.store.findings`."""

    __tablename__ = "pr_findings"
    __table_args__ = (UniqueConstraint("repo", "pr_number", "fingerprint"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(256))
    pr_number: Mapped[int] = mapped_column(Integer)
    fingerprint: Mapped[str] = mapped_column(String(32))
    path: Mapped[str] = mapped_column(Text)
    line: Mapped[int | None] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text)
    severity: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))  # open | fixed | dismissed
    first_deliberation_id: Mapped[str] = mapped_column(String(64))
    last_deliberation_id: Mapped[str] = mapped_column(String(64))
    head_sha: Mapped[str | None] = mapped_column(String(64))  # the head it was last seen on
    fixed_sha: Mapped[str | None] = mapped_column(String(64))
    review_comment_id: Mapped[int | None] = mapped_column(BigInteger)
    thread_node_id: Mapped[str | None] = mapped_column(String(128))
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)


class AnswerSizeRow(Base):
    """The output tokens of one model answer: a call reserves the 95th percentile of its
    model's last 50 (`bot.store.answer_sizes`); older rows are pruned as new ones come."""

    __tablename__ = "answer_sizes"
    __table_args__ = (Index("ix_answer_sizes_model_id", "model", "id"),)

    id: Mapped[int] = mapped_column(BigIntPk, primary_key=True, autoincrement=True)
    model: Mapped[str] = mapped_column(String(255))  # the model reference called
    output_tokens: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime, default=utc_now)
