"""The catalogue change log that navigators follow to stay current.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "catalog_changes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("machine", sa.String(length=63), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_catalog_changes")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("catalog_changes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_catalog_changes_at"), ["at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("catalog_changes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_catalog_changes_at"))

    op.drop_table("catalog_changes")
