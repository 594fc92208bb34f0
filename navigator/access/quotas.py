"""Quotas (ADR 0041): what one principal may call, and what one node is sent at once.

A principal's quota is read with its token (``Caller.quota``): calls per minute, held exactly
over any 60 seconds (a log of the last minute's admission times, ADR 0048), and calls at once.
A node — a machine — is sent at most ``node_concurrency`` calls at once; a call beyond that
waits its turn while no more calls wait than are in flight, and never past its deadline.
Anything over is ``rate_limited`` with ``retryAfterS``, and is not sent.

Each navigator holds its own counts in memory: a call pays no registry write. Several navigators
on one registry each take their share (``navigators``): a limit of N is N / navigators each,
rounded up, so the whole holds within one call per navigator while load is spread evenly, and a
principal that reaches only one navigator gets its share there (ADR 0041).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from navigator.access.grants import Caller
from navigator.errors import RateLimited
from navigator.limits import NODE_CONCURRENCY

__all__ = ["NODE_CONCURRENCY", "Quotas"]

#: Principals whose counts are kept before the idle ones (no call in the last minute, nothing in
#: flight) are dropped: an idle principal's counts are what a fresh start gives it.
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


#: The window a rate is held over, seconds: the call past the rate in any 60 s is refused.
WINDOW_S = 60.0


@dataclass(slots=True)
class _Principal:
    """One principal's counts on this navigator: when each call of the last minute was admitted
    (oldest first; never more than the rate), and its calls in flight (ADR 0048)."""

    admitted: deque[float] = field(default_factory=deque)
    in_flight: int = 0

    def forget_before(self, now: float) -> None:
        """Forget the admissions that left the minute ending at ``now``: a call admitted at ``t``
        counts until ``t + 60`` and no longer."""
        admitted = self.admitted
        while admitted and admitted[0] <= now - WINDOW_S:
            admitted.popleft()

    def room_after(self, now: float, per_minute: int) -> int:
        """Whole seconds, at least 1, until fewer than ``per_minute`` admissions are in the minute:
        until the one ``per_minute`` back from the newest leaves it."""
        leaving = self.admitted[len(self.admitted) - per_minute]
        return max(1, math.ceil(leaving + WINDOW_S - now))


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
        counts, now = self._counts(caller.principal), self._clock()
        refused = self._refusal(caller, counts, now)
        if refused is not None:
            raise refused
        if quota.rate_per_minute is not None:
            counts.admitted.append(now)
        counts.in_flight += 1
        try:
            yield
        finally:
            counts.in_flight -= 1

    def refusal(self, caller: Caller) -> RateLimited | None:
        """What a call of ``caller`` would be answered now, counting nothing: its refusal, or
        ``None`` when it would be admitted. Cheap enough to ask of every request before anything
        else is done with it (ADR 0048): one lookup for a caller without a quota."""
        quota = caller.quota
        if quota.rate_per_minute is None and quota.concurrency is None:
            return None
        counts = self._principals.get(caller.principal)
        return None if counts is None else self._refusal(caller, counts, self._clock())

    def _refusal(self, caller: Caller, counts: _Principal, now: float) -> RateLimited | None:
        quota = caller.quota
        concurrency = quota.concurrency
        if concurrency is not None and counts.in_flight >= share(concurrency, self.navigators):
            return RateLimited(_PRINCIPAL_CONCURRENCY, retry_after_s=1)
        if quota.rate_per_minute is not None:
            # one call among the rate's share admitted in any 60 s, or when the oldest of them
            # that stands in the way leaves the minute
            per_minute = share(quota.rate_per_minute, self.navigators)
            counts.forget_before(now)
            if len(counts.admitted) >= per_minute:
                room_after = counts.room_after(now, per_minute)
                return RateLimited(_PRINCIPAL_RATE, retry_after_s=room_after)
        return None

    def _counts(self, principal: str) -> _Principal:
        counts = self._principals.get(principal)
        if counts is None:
            if len(self._principals) >= _KEPT:
                self._forget_idle()
            counts = self._principals[principal] = _Principal()
        return counts

    def _forget_idle(self) -> None:
        """Drop the counts of principals with nothing in flight and no call in the last minute:
        what a fresh start gives them, so the rate stays exact."""
        now = self._clock()
        for name, counts in list(self._principals.items()):
            counts.forget_before(now)
            if counts.in_flight == 0 and not counts.admitted:
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
