"""Schema step: a machine's heartbeat period in seconds as a float, not a whole number.

A node heartbeating every 1.4 s was recorded as 1 s, so it read as not answering after about two
of its intervals instead of three (SPEC §6); one every 0.3 s was recorded as 1 s and read late.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("machines") as batch:  # SQLite rebuilds the table; PostgreSQL alters
        batch.alter_column(
            "heartbeat_s", existing_type=sa.Integer(), type_=sa.Float(), existing_nullable=False
        )


def downgrade() -> None:
    with op.batch_alter_table("machines") as batch:
        batch.alter_column(
            "heartbeat_s", existing_type=sa.Float(), type_=sa.Integer(), existing_nullable=False
        )
