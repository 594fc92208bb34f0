"""Whether the registry takes this navigator's writes: what tells "no heartbeat came" from "the
registry could not record the heartbeat that came" (ADR 0031).

A machine is ``not answering`` when no heartbeat was recorded for three intervals (SPEC §6). A
heartbeat the registry could not record — its write lock held by another process, a database that
refuses writes — leaves the machine's last recorded heartbeat as old as a silent machine's. So the
navigator judges silence only over the time the registry took its writes: from the start of the
oldest write still unrecorded (pending, or failed since the last that succeeded), a machine's
status is the one it had then, and its view says its heartbeats are ``unrecorded``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from registry import RegistryUnavailable

__all__ = ["RegistryWrites", "registry_writes"]


class RegistryWrites:
    """This navigator's writes to the registry that say whether it can be written: heartbeats
    first (every node's, every interval), its own catalogue changes, and a check of its own while
    they fail (``navigator.catalog.following``)."""

    __slots__ = ("_failing_since", "_ids", "_pending")

    def __init__(self) -> None:
        self._pending: dict[int, datetime] = {}
        self._failing_since: datetime | None = None
        self._ids = itertools.count()

    @contextmanager
    def watch(self) -> Iterator[None]:
        """Around one write: pending while it runs, failing from its start if the registry could
        not take it (``RegistryUnavailable``), writable again once one commits. A write refused for
        what it says (a conflict, a principal bound to another machine) says nothing of either."""
        started = datetime.now(UTC)
        key = next(self._ids)
        self._pending[key] = started
        try:
            yield
        except RegistryUnavailable:
            if self._failing_since is None:
                self._failing_since = started
            raise
        else:
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

    def judged_at(self, now: datetime) -> datetime:
        """The moment whose heartbeats the registry could have recorded: ``now``, or the start
        of the oldest unrecorded write when that is earlier."""
        since = self.unrecorded_since
        return now if since is None or since > now else since


def registry_writes(writes: RegistryWrites) -> dict[str, str]:
    """What ``/readyz`` says of the registry's writes: ``writable``, or ``not writable`` since
    the first write that failed. A navigator that reads the registry serves calls either way."""
    since = writes.failing_since
    if since is None:
        return {"registry": "writable"}
    return {"registry": "not writable", "since": since.isoformat(timespec="seconds")}
