"""Turns: how many calls of the node's database modules run at once, in all and per caller.

Each call of the ``sqlite`` and ``postgres`` modules holds something of the node while it runs
(a worker process, a connection and a row), so the process runs at most ``total`` of them at once;
and one caller's calls take at most ``per_caller`` of those, so that a principal sending slow
queries as fast as it can leaves turns to every other (a review: eight ``printf`` queries held all
eight of a node's reads, and another principal's ``SELECT 1`` was refused for 40 s).

The caller is the principal the navigator signed the call token for (``mesh.calltokens.caller``);
a call that reached the module without one (a test's in-memory client) is one anonymous caller.
Counts are the process's, not an event loop's: a thread-safe count, looked at every 50 ms while a
caller waits.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastmcp.exceptions import ToolError

from mesh.calltokens import caller

__all__ = ["MAX_AT_ONCE", "MAX_PER_CALLER", "Turns"]

MAX_AT_ONCE = 8  # database calls running at once on this node, every module together
MAX_PER_CALLER = 4  # of those, one principal's
_POLL_S = 0.05


class Turns:
    """At most ``total`` turns at once, at most ``per_caller`` of them one caller's."""

    def __init__(self, total: int = MAX_AT_ONCE, per_caller: int = MAX_PER_CALLER) -> None:
        self.total = total
        self.per_caller = min(per_caller, total)
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()

    def held(self, principal: str) -> int:
        with self._lock:
            return self._held[principal]

    def try_take(self, principal: str) -> bool:
        with self._lock:
            if self._held.total() >= self.total or self._held[principal] >= self.per_caller:
                return False
            self._held[principal] += 1
            return True

    def give_back(self, principal: str) -> None:
        with self._lock:
            self._held[principal] -= 1
            if self._held[principal] <= 0:
                del self._held[principal]

    @asynccontextmanager
    async def turn(self, wait_s: float, busy: str) -> AsyncIterator[None]:
        """Hold one of the calling principal's turns, waited for up to ``wait_s``; past that a
        ``ToolError`` saying ``busy``."""
        principal = caller.get() or ""
        deadline = anyio.current_time() + wait_s
        while not self.try_take(principal):
            if anyio.current_time() >= deadline:
                raise ToolError(busy)
            await anyio.sleep(_POLL_S)
        try:
            yield
        finally:
            self.give_back(principal)


#: The node's turns, shared by every database assignment and seat it serves.
NODE_TURNS = Turns()
