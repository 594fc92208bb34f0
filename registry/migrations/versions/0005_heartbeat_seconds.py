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
    # PostgreSQL alters the column in place. SQLite is left alone: its INTEGER column already keeps
    # 1.4 as 1.4 (a value an integer cannot hold exactly stays REAL), and altering a column there
    # means rebuilding the table, whose drop would cascade (foreign keys are on) to every node key,
    # assignment and tool of every machine.
    if op.get_bind().dialect.name == "sqlite":
        return
    op.alter_column(
        "machines", "heartbeat_s", existing_type=sa.Integer(), type_=sa.Float(), nullable=False
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        return
    op.alter_column(
        "machines",
        "heartbeat_s",
        existing_type=sa.Float(),
        type_=sa.Integer(),
        nullable=False,
        postgresql_using="round(heartbeat_s)::integer",
    )
