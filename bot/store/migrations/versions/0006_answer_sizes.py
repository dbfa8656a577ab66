"""Answer sizes: the output tokens of each model's recent answers, which a call's cost
reservation follows (the 95th percentile of the model's last 50) instead of the full
`max_tokens`.

Revision ID: 0006_answer_sizes
Revises: 0005_pr_findings
Create Date: 2026-12-15
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0006_answer_sizes"
down_revision: str | None = "0005_pr_findings"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copy of the model's column type: a revision never imports the live models.
BIGINT_PK = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "answer_sizes",
        sa.Column("id", BIGINT_PK, autoincrement=True, nullable=False),
        sa.Column("model", sa.String(255), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_answer_sizes"),
    )
    op.create_index("ix_answer_sizes_model_id", "answer_sizes", ["model", "id"])


def downgrade() -> None:
    op.drop_index("ix_answer_sizes_model_id", table_name="answer_sizes")
    op.drop_table("answer_sizes")
