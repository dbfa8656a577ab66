"""Findings by pull request over its reviews: open, fixed or dismissed, and where posted.

Revision ID: 0005_pr_findings
Revises: 0004_body_digest
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0005_pr_findings"
down_revision: str | None = "0004_body_digest"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "pr_findings",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("repo", sa.String(256), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(32), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=True),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("first_deliberation_id", sa.String(64), nullable=False),
        sa.Column("last_deliberation_id", sa.String(64), nullable=False),
        sa.Column("head_sha", sa.String(64), nullable=True),
        sa.Column("fixed_sha", sa.String(64), nullable=True),
        sa.Column("review_comment_id", sa.BigInteger(), nullable=True),
        sa.Column("thread_node_id", sa.String(128), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_pr_findings"),
        sa.UniqueConstraint(
            "repo", "pr_number", "fingerprint", name="uq_pr_findings_repo_pr_number_fingerprint"
        ),
    )


def downgrade() -> None:
    op.drop_table("pr_findings")
