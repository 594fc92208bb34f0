"""The navigator's audit writer: events recorded off the call's path, batched into the registry.

``record`` only appends to a queue in memory: a call never waits on the registry for its audit
event. ``run`` writes what was recorded every ``MESHNAV_AUDIT_FLUSH_S`` in one transaction
(chained onto this navigator's instance, ``registry.audit``), copies this instance's new events —
the changes its API made, written in their own transactions, as well — to the JSON-lines export
when one is set, tells live views (the console's Activity page) that there is activity, and
prunes events past the retention now and then. ``close`` writes what is left: a navigator stopped
cleanly (SIGTERM, ADR 0026) loses none; a killed one, at most the last interval's.

Its bounds (ADR 0045): every text is stored bounded (``registry.audit_bounds``); a batch the
registry refuses is written again event by event, and an event the registry refuses alone is
dropped, counted (``meshnav_audit_events_dropped_total{reason="rejected"}``) and logged by its
action and error class alone; while the registry cannot be written, events wait in a queue of
at most ``MESHNAV_AUDIT_QUEUE_MAX``, past which they are counted as dropped (``queue_full``).
Refused requests are aggregated (``navigator.access.refusals``). The arguments' digest is keyed
with the registry's audit key before it is stored (``registry.audit.keyed_digest``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import anyio
import anyio.to_thread

from navigator.access.refusals import Refusals
from navigator.metrics import METRICS, Metrics
from registry import RegistryError
from registry.audit import AuditEntry, AuditRecord, AuditStore, keyed_digest
from registry.audit_bounds import INSTANCE_CHARS, rejected, storable
from registry.models import utcnow

if TYPE_CHECKING:
    from registry import Registry

__all__ = ["AuditLog", "open_export"]

T = TypeVar("T")

logger = logging.getLogger("meshnav.navigator.audit")

#: Between batch writes: an event reaches the registry (and the console) within about this long,
#: and a navigator killed outright loses at most this long's events. A batch costs ~0.4 ms of
#: CPU whatever its size (``benchmarks/call_overhead.py``).
FLUSH_S = 1.0
#: Events waiting in memory at most (while the registry cannot be written); past it, counted.
QUEUE_MAX = 100_000
#: Refusal events a minute at most, and the window refusals are counted over (ADR 0045).
REFUSALS_PER_MINUTE = 120
REFUSAL_WINDOW_S = 60.0
#: Between prunes of events past the retention.
PRUNE_EVERY_S = 600.0
#: The outcome of a call whose answer reached no client: it ended after the drain's grace.
CUT = "cancelled"
#: The ``/metrics`` counter of events dropped, by reason.
DROPPED_METRIC = "meshnav_audit_events_dropped_total"


def open_export(path: str | None) -> TextIO | None:
    """The JSON-lines export ``--audit-jsonl`` names: ``-`` for standard output, else a file
    appended to, readable by its owner alone: one found readable by others is made so (0600),
    and refused when it cannot be (``PermissionError`` naming the ``chmod`` to run)."""
    if path is None:
        return None
    if path == "-":
        return sys.stdout
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        if os.fstat(fd).st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise PermissionError(
            f"the audit export {path} may be read by other users and cannot be made readable "
            f"by its owner alone; run chmod 600 {path} as its owner"
        ) from None
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
        queue_max: int = QUEUE_MAX,
        refusals: Refusals | None = None,
        metrics: Metrics = METRICS,
    ) -> None:
        self.registry = registry
        self.instance = storable(instance, INSTANCE_CHARS)  # as its chain is named
        self.retention = timedelta(days=retention_days)
        self.export = export
        self.flush_s = flush_s
        self.queue_max = queue_max
        self.refusals = refusals or Refusals(REFUSALS_PER_MINUTE, REFUSAL_WINDOW_S)
        self._pending: list[AuditEntry] = []
        self._lock = anyio.Lock()
        #: Called with each batch once it is written (the console's live views).
        self.listeners: list[Callable[[list[AuditRecord]], None]] = []
        #: Events dropped: ``queue_full`` (past the queue's bound), ``rejected`` (refused by the
        #: registry alone).
        self.dropped_by = {"queue_full": 0, "rejected": 0}
        metrics.counters[DROPPED_METRIC] = lambda: dict(self.dropped_by)
        #: The registry's key of the arguments' digest, once read in a committed transaction.
        self._key: bytes | None = None
        #: The last of this instance's events the export holds; None until first read.
        self._exported_seq: int | None = None
        #: Set when the drain's grace ended: a call ending later reached no client (ADR 0056).
        self.answers_cut = False

    @property
    def dropped(self) -> int:
        return sum(self.dropped_by.values())

    def record(self, entry: AuditEntry) -> None:
        """Keep ``entry`` for the next batch; never waits, never fails."""
        if len(self._pending) >= self.queue_max:
            self.dropped_by["queue_full"] += 1
            return
        if self.answers_cut and entry.action == "call":  # its answer was not sent
            entry = replace(entry, outcome=CUT)
        self._pending.append(entry)

    def cut(self) -> None:
        """The drain's grace ended: calls that end from now on are recorded ``cancelled``, what
        their clients received being no answer (``navigator.mcp.stopping``)."""
        self.answers_cut = True

    def event(self, principal: str, action: str, target: str, outcome: str, **fields: Any) -> None:
        self.record(AuditEntry(utcnow(), principal, action, target, outcome, **fields))

    def refused(
        self,
        route: str,
        source: str,
        token_shown: str | None,
        outcome: str = "unauthenticated",
        *,
        principal: str = "",
        reason: str | None = None,
    ) -> None:
        """A request refused before the audited path (``unauthenticated``, or another SPEC §9
        code), counted on its route's aggregated event (``navigator.access.refusals``), with
        what is known of its caller."""
        self.refusals.refuse(
            route, source, token_shown, outcome, principal=principal, reason=reason
        )

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

    async def flush(self, *, refusals: bool = False) -> None:
        """Write every event recorded so far, with the refusals whose window ended (all of them
        with ``refusals``); on a registry failure keep them for the next."""
        for entry in self.refusals.due(everything=refusals):
            self.record(entry)
        async with self._lock:
            batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                written = await anyio.to_thread.run_sync(self._write, batch)
            except Exception:
                written, held = await anyio.to_thread.run_sync(self._write_each, batch)
                if held:
                    logger.warning("audit events could not be written; %d held", len(held))
                    self._hold(held)
        if written:
            for listener in list(self.listeners):
                listener(written)

    def _hold(self, held: list[AuditEntry]) -> None:
        """``held`` back in front of what came since, the queue's bound kept."""
        queue = held + self._pending
        self.dropped_by["queue_full"] += max(0, len(queue) - self.queue_max)
        self._pending = queue[: self.queue_max]

    async def close(self) -> None:
        """The last write, at a clean stop: shielded from the cancellation that stops us."""
        with anyio.CancelScope(shield=True):
            await self.flush(refusals=True)
            await self._export()
            if self.export is not None and self.export is not sys.stdout:
                self.export.close()

    def _write(self, batch: list[AuditEntry]) -> list[AuditRecord]:
        key = self._key
        with self.registry.write_connection() as connection:
            store = AuditStore(connection)
            key = key or store.arguments_key()
            keyed = [
                e
                if e.args_digest is None
                else replace(e, args_digest=keyed_digest(key, e.args_digest))
                for e in batch
            ]
            written = store.append(self.instance, keyed)
        self._key = key  # committed: the key every navigator on this registry uses
        return written

    def _write_each(self, batch: list[AuditEntry]) -> tuple[list[AuditRecord], list[AuditEntry]]:
        """A refused batch, one event a transaction: an event the registry refuses alone is
        dropped and counted; at the first failure that is not about the event, the rest are
        returned to be held."""
        written: list[AuditRecord] = []
        for index, entry in enumerate(batch):
            try:
                written += self._write([entry])
            except Exception as error:
                if not rejected(error):
                    return written, batch[index:]
                self.dropped_by["rejected"] += 1
                logger.warning(
                    "an audit event (%s) was refused by the registry and dropped: %s",
                    storable(entry.action, 32),
                    _root(error).__class__.__name__,
                )
        return written, []

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


def _root(error: BaseException) -> BaseException:
    """The exception ``error`` was raised from first (the driver's), for its class name."""
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def _after(instance: str, seq: int, store: AuditStore) -> list[AuditRecord]:
    return store.after(instance, seq)
