"""Schema step: approved contracts (SPEC §14) — each tool's contract state and last approved
digest, each assignment's first registration and refused tools, and the operators' decisions.

Every tool registered before is approved as it is, and every assignment that held tools has had
its first registration: an upgrade serves what it served.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tools", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "contract_state", sa.String(length=16), nullable=False, server_default="approved"
            )
        )
        batch_op.add_column(sa.Column("approved_digest", sa.String(length=64), nullable=True))
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.add_column(sa.Column("contracts_since", sa.DateTime(timezone=True)))
        batch_op.add_column(
            sa.Column("refused", sa.JSON(), nullable=False, server_default=sa.text("'{}'"))
        )
    op.create_table(
        "contract_decisions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=63), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("decided_by", sa.String(length=128), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contract_decisions")),
        sa.UniqueConstraint("role", "name", "digest", name=op.f("uq_contract_decisions_role")),
    )
    op.execute("UPDATE tools SET approved_digest = contract_digest")
    op.execute(
        "UPDATE assignments SET contracts_since = updated_at"
        " WHERE EXISTS (SELECT 1 FROM tools WHERE tools.assignment_id = assignments.id)"
    )
    op.execute(
        "INSERT INTO contract_decisions"
        " (role, name, digest, definition, state, decided_by, decided_at, created_at)"
        " SELECT a.role, t.name, t.contract_digest, t.definition, 'approved', 'migration',"
        " CURRENT_TIMESTAMP, CURRENT_TIMESTAMP"
        " FROM tools t JOIN assignments a ON t.assignment_id = a.id"
        " WHERE t.id IN (SELECT min(t2.id) FROM tools t2 JOIN assignments a2"
        " ON t2.assignment_id = a2.id GROUP BY a2.role, t2.name, t2.contract_digest)"
    )


def downgrade() -> None:
    op.drop_table("contract_decisions")
    with op.batch_alter_table("assignments", schema=None) as batch_op:
        batch_op.drop_column("refused")
        batch_op.drop_column("contracts_since")
    with op.batch_alter_table("tools", schema=None) as batch_op:
        batch_op.drop_column("approved_digest")
        batch_op.drop_column("contract_state")
