"""Schema step: a principal's quota, the calls per minute and the calls at once it may make.

Both are empty for a principal made before, and for one made without them: no limit (ADR 0041).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("principals", schema=None) as batch_op:
        batch_op.add_column(sa.Column("rate_per_minute", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("concurrency", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("principals", schema=None) as batch_op:
        batch_op.drop_column("concurrency")
        batch_op.drop_column("rate_per_minute")
