"""Schema step: console sessions, shared by every navigator of the registry.

A browser signed in to the console held the viewer's bearer token in its cookie, and signing out
only cleared it there. The cookie now holds a random session id; the registry keeps its SHA-256
and what the session stands for, so signing out, a rotation or a revocation ends it on every
navigator at once (ADR 0033).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("principal", sa.String(length=128), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=True),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id_hash", name=op.f("pk_console_sessions")),
    )
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_console_sessions_principal"), ["principal"], unique=False
        )


def downgrade() -> None:
    op.drop_table("console_sessions")
