"""Quotas (ADR 0041): what one principal may call, and what one node is sent at once.

A principal's quota is read with its token (``Caller.quota``): calls per minute, held over any
60 seconds to the second (a ring of one-second counts), and calls at once. A node — a machine —
is sent at most ``node_concurrency`` calls at once; a call beyond that waits its turn while no
more calls wait than are in flight, and never past its deadline. Anything over is
``rate_limited`` with ``retryAfterS``, and is not sent.

Each navigator holds its own counts in memory: a call pays no registry write. Several navigators
on one registry each take their share (``navigators``): a limit of N is N / navigators each,
rounded up, so the whole holds within one call per navigator while load is spread evenly, and a
principal that reaches only one navigator gets its share there (ADR 0041).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from navigator.access.grants import Caller
from navigator.errors import RateLimited
from navigator.limits import NODE_CONCURRENCY

__all__ = ["NODE_CONCURRENCY", "Quotas"]

#: Principals whose counts are kept before the idle ones (a full bucket, nothing in flight) are
#: dropped: an idle principal's counts are what a fresh start gives it.
_KEPT = 4096
#: How much a call's time counts in a node's typical duration (an exponential moving average).
_WEIGHT = 0.2

_PRINCIPAL_RATE = "Too many calls for this principal's quota: call again after retryAfterS seconds."
_PRINCIPAL_CONCURRENCY = (
    "Too many calls at once for this principal's quota: call again when one has answered."
)
_NODE_BUSY = (
    "The node is answering as many calls as it is sent at once: call again after retryAfterS "
    "seconds."
)


#: A minute in one-second slots: a rate is held over any 60 s, to the second.
_SLOTS = 60


@dataclass(slots=True)
class _Principal:
    """One principal's counts on this navigator: the calls admitted in each second of the last
    minute (a ring), their sum, and the calls in flight."""

    second: int
    slots: list[int] = field(default_factory=lambda: [0] * _SLOTS)
    admitted: int = 0
    in_flight: int = 0

    def advance(self, second: int) -> None:
        """Forget the seconds that left the minute before ``second``."""
        if second - self.second >= _SLOTS:
            self.slots[:] = [0] * _SLOTS
            self.admitted = 0
        else:
            for gone in range(self.second + 1, second + 1):
                self.admitted -= self.slots[gone % _SLOTS]
                self.slots[gone % _SLOTS] = 0
        self.second = max(self.second, second)

    def room_after(self, per_minute: int) -> int:
        """Seconds until a call fits: until enough of the oldest seconds leave the minute."""
        over = self.admitted - per_minute + 1
        for age in range(_SLOTS - 1, -1, -1):  # the oldest second first
            over -= self.slots[(self.second - age) % _SLOTS]
            if over <= 0:
                return _SLOTS - age
        return _SLOTS


@dataclass(slots=True)
class _Node:
    slots: anyio.Semaphore
    waiting: int = 0
    #: A call's typical duration at this node, seconds.
    typical_s: float = 1.0


def share(limit: int, navigators: int) -> int:
    """This navigator's part of a limit several navigators hold together, never below one."""
    return max(1, math.ceil(limit / navigators))


class Quotas:
    def __init__(
        self,
        *,
        node_concurrency: int = NODE_CONCURRENCY,
        navigators: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.navigators = navigators
        self.node_concurrency = share(node_concurrency, navigators)
        self._clock = clock
        self._principals: dict[str, _Principal] = {}
        self._nodes: dict[str, _Node] = {}

    # --- principals --------------------------------------------------------------------------

    @asynccontextmanager
    async def principal(self, caller: Caller) -> AsyncIterator[None]:
        """Admit one call of ``caller`` under its quota, and count it in flight until it ends."""
        quota = caller.quota
        if quota.rate_per_minute is None and quota.concurrency is None:
            yield
            return
        counts = self._counts(caller.principal)
        concurrency = quota.concurrency
        if concurrency is not None and counts.in_flight >= share(concurrency, self.navigators):
            raise RateLimited(_PRINCIPAL_CONCURRENCY, retry_after_s=1)
        if quota.rate_per_minute is not None:
            self._take(counts, share(quota.rate_per_minute, self.navigators))
        counts.in_flight += 1
        try:
            yield
        finally:
            counts.in_flight -= 1

    def _counts(self, principal: str) -> _Principal:
        counts = self._principals.get(principal)
        if counts is None:
            if len(self._principals) >= _KEPT:
                self._forget_idle()
            counts = self._principals[principal] = _Principal(int(self._clock()))
        return counts

    def _take(self, counts: _Principal, per_minute: int) -> None:
        """One call among the ``per_minute`` admitted in any minute, or ``rate_limited`` saying
        when the oldest of them leave it."""
        second = int(self._clock())
        counts.advance(second)
        if counts.admitted >= per_minute:
            raise RateLimited(_PRINCIPAL_RATE, retry_after_s=counts.room_after(per_minute))
        counts.slots[second % _SLOTS] += 1
        counts.admitted += 1

    def _forget_idle(self) -> None:
        """Drop the counts of principals with nothing in flight: at most a minute's calls more
        for one that comes back at once, as a navigator's restart gives it."""
        for name in [n for n, c in self._principals.items() if c.in_flight == 0]:
            del self._principals[name]

    # --- nodes -------------------------------------------------------------------------------

    @asynccontextmanager
    async def node(self, machine: str, deadline_s: float) -> AsyncIterator[float]:
        """A slot among the calls sent to ``machine`` at once, waited for in turn while fewer
        calls wait than the limit, and at most ``deadline_s``; yields the seconds waited."""
        node = self._nodes.get(machine)
        if node is None:
            node = self._nodes[machine] = _Node(anyio.Semaphore(self.node_concurrency))
        started = self._clock()
        if node.slots.value == 0:
            if node.waiting >= self.node_concurrency:
                raise self._busy(node)
            node.waiting += 1
            turn = False
            try:
                with anyio.move_on_after(deadline_s):
                    await node.slots.acquire()
                    turn = True
            finally:
                node.waiting -= 1
            if not turn:  # no slot within the deadline: not sent
                raise self._busy(node)
        else:
            node.slots.acquire_nowait()
        waited = self._clock() - started
        try:
            yield waited
        finally:
            node.slots.release()
            took = self._clock() - started - waited
            node.typical_s += _WEIGHT * (took - node.typical_s)

    def _busy(self, node: _Node) -> RateLimited:
        return RateLimited(_NODE_BUSY, retry_after_s=max(1, math.ceil(node.typical_s)))
