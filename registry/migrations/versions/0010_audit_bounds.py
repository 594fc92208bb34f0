"""Schema step: the audit trail's bounds — where retention last pruned each chain, how many
refusals an aggregated event stands for, and the key of the arguments' keyed digest.

``audit_heads.pruned_seq``/``pruned_hash`` name the last event retention removed (0 and the
genesis hash until it removes one): ``meshnav audit verify`` holds the first kept event to it.
Chains pruned before this step are taken to start where they start now.
``audit_events.count`` is empty for every event but an aggregated refusal. ``audit_keys`` holds
the one HMAC key every navigator sharing the registry digests arguments with (ADR 0045).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_GENESIS = "0" * 64


def upgrade() -> None:
    with op.batch_alter_table("audit_heads", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("pruned_seq", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(
            sa.Column("pruned_hash", sa.String(length=64), nullable=False, server_default=_GENESIS)
        )
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.add_column(sa.Column("count", sa.Integer(), nullable=True))
    # a chain pruned before this step starts where its first kept event says, as it did before;
    # one whose events are all gone, at its head
    op.execute(
        "UPDATE audit_heads SET pruned_seq = seq, pruned_hash = hash WHERE NOT EXISTS "
        "(SELECT 1 FROM audit_events e WHERE e.instance = audit_heads.instance)"
    )
    op.execute(
        "UPDATE audit_heads SET "
        "pruned_seq = (SELECT MIN(e.seq) - 1 FROM audit_events e "
        "WHERE e.instance = audit_heads.instance), "
        "pruned_hash = (SELECT e.prev_hash FROM audit_events e "
        "WHERE e.instance = audit_heads.instance ORDER BY e.seq LIMIT 1) "
        "WHERE EXISTS (SELECT 1 FROM audit_events e WHERE e.instance = audit_heads.instance)"
    )
    op.create_table(
        "audit_keys",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("key", sa.LargeBinary(length=64), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_audit_keys")),
    )


def downgrade() -> None:
    op.drop_table("audit_keys")
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_column("count")
    with op.batch_alter_table("audit_heads", schema=None) as batch_op:
        batch_op.drop_column("pruned_hash")
        batch_op.drop_column("pruned_seq")
