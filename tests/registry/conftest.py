"""Every registry test runs on SQLite and on a real PostgreSQL the session started."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from registry import Registry, migrate
from tests.postgres_server import PostgresServer

_databases = itertools.count()


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'registry.db'}"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = f"registry_{next(_databases)}"
    yield server.create_database(name)
    server.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def registry(database_url: str) -> Iterator[Registry]:
    migrate(database_url)
    store = Registry(database_url)
    try:
        yield store
    finally:
        store.dispose()
