"""Schema step: SQLite never gives a grant id twice.

SQLite gives a new row the highest id plus one, so revoking the newest grant handed its id to the
next grant made: a ``grant revoke ID`` repeated, or read from an older listing, removed a grant
made since. ``AUTOINCREMENT`` keeps the highest id ever given. PostgreSQL's sequence never gives
an id twice already. The table is rebuilt on SQLite, which is safe for this one: no other table
refers to a grant (a rebuilt ``machines`` would cascade its drop, migration 0005).

An id revoked before this step, when it was the highest, cannot be known; the next id follows the
highest present.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _rebuild(*, autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # no column changes: recreate="always" copies the table into one made with the table options
    batch = op.batch_alter_table(
        "grants", recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
    )
    with batch:
        ...


def upgrade() -> None:
    _rebuild(autoincrement=True)


def downgrade() -> None:
    _rebuild(autoincrement=False)
