"""Schema step: the node instance serving each machine, and since when (SPEC §6, ADR 0050).

Both are empty for a machine registered before: its next registration records its node's
instance, and until then any instance may take it over, as before.

Revision ID: 0012
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0010"
branch_labels = None
depends_on = None

COLUMNS = ("instance_id", "instance_since")


def upgrade() -> None:
    # Added in place on both databases (nullable columns): SQLite's ALTER TABLE ADD COLUMN, no
    # rebuild of the table, whose drop would cascade to every machine's keys and assignments.
    op.add_column("machines", sa.Column("instance_id", sa.String(length=64), nullable=True))
    op.add_column(
        "machines", sa.Column("instance_since", sa.DateTime(timezone=True), nullable=True)
    )


def downgrade() -> None:
    for column in reversed(COLUMNS):
        if op.get_bind().dialect.name == "sqlite":  # in place too (SQLite 3.35+), no rebuild
            op.execute(f"ALTER TABLE machines DROP COLUMN {column}")
        else:
            op.drop_column("machines", column)
