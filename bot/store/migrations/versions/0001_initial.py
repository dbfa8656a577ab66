"""Initial schema: deliberations, their ledgers, outcomes, installations and daily costs.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of the model's column types: a revision never imports the live models.
JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
BIGINT_PK = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def utc_timestamp(name: str, *, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def create_deliberations() -> None:
    op.create_table(
        "deliberations",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("key", sa.String(255), nullable=False),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("trigger", sa.String(64), nullable=False),
        sa.Column("protocol", sa.String(32), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("resolution", sa.String(32), nullable=True),
        sa.Column("conclusion", sa.String(32), nullable=True),
        sa.Column("comment_id", sa.BigInteger(), nullable=True),
        sa.Column("check_run_id", sa.BigInteger(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        utc_timestamp("created_at"),
        utc_timestamp("updated_at"),
        utc_timestamp("finished_at", nullable=True),
        sa.Column("advisory_json", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_deliberations"),
        sa.UniqueConstraint("key", name="uq_deliberations_key"),
    )
    op.create_index("ix_deliberations_status", "deliberations", ["status"])
    op.create_index("ix_deliberations_check_run_id", "deliberations", ["check_run_id"])
    op.create_index(
        "ix_deliberations_repo_pr_number_created_at",
        "deliberations",
        ["repo", "pr_number", "created_at"],
    )


def deliberation_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["deliberation_id"],
        ["deliberations.id"],
        name=f"fk_{table}_deliberation_id_deliberations",
        ondelete="CASCADE",
    )


def create_ledger_events() -> None:
    op.create_table(
        "ledger_events",
        sa.Column("id", BIGINT_PK, autoincrement=True, nullable=False),
        sa.Column("deliberation_id", sa.String(36), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("step", sa.String(255), nullable=True),
        sa.Column("payload", JSON_TYPE, nullable=False),
        utc_timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_ledger_events"),
        deliberation_fk("ledger_events"),
        sa.UniqueConstraint("deliberation_id", "seq", name="uq_ledger_events_deliberation_id_seq"),
        # Many NULL steps are allowed on both backends; a non-NULL step is recorded once.
        sa.UniqueConstraint(
            "deliberation_id", "step", name="uq_ledger_events_deliberation_id_step"
        ),
    )


def create_outcomes() -> None:
    op.create_table(
        "outcomes",
        sa.Column("deliberation_id", sa.String(36), nullable=False),
        sa.Column("merged", sa.Boolean(), nullable=False),
        utc_timestamp("closed_at"),
        sa.Column("addressed_findings", JSON_TYPE, nullable=False),
        sa.Column("unaddressed_findings", JSON_TYPE, nullable=False),
        sa.PrimaryKeyConstraint("deliberation_id", name="pk_outcomes"),
        deliberation_fk("outcomes"),
    )
    op.create_table(
        "persona_outcomes",
        sa.Column("id", BIGINT_PK, autoincrement=True, nullable=False),
        sa.Column("deliberation_id", sa.String(36), nullable=False),
        sa.Column("persona_id", sa.String(128), nullable=False),
        sa.Column("task_type", sa.String(128), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        utc_timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name="pk_persona_outcomes"),
        deliberation_fk("persona_outcomes"),
    )
    op.create_index("ix_persona_outcomes_deliberation_id", "persona_outcomes", ["deliberation_id"])
    op.create_index(
        "ix_persona_outcomes_task_type_persona_id",
        "persona_outcomes",
        ["task_type", "persona_id"],
    )


def create_installations_and_costs() -> None:
    op.create_table(
        "installations",
        sa.Column("installation_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("account", sa.String(255), nullable=False),
        sa.Column("repositories", JSON_TYPE, nullable=False),
        utc_timestamp("updated_at"),
        sa.PrimaryKeyConstraint("installation_id", name="pk_installations"),
    )
    op.create_table(
        "daily_costs",
        sa.Column("installation_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("installation_id", "day", name="pk_daily_costs"),
    )


def upgrade() -> None:
    create_deliberations()
    create_ledger_events()
    create_outcomes()
    create_installations_and_costs()


def downgrade() -> None:
    for table in (
        "daily_costs",
        "installations",
        "persona_outcomes",
        "outcomes",
        "ledger_events",
        "deliberations",
    ):
        op.drop_table(table)
