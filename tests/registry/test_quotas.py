"""A principal's quota in the registry (ADR 0041), on SQLite and PostgreSQL: stored with it, read
with its token in the one statement every request makes, changed in place, and empty (no limit)
for a principal made before the quota columns."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic import command

from registry import UNLIMITED, AccessStore, NotFound, Quota, Registry, migrate, read_token_holder
from registry.database import alembic_config

pytestmark = pytest.mark.xdist_group("postgres")


def test_a_quota_is_stored_and_read_with_the_token(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("alice", scopes=[], token_hash="a" * 64, quota=Quota(600, 8))
        store.add_principal("bob", scopes=[], token_hash="b" * 64)
        store.grant("alice", "*/*/*", effect="allow")
    alice = read_token_holder(registry, "a" * 64, limit=4096)
    bob = read_token_holder(registry, "b" * 64, limit=4096)
    assert alice is not None and alice.quota == Quota(600, 8)
    assert alice.grants is not None and len(alice.grants.rows) == 1  # the columns still line up
    assert bob is not None and bob.quota == UNLIMITED
    with registry.read_transaction() as session:
        store = AccessStore(session)
        assert store.principal("alice").quota == Quota(600, 8)
        assert store.principal_by_token("a" * 64).quota == Quota(600, 8)  # type: ignore[union-attr]
        shown = store.principal("alice").as_json()
    assert shown["ratePerMinute"] == 600 and shown["concurrency"] == 8


def test_a_quota_changes_in_place_and_the_next_read_sees_it(registry: Registry) -> None:
    with registry.transaction() as session:
        AccessStore(session).add_principal("alice", scopes=[], token_hash="a" * 64)
    assert read_token_holder(registry, "a" * 64, limit=4096).quota == UNLIMITED  # type: ignore[union-attr]
    with registry.transaction() as session:
        changed = AccessStore(session).set_quota("alice", Quota(60, None))
    assert changed.quota == Quota(60, None)
    assert read_token_holder(registry, "a" * 64, limit=4096).quota == Quota(60, None)  # type: ignore[union-attr]
    with registry.transaction() as session:
        AccessStore(session).set_quota("alice", UNLIMITED)
    assert read_token_holder(registry, "a" * 64, limit=4096).quota == UNLIMITED  # type: ignore[union-attr]
    with registry.transaction() as session, pytest.raises(NotFound):
        AccessStore(session).set_quota("nobody", Quota(1, 1))


def test_a_principal_from_before_the_quota_columns_has_no_limit(database_url: str) -> None:
    config = alembic_config(database_url)
    command.upgrade(config, "0007")
    engine = sa.create_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO principals (name, scopes, token_hash, created_at) "
                    "VALUES ('old', '[]', :hash, CURRENT_TIMESTAMP)"
                ),
                {"hash": "o" * 64},
            )
    finally:
        engine.dispose()
    migrate(database_url)
    registry = Registry(database_url)
    try:
        old = read_token_holder(registry, "o" * 64, limit=4096)
        assert old is not None and old.quota == UNLIMITED
        with registry.transaction() as session:
            AccessStore(session).set_quota("old", Quota(5, 1))
        assert read_token_holder(registry, "o" * 64, limit=4096).quota == Quota(5, 1)  # type: ignore[union-attr]
    finally:
        registry.dispose()
    command.downgrade(config, "0007")  # and back: the step is reversible
    command.upgrade(config, "head")
