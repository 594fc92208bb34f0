"""Data step: the named revision counters, created once; existing values are kept.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

COUNTERS = ("grants", "catalog")


def upgrade() -> None:
    connection = op.get_bind()
    revisions = sa.table("revisions", sa.column("name", sa.String), sa.column("value", sa.Integer))
    existing = set(connection.execute(sa.select(revisions.c.name)).scalars())
    missing = [{"name": name, "value": 0} for name in COUNTERS if name not in existing]
    if missing:
        connection.execute(revisions.insert(), missing)


def downgrade() -> None:
    op.execute(sa.text("DELETE FROM revisions WHERE name IN ('grants', 'catalog')"))
