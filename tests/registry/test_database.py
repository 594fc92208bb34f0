"""Migrating: Alembic only when the registry is not at the newest schema already."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from registry import (
    AccessStore,
    CatalogStore,
    Registry,
    RegistryUnavailable,
    migrate,
    ready_revision,
)
from registry.database import (
    HEAD_REVISION,
    KEEPALIVES,
    alembic_config,
    make_engine,
    schema_revision,
)


def test_the_known_head_is_alembics_head() -> None:
    scripts = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert scripts.get_current_head() == HEAD_REVISION


def test_a_new_registry_is_migrated_and_then_left_alone(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert schema_revision(database_url) is None
    migrate(database_url)
    assert schema_revision(database_url) == HEAD_REVISION

    def upgrade(*_: object) -> None:
        raise AssertionError("a registry at the newest schema was upgraded")

    monkeypatch.setattr(command, "upgrade", upgrade)
    migrate(database_url)
    assert schema_revision(database_url) == HEAD_REVISION


def test_a_registry_behind_is_upgraded(database_url: str) -> None:
    command.upgrade(alembic_config(database_url), "0002")
    assert schema_revision(database_url) == "0002"
    migrate(database_url)
    assert schema_revision(database_url) == HEAD_REVISION


def test_upgrading_keeps_what_the_registry_holds(database_url: str) -> None:
    """Each step from 0004 on a registry with a machine, its node key, an assignment, a tool and
    grants: nothing is lost (a rebuilt ``machines`` on SQLite would cascade its drop to all of
    them), a heartbeat period keeps its fraction once the schema is at the head, and the rebuilt
    ``grants`` keeps its rows, its ids and its index, and gives a revoked newest id to no one."""
    command.upgrade(alembic_config(database_url), "0004")
    engine = make_engine(database_url)
    now = datetime.now(UTC)
    with engine.begin() as connection:
        machine = connection.execute(
            text(
                "INSERT INTO machines (name, advertise_url, heartbeat_s, created_at)"
                " VALUES ('db1', 'http://db1:7801', 5, :now) RETURNING id"
            ),
            {"now": now},
        ).scalar_one()
        connection.execute(
            text("INSERT INTO node_keys (machine_id, key, created_at) VALUES (:m, :k, :now)"),
            {"m": machine, "k": b"k" * 32, "now": now},
        )
        connection.execute(
            text(
                "INSERT INTO assignments (machine_id, role, module, kind, scopes, updated_at)"
                " VALUES (:m, 'sqlite', 'sqlite', 'assignment', '[]', :now)"
            ),
            {"m": machine, "now": now},
        )
        for target in ("db1/*/*", "db2/*/*"):
            connection.execute(
                text(
                    "INSERT INTO grants (principal, target, scopes, effect, revision, created_at)"
                    " VALUES ('alice', :target, '[]', 'allow', 1, :now)"
                ),
                {"target": target, "now": now},
            )
    engine.dispose()
    migrate(database_url)
    engine = make_engine(database_url)
    try:
        assert "ix_grants_principal" in {i["name"] for i in inspect(engine).get_indexes("grants")}
    finally:
        engine.dispose()
    registry = Registry(database_url)
    try:
        with registry.transaction() as session:
            store = CatalogStore(session)
            assert store.node_key("db1") == b"k" * 32
            assert [a.role for a in store.assignments(machine="db1")] == ["sqlite"]
            store.register_node("db1", advertise_url="http://db1:7801", heartbeat_s=1.4)
        with registry.transaction() as session:
            assert CatalogStore(session).machine("db1").heartbeat_s == 1.4
            access = AccessStore(session)
            grants = access.grants("alice")
            assert [g.target for g in grants] == ["db1/*/*", "db2/*/*"]
            access.revoke_grant(grants[-1].id)
        with registry.transaction() as session:
            assert AccessStore(session).grant("bob", "db3/*/*", effect="allow").id > grants[-1].id
    finally:
        registry.dispose()


def test_a_new_sqlite_registry_is_readable_by_its_owner_alone(tmp_path: Path) -> None:
    """It holds every node's call-token key: a local user who could read it signed calls that a
    node ran, with no grant and no confirmation (a review, session 12). Its WAL and
    shared-memory files take its mode."""
    path = tmp_path / "new" / "registry.db"
    url = f"sqlite:///{path}"
    migrate(url)
    registry = Registry(url)
    try:
        with registry.transaction() as session:
            CatalogStore(session).register_node(
                "db1", advertise_url="http://127.0.0.1:9/", heartbeat_s=5
            )
        made = [path, path.with_name("registry.db-wal"), path.with_name("registry.db-shm")]
        assert all(p.exists() for p in made)
        assert {oct(p.stat().st_mode & 0o777) for p in made} == {oct(0o600)}
        assert path.parent.stat().st_mode & 0o077 == 0
    finally:
        registry.dispose()


def test_a_registry_is_ready_only_when_migrated_and_checking_creates_nothing(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'typo' / 'registry.db'}"
    with pytest.raises(RegistryUnavailable, match="migrate makes one"):
        ready_revision(url)
    assert not (tmp_path / "typo").exists()
    command.upgrade(alembic_config(url), "0002")
    with pytest.raises(RegistryUnavailable, match="migrate upgrades it"):
        ready_revision(url)
    migrate(url)
    ready_revision(url)


def test_a_postgres_connection_finds_a_silent_peer_dead(database_url: str) -> None:
    """A review: a catch-up or the change log's LISTEN waiting on a connection whose peer went
    silent (the network failed while the registry moved on) waited for good: nothing on the
    socket would ever say the peer was gone. Every PostgreSQL connection — the engine's and the
    listener's, which takes the same parameters — has TCP keepalives and a user timeout."""
    if not database_url.startswith("postgresql"):
        pytest.skip("a SQLite registry has no network connection")
    registry = Registry(database_url)
    try:
        connection = registry.engine.raw_connection()
        try:
            fileno = connection.driver_connection.fileno()
            with socket.socket(fileno=os.dup(fileno)) as sock:
                keepalive = sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)
                idle = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)
                count = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT)
                user_timeout = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT)
        finally:
            connection.close()
    finally:
        registry.dispose()
    assert keepalive == 1
    assert (idle, count) == (KEEPALIVES["keepalives_idle"], KEEPALIVES["keepalives_count"])
    assert user_timeout == KEEPALIVES["tcp_user_timeout"]
