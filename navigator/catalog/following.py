"""Keeping one navigator's catalogue current while others, and operators, change the registry.

Every catalogue change is logged in its own transaction (``CatalogStore.log_change``)
and, on PostgreSQL, announced with ``pg_notify`` on commit. A navigator applies the log from where
its view stands: woken at once by the notification, and by a timer otherwise — so a navigator that
lost the database, or missed notifications, catches up from the log when it returns. The same timer
notices machines that stop (or start again) answering — after asking the registry to take a
write, so that one it would refuse is not taken for their silence (ADR 0031) — and now and then
prunes the log: an entry is kept an hour, so that a navigator that lost the database for less
than that catches up from the log, and one that lost it for longer reloads the whole catalogue
(ADR 0008).
"""

from __future__ import annotations

import contextlib
import logging
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import anyio

from registry import CatalogStore, RegistryError
from registry.changelog import NOTIFY_CHANNEL
from registry.database import KEEPALIVES

if TYPE_CHECKING:
    from navigator.services import Services

__all__ = ["follow_registry"]

logger = logging.getLogger("meshnav.navigator.following")

#: Longest wait before reconnecting the listener after the database went away.
LISTEN_BACKOFF_MAX_S = 5.0
#: How long the change log keeps an entry, and how often a navigator prunes it.
CHANGES_KEPT = timedelta(hours=1)
PRUNE_EVERY_S = 600.0


def _libpq_url(database_url: str) -> str:
    scheme, _, rest = database_url.partition("://")
    return "postgresql://" + rest if scheme.startswith("postgresql") else database_url


async def _listen(url: str, woken: list[anyio.Event]) -> None:
    """Hold a LISTEN connection; set the current wake event on every notification."""
    import psycopg  # only a PostgreSQL registry listens: a SQLite navigator starts without it

    delay = 0.2
    while True:
        try:
            # a connection cancelled half made (the navigator stopping as it starts) was left
            # open for the collector to find: made whole first, within its timeout, then closed
            with anyio.CancelScope(shield=True):
                made = await psycopg.AsyncConnection.connect(
                    url, autocommit=True, connect_timeout=5, **KEEPALIVES
                )
            async with made as conn:
                await conn.execute(f"LISTEN {NOTIFY_CHANNEL}")
                delay = 0.2
                woken[0].set()  # (re)connected: whatever was missed is in the log
                async for _ in conn.notifies():
                    woken[0].set()
        except (psycopg.Error, OSError):
            logger.warning("registry listener lost its connection; reconnecting")
        await anyio.sleep(delay)
        delay = min(delay * 2, LISTEN_BACKOFF_MAX_S)


async def _prune(services: Services) -> None:
    """Forget the assignments retired longer than ``retired_retention_days`` ago (logged, so
    that every view lets them go), then the change log's entries older than ``CHANGES_KEPT``
    (every navigator does; the second finds nothing left to do)."""
    now = datetime.now(UTC)
    kept = timedelta(days=services.settings.retired_retention_days)
    retired = await services.transact(
        lambda session: CatalogStore(session).prune_retired(now - kept)
    )
    if retired:
        logger.info("pruned %d retired assignments", retired)
    removed = await services.transact(
        lambda session: CatalogStore(session).prune_changes(now - CHANGES_KEPT)
    )
    if removed:
        logger.info("pruned %d catalogue changes older than an hour", removed)


async def _pruning(services: Services, interval: float) -> None:
    """Prune every ``PRUNE_EVERY_S``, retried at the follower's pace while the registry is down.
    A task of its own: a prune is a write, never given up (it may yet commit), and one waiting on
    a connection that never answers held the follow loop, and so every later change, with it."""
    while True:
        try:
            await _prune(services)
        except RegistryError:
            await anyio.sleep(interval)
            continue
        await anyio.sleep(PRUNE_EVERY_S)


async def _check_writes(services: Services) -> None:
    """Before a machine is announced not answering, and while the registry refuses this
    navigator's writes, ask it to take a write a heartbeat would make (``CatalogStore.
    check_writes``): a heartbeat recorded by another navigator, or one that no node sends this
    one any more, is judged by it (``navigator.catalog.registry_writes``). A failure is
    ``RegistryWrites``'."""
    writes = services.catalog.writes
    if writes.failing_since is None and not services.catalog.turning_silent():
        return
    with contextlib.suppress(RegistryError), writes.watch():
        await services.transact(lambda session: CatalogStore(session).check_writes())


async def follow_registry(services: Services) -> None:
    interval = max(0.2, min(1.0, services.settings.heartbeat_s / 5))
    woken = [anyio.Event()]
    async with anyio.create_task_group() as tasks:
        if services.registry.is_postgres:
            tasks.start_soon(_listen, _libpq_url(services.settings.database_url), woken)
        tasks.start_soon(_pruning, services, interval)
        was_down = False
        while True:
            with anyio.move_on_after(interval):
                await woken[0].wait()
            woken[0] = anyio.Event()
            try:
                await services.catalog.catch_up()
                await _check_writes(services)
                await services.catalog.refresh_heartbeats()
                if was_down:
                    logger.warning("registry reachable again")
                was_down = False
            except RegistryError:
                if not was_down:
                    logger.warning("registry unavailable while following it")
                was_down = True
