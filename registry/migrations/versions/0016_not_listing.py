"""Schema step: why an assignment is not listing its tools — ``assignments.not_listing``, the
cause its node gave (connection refused, 401, timeout) when the module's server could not give
its ``tools/list``; empty while it lists them (ADR 0057).

Revision ID: 0016
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("not_listing", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.drop_column("not_listing")
