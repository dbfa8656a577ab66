"""Pending deliveries: `body_sha256` is `body_digest`, the name of what it holds.

The receiver keeps the body's HMAC-SHA256 under the webhook secret (which checking the
signature computed already), not its plain SHA-256; the column's name said otherwise.

Revision ID: 0004_body_digest
Revises: 0003_pending
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision: str = "0004_body_digest"
down_revision: str | None = "0003_pending"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("pending_deliveries") as batch:
        batch.alter_column("body_sha256", new_column_name="body_digest")


def downgrade() -> None:
    with op.batch_alter_table("pending_deliveries") as batch:
        batch.alter_column("body_digest", new_column_name="body_sha256")
