"""Pending deliveries: routed webhook deliveries kept while Redis is unavailable, until
the web process enqueues them.

Revision ID: 0003_pending
Revises: 0002_spend
Create Date: 2026-12-08
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0003_pending"
down_revision: str | None = "0002_spend"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "pending_deliveries",
        sa.Column("delivery_id", sa.String(128), nullable=False),
        sa.Column("job_id", sa.String(512), nullable=False),
        sa.Column("function", sa.String(64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("body_sha256", sa.String(64), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("delivery_id", name="pk_pending_deliveries"),
    )
    op.create_index("ix_pending_deliveries_received_at", "pending_deliveries", ["received_at"])


def downgrade() -> None:
    op.drop_index("ix_pending_deliveries_received_at", table_name="pending_deliveries")
    op.drop_table("pending_deliveries")
