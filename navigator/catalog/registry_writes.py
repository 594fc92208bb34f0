"""Whether the registry takes this navigator's writes: what tells "no heartbeat came" from "the
registry could not record the heartbeat that came" (ADR 0031).

A machine is ``not answering`` when no heartbeat was recorded for three intervals (SPEC §6). A
heartbeat the registry could not record — its write lock held by another process, a database that
refuses writes — leaves the machine's last recorded heartbeat as old as a silent machine's. So the
navigator judges silence only over the time the registry took its writes: from the start of the
oldest write still unrecorded (pending, or failed since the last that succeeded), a machine's
status is the one it had then, and its view says its heartbeats are ``unrecorded``.

Once writes land again, each machine is judged from its own first heartbeat after: until it is
recorded, the time the registry refused writes, and one heartbeat interval after they resumed
(the node's next heartbeat may be due that much later), is not counted as its silence (ADR 0052).
The first write that landed does not make every other machine, whose heartbeat has not come
round yet, ``not answering``.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from registry import RegistryUnavailable

__all__ = ["RegistryWrites", "registry_writes"]


class RegistryWrites:
    """This navigator's writes to the registry that say whether it can be written: heartbeats
    first (every node's, every interval), its own catalogue changes, and a check of its own while
    they fail (``navigator.catalog.following``)."""

    __slots__ = ("_clock", "_failing_since", "_ids", "_outages", "_pending")

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self._pending: dict[int, datetime] = {}
        self._failing_since: datetime | None = None
        #: The last times writes failed: (the first failed write's start, the next commit).
        self._outages: deque[tuple[datetime, datetime]] = deque(maxlen=OUTAGES_KEPT)
        self._ids = itertools.count()
        self._clock = clock or _now

    @contextmanager
    def watch(self) -> Iterator[None]:
        """Around one write: pending while it runs, failing from its start if the registry could
        not take it (``RegistryUnavailable``), writable again once one commits. A write refused for
        what it says (a conflict, a principal bound to another machine) says nothing of either."""
        started = self._clock()
        key = next(self._ids)
        self._pending[key] = started
        try:
            yield
        except RegistryUnavailable:
            if self._failing_since is None:
                self._failing_since = started
            raise
        else:
            if self._failing_since is not None:
                self._outages.append((self._failing_since, self._clock()))
            self._failing_since = None
        finally:
            del self._pending[key]

    @property
    def failing_since(self) -> datetime | None:
        """When the first write that failed since the last one that committed began."""
        return self._failing_since

    @property
    def unrecorded_since(self) -> datetime | None:
        """When the oldest write not (yet) recorded began: a failed one, or one still waiting."""
        times = [*self._pending.values()]
        if self._failing_since is not None:
            times.append(self._failing_since)
        return min(times) if times else None

    def judged_at(
        self, now: datetime, heartbeat_at: datetime | None = None, interval_s: float = 0.0
    ) -> datetime:
        """The moment whose heartbeats the registry could have recorded: ``now``, or the start
        of the oldest unrecorded write when that is earlier. For a machine whose last recorded
        heartbeat is ``heartbeat_at`` (every ``interval_s``), that moment less the time since it
        in which the registry refused writes, or had only just taken them again (within one
        interval of a write landing after failures): silence is counted only outside them."""
        since = self.unrecorded_since
        judged = now if since is None or since > now else since
        if heartbeat_at is None:
            return judged
        grace = timedelta(seconds=interval_s)
        edge, unrecorded = heartbeat_at, timedelta(0)
        for began, resumed in self._outages:  # oldest first
            if resumed <= heartbeat_at:
                continue  # its own heartbeat was recorded after this one
            start, end = max(began, edge), min(resumed + grace, judged)
            if end > start:
                unrecorded += end - start
                edge = end
        return judged - unrecorded


#: How many past outages are remembered: one forgotten counts as silence for a machine whose last
#: heartbeat came before it (and before the 16 since).
OUTAGES_KEPT = 16


def _now() -> datetime:
    return datetime.now(UTC)


def registry_writes(writes: RegistryWrites) -> dict[str, str]:
    """What ``/readyz`` says of the registry's writes: ``writable``, or ``not writable`` since
    the first write that failed. A navigator that reads the registry serves calls either way."""
    since = writes.failing_since
    if since is None:
        return {"registry": "writable"}
    return {"registry": "not writable", "since": since.isoformat(timespec="seconds")}
