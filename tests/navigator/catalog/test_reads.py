"""Registry reads from the event loop: a registry that never answers is unavailable in bounded
time (a frozen or partitioned PostgreSQL keeps its connections open; TCP alone does not notice)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from navigator.access.grants import Caller
from navigator.catalog.registrar import AssignmentSpec
from navigator.catalog.registry_reads import Progress, long_read, short_read
from navigator.mcp.server import running
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import AccessStore, CatalogStore, RegistryUnavailable
from registry.database import STATEMENT_TIMEOUT_S

TOOLS = [{"name": "lookup", "description": "Look a thing up.", "inputSchema": {"type": "object"}}]


async def test_a_read_the_registry_never_answers_is_given_up() -> None:
    registry: Any = SimpleNamespace(reads_inline=False)
    thawed = threading.Event()

    def frozen() -> str:
        thawed.wait(30)  # a server that holds the connection and says nothing
        return "late"

    started = time.monotonic()
    with anyio.fail_after(10), pytest.raises(RegistryUnavailable):
        await short_read(registry, frozen, timeout_s=0.2)
    waited = time.monotonic() - started
    thawed.set()  # the abandoned worker finishes on its own
    assert waited < 5  # given up near its bound (0.2 s), not when the server woke
    assert await short_read(registry, lambda: "answered") == "answered"


async def test_a_long_read_goes_on_while_it_reads_and_is_given_up_when_it_stops() -> None:
    """A whole catalogue's load takes longer than any one read's bound, so its bound is on a
    wait between rows. It had none: on a connection that never answered, the load (and the
    follow loop, and every later change) waited for good."""
    registry: Any = SimpleNamespace(reads_inline=False)
    thawed = threading.Event()

    def reading(progress: Progress, rows: int, then_stop: bool) -> int:
        for _ in range(rows):  # twice the bound in all, a tenth of it between rows
            time.sleep(0.03)
            progress.tick()
        if then_stop:
            thawed.wait(30)  # the connection went silent
        progress.done()
        time.sleep(0.6)  # building what was read: no rows, no bound
        return rows

    with anyio.fail_after(10):
        assert await long_read(registry, reading, 20, False, timeout_s=0.3) == 20
        started = time.monotonic()
        with pytest.raises(RegistryUnavailable):
            await long_read(registry, reading, 5, True, timeout_s=0.3)
    assert time.monotonic() - started < 5
    thawed.set()


async def test_a_long_reads_own_error_is_raised_as_itself() -> None:
    registry: Any = SimpleNamespace(reads_inline=False)

    def failing(progress: Progress) -> None:
        raise RegistryUnavailable("lost")

    with pytest.raises(RegistryUnavailable, match="lost"):
        await long_read(registry, failing)


async def test_a_search_on_sqlite_takes_no_pooled_connection_writers_wait_on(
    tmp_path: Path,
) -> None:
    """On SQLite a walker tool reads its grants and their revision on the event loop, since
    the file answers in microseconds. Both went through the engine's pool: while another process
    held the database's write lock, the navigator's writers (heartbeats) waited for it holding
    every pooled connection, and a search waited for one on the loop — the whole navigator
    stood still for seconds. They are single statements on the held connection, as the token's
    read is."""
    path = tmp_path / "r.db"
    services = Services.create(NavigatorSettings(database_url=f"sqlite:///{path}"))
    pool = services.registry.engine.pool
    spec = AssignmentSpec(role="books", module="books", tools=TOOLS)
    async with running(services):
        await services.registrar.put_assignment("m1", spec)
        await services.transact(
            lambda session: AccessStore(session).grant("alice", "*/*/*", effect="allow")
        )
        other = sqlite3.connect(path, isolation_level=None)  # the command line, writing
        other.execute("BEGIN IMMEDIATE")
        try:
            async with anyio.create_task_group() as tasks:
                for _ in range(pool.size() + pool._max_overflow):  # type: ignore[attr-defined]
                    tasks.start_soon(_heartbeat, services)
                with anyio.fail_after(5):
                    while pool.checkedout() < pool.size() + pool._max_overflow:  # type: ignore[attr-defined]
                        await anyio.sleep(0.01)
                started = time.monotonic()
                found, _ = await services.navigator.search(
                    Caller("alice", frozenset()),
                    "look up",
                    limit=8,
                    within=None,
                    schemas=False,
                    cursor=None,
                )
                waited = time.monotonic() - started
                other.execute("ROLLBACK")
        finally:
            other.close()
    assert [result["address"] for result in found["results"]] == ["m1/books/lookup"]
    assert waited < STATEMENT_TIMEOUT_S / 2, "the search waited for a writer's connection"


async def _heartbeat(services: Services) -> None:
    with contextlib.suppress(RegistryUnavailable):  # the lock held past its busy timeout
        await services.transact(lambda session: CatalogStore(session).heartbeat("m1"))
