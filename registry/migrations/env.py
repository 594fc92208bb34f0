"""Alembic environment: the URL comes from ``registry.database.migrate``, never from a file."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from registry.database import WRITES, make_engine
from registry.models import Base

#: PostgreSQL advisory lock key, so that navigators starting together migrate one at a time.
MIGRATION_LOCK = 0x6D657368


def run_migrations_online() -> None:
    url = context.config.attributes["database_url"]
    engine = make_engine(url)
    # On SQLite the write lock is taken as the migration's transaction begins: a second
    # ``migrate`` at once waits, then finds the schema at head (PostgreSQL: the advisory lock).
    with engine.connect().execution_options(**{WRITES: True}) as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
            connection.commit()
        try:
            context.configure(
                connection=connection,
                target_metadata=Base.metadata,
                render_as_batch=True,
                compare_type=True,
            )
            with context.begin_transaction():
                context.run_migrations()
        finally:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
                connection.commit()
    engine.dispose()


run_migrations_online()
