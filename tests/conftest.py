"""Shared fixtures: a real mesh of processes for end-to-end tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import MeshHarness
from tests.postgres_server import PostgresServer, start_postgres


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """One real PostgreSQL 15 for the whole session (per xdist worker), removed at the end."""
    server = start_postgres(tmp_path_factory.mktemp("postgres"))
    try:
        yield server
    finally:
        server.stop()


def seed_sqlite(path: Path, statements: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as connection:
        for statement in statements:
            connection.execute(statement)


@pytest.fixture(scope="session")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MeshHarness]:
    """The demo's shape: db1 and db2 with their own SQLite data, web1 holding the mesh seat."""
    root = tmp_path_factory.mktemp("mesh")
    seed_sqlite(
        root / "db1" / "inventory.db",
        [
            "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT)",
            "INSERT INTO products (name) VALUES ('anvil'), ('rope')",
        ],
    )
    seed_sqlite(
        root / "db2" / "customers.db",
        [
            "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)",
            "INSERT INTO customers (name) VALUES ('Ada')",
        ],
    )
    seed_sqlite(
        root / "web1" / "notes.db", ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"]
    )
    harness = MeshHarness(root / "run")
    try:
        harness.agent_token = harness.principal("agent")  # type: ignore[attr-defined]
        harness.grant("agent", "*/*/*")
        harness.start_navigator()
        harness.start_node("db1", ["node", f"sqlite:{root / 'db1'}"], wait=False)
        harness.start_node("db2", ["node", f"sqlite:{root / 'db2'}"], wait=False)
        harness.start_node(
            "web1", ["node"], seats=[f"notes=sqlite:{root / 'web1' / 'notes.db'}"], wait=False
        )
        for name in ("db1", "db2", "web1"):
            harness.wait_registered(name, harness.nodes[name].process)
        yield harness
    finally:
        harness.close()
