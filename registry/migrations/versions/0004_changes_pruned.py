"""Data step: the counter of how far the catalogue change log has been pruned.

A navigator whose view is older than that point cannot catch up from the log and loads the whole
catalogue instead (ADR 0008).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

COUNTER = "changes_pruned"


def upgrade() -> None:
    connection = op.get_bind()
    revisions = sa.table("revisions", sa.column("name", sa.String), sa.column("value", sa.Integer))
    existing = connection.execute(
        sa.select(revisions.c.name).where(revisions.c.name == COUNTER)
    ).first()
    if existing is None:
        connection.execute(revisions.insert(), [{"name": COUNTER, "value": 0}])


def downgrade() -> None:
    op.execute(sa.text(f"DELETE FROM revisions WHERE name = '{COUNTER}'"))
