"""Short registry reads from the event loop: inline where the registry answers from a local file
in microseconds, on a worker thread where it is across a network (``Registry.reads_inline``).

A read across the network is given up after ``STATEMENT_TIMEOUT_S``: a registry that keeps its
connections open and never answers (a frozen or partitioned server, which TCP alone does not
notice) is ``registry_unavailable`` in seconds, not when it wakes. The worker thread is left to
finish on its own; a read changes nothing, so abandoning it loses nothing. A read too long for
any one deadline (the whole catalogue) is given up instead once it has read nothing for as long.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple

import anyio.to_thread

from registry import RegistryUnavailable
from registry.database import STATEMENT_TIMEOUT_S

if TYPE_CHECKING:
    from registry import Registry

__all__ = ["Progress", "long_read", "off_loop_read", "short_read"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def short_read(
    registry: Registry,
    read: Callable[[*Ts], T],
    *args: *Ts,
    timeout_s: float = STATEMENT_TIMEOUT_S,
) -> T:
    """``read(*args)``, without blocking the loop on a networked registry, nor waiting on it past
    ``timeout_s`` (then ``RegistryUnavailable``)."""
    if registry.reads_inline:
        return read(*args)
    return await _given_up(timeout_s, read, *args)


async def off_loop_read(registry: Registry, read: Callable[[*Ts], T], *args: *Ts) -> T:
    """``short_read`` for a read too long for the loop even from a local file (a machine's
    every row): on a worker thread whatever the registry, given up the same way on a networked
    one — a connection that never answered held a catalogue catch-up, and every later change."""
    if registry.reads_inline:
        return await anyio.to_thread.run_sync(read, *args)
    return await _given_up(STATEMENT_TIMEOUT_S, read, *args)


async def _given_up(timeout_s: float, read: Callable[[*Ts], T], *args: *Ts) -> T:
    with anyio.move_on_after(timeout_s):
        return await anyio.to_thread.run_sync(read, *args, abandon_on_cancel=True)
    raise RegistryUnavailable()


class Progress:
    """When a long read last read something: it calls ``tick`` as its rows come, and ``done``
    when the rest of its work reads nothing (building what it read may take longer)."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at = time.monotonic()

    def tick(self) -> None:
        self.at = time.monotonic()

    def done(self) -> None:
        self.at = math.inf


async def long_read(
    registry: Registry,
    read: Callable[[Progress, *Ts], T],
    *args: *Ts,
    timeout_s: float = STATEMENT_TIMEOUT_S,
) -> T:
    """``read(progress, *args)`` on a worker thread, for as long as it takes while rows come; on
    a networked registry given up (``RegistryUnavailable``) once it has read nothing for
    ``timeout_s``. A whole catalogue's load on a connection that never answered held
    the follow loop for good, and every later change with it."""
    progress = Progress()
    if registry.reads_inline:
        return await anyio.to_thread.run_sync(read, progress, *args)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as watch:

            async def watching() -> None:  # the deadline moves with the read's progress
                while progress.at < math.inf:
                    waited = time.monotonic() - progress.at
                    scope.deadline = anyio.current_time() + timeout_s - waited
                    await anyio.sleep(timeout_s / 10)
                scope.deadline = math.inf

            watch.start_soon(watching)
            failure: Exception | None = None
            try:  # its error leaves the task group as itself, not in an exception group
                result = await anyio.to_thread.run_sync(
                    read, progress, *args, abandon_on_cancel=True
                )
            except Exception as error:
                failure = error
            finally:
                watch.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return result
    raise RegistryUnavailable()
