"""Spend reservations: each call's worst case is held before it starts, and the
pull request's total over all its deliberations.

Revision ID: 0002_spend
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0002_spend"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def utc_timestamp(name: str, *, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "pr_costs",
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("pr_number", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("repo", "pr_number", name="pk_pr_costs"),
    )
    op.create_table(
        "spend_reservations",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("deliberation_id", sa.String(36), nullable=False),
        sa.Column("label", sa.String(255), nullable=False),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("day", sa.Date(), nullable=True),
        sa.Column("repo", sa.String(255), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("reserved_usd", sa.Float(), nullable=False),
        sa.Column("actual_usd", sa.Float(), nullable=True),
        utc_timestamp("created_at"),
        utc_timestamp("settled_at", nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_spend_reservations"),
        sa.ForeignKeyConstraint(
            ["deliberation_id"],
            ["deliberations.id"],
            name="fk_spend_reservations_deliberation_id_deliberations",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_spend_reservations_deliberation_id", "spend_reservations", ["deliberation_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_spend_reservations_deliberation_id", table_name="spend_reservations")
    op.drop_table("spend_reservations")
    op.drop_table("pr_costs")
