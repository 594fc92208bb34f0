"""The navigator's audit writer: events recorded off the call's path, batched into the registry.

``record`` only appends to a list in memory: a call never waits on the registry for its audit
event. ``run`` writes what was recorded every ``FLUSH_S`` in one transaction (chained onto this
navigator's instance, ``registry.audit``), copies this instance's new events — the changes its
API made, written in their own transactions, as well — to the JSON-lines export when one is
set, tells live views (the console's Activity page) that there is activity, and prunes events
past the retention now and then. ``close`` writes what is left: a navigator stopped cleanly
(SIGTERM, ADR 0026) loses none. A registry that cannot be written keeps the events in memory,
at most ``HELD_MAX`` (then the oldest go, counted), and tries again (ADR 0039).
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import anyio
import anyio.to_thread

from registry import RegistryError
from registry.audit import AuditEntry, AuditRecord, AuditStore
from registry.models import utcnow

if TYPE_CHECKING:
    from registry import Registry

__all__ = ["AuditLog", "open_export"]

T = TypeVar("T")

logger = logging.getLogger("meshnav.navigator.audit")

#: Between batch writes: an event reaches the registry (and the console) within about this long.
#: A batch costs ~0.4 ms of CPU whatever its size (``benchmarks/call_overhead.py``).
FLUSH_S = 1.0
#: Events held in memory while the registry cannot be written; past it the oldest are dropped.
HELD_MAX = 100_000
#: Between prunes of events past the retention.
PRUNE_EVERY_S = 600.0


def open_export(path: str | None) -> TextIO | None:
    """The JSON-lines export ``--audit-jsonl`` names: ``-`` for standard output, else a file
    appended to (made readable by its owner alone)."""
    if path is None:
        return None
    if path == "-":
        return sys.stdout
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8")


class AuditLog:
    def __init__(
        self,
        registry: Registry,
        instance: str,
        *,
        retention_days: float,
        export: TextIO | None = None,
        flush_s: float = FLUSH_S,
    ) -> None:
        self.registry = registry
        self.instance = instance
        self.retention = timedelta(days=retention_days)
        self.export = export
        self.flush_s = flush_s
        self._pending: list[AuditEntry] = []
        self._lock = anyio.Lock()
        #: Called with each batch once it is written (the console's live views).
        self.listeners: list[Callable[[list[AuditRecord]], None]] = []
        self.dropped = 0
        #: The last of this instance's events the export holds; None until first read.
        self._exported_seq: int | None = None

    def record(self, entry: AuditEntry) -> None:
        """Keep ``entry`` for the next batch; never waits, never fails."""
        pending = self._pending
        if len(pending) >= HELD_MAX:
            del pending[0]
            self.dropped += 1
        pending.append(entry)

    def event(self, principal: str, action: str, target: str, outcome: str, **fields: Any) -> None:
        self.record(AuditEntry(utcnow(), principal, action, target[:256], outcome, **fields))

    async def run(self) -> None:
        """Write batches until cancelled; prune past the retention now and then."""
        pruned_at = 0.0
        await self.begin()
        while True:
            await anyio.sleep(self.flush_s)
            await self.flush()
            await self._export()
            if time.monotonic() - pruned_at >= PRUNE_EVERY_S:
                pruned_at = time.monotonic()
                await self._prune()

    async def begin(self) -> None:
        """Start the export after the events this instance's chain already holds."""
        if self.export is not None and self._exported_seq is None:
            self._exported_seq = await self._in_registry(
                lambda store: store.head_seq(self.instance)
            )

    async def flush(self) -> None:
        """Write every event recorded so far; on a registry failure keep them for the next."""
        async with self._lock:
            batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                written = await anyio.to_thread.run_sync(self._write, batch)
            except RegistryError:
                logger.warning("audit events could not be written; %d held", len(batch))
                self._pending[:0] = batch[-HELD_MAX:]
                return
        for listener in list(self.listeners):
            listener(written)

    async def close(self) -> None:
        """The last write, at a clean stop: shielded from the cancellation that stops us."""
        with anyio.CancelScope(shield=True):
            await self.flush()
            await self._export()
            if self.export is not None and self.export is not sys.stdout:
                self.export.close()

    def _write(self, batch: list[AuditEntry]) -> list[AuditRecord]:
        with self.registry.write_connection() as connection:
            return AuditStore(connection).append(self.instance, batch)

    async def _in_registry(self, work: Callable[[AuditStore], T]) -> T:
        def read() -> T:
            with self.registry.read_transaction() as session:
                return work(AuditStore(session))

        return await anyio.to_thread.run_sync(read)

    async def _export(self) -> None:
        """This instance's events since the last exported, as JSON lines."""
        if self.export is None or self._exported_seq is None:
            return
        try:
            while True:
                found = await self._in_registry(
                    functools.partial(_after, self.instance, self._exported_seq)
                )
                if not found:
                    return
                lines = "".join(
                    json.dumps(r.as_json(), separators=(",", ":")) + "\n" for r in found
                )
                self.export.write(lines)
                self.export.flush()
                self._exported_seq = found[-1].seq
        except RegistryError:
            return  # the next tick tries again from where the export stands
        except OSError:
            logger.warning("the audit export could not be written")

    async def _prune(self) -> None:
        def prune() -> int:
            with self.registry.transaction() as session:
                return AuditStore(session).prune(utcnow() - self.retention)

        try:
            gone = await anyio.to_thread.run_sync(prune)
        except RegistryError:
            return
        if gone:
            logger.info("pruned %d audit events past the retention", gone)


def _after(instance: str, seq: int, store: AuditStore) -> list[AuditRecord]:
    return store.after(instance, seq)
