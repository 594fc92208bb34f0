"""Short registry reads from the event loop: inline where the registry answers from a local file
in microseconds, on a worker thread where it is across a network (``Registry.reads_inline``).

A read across the network is given up after ``STATEMENT_TIMEOUT_S``: a registry that keeps its
connections open and never answers (a frozen or partitioned server, which TCP alone does not
notice) is ``registry_unavailable`` in seconds, not when it wakes. The worker thread is left to
finish on its own; a read changes nothing, so abandoning it loses nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple

import anyio.to_thread

from registry import RegistryUnavailable
from registry.database import STATEMENT_TIMEOUT_S

if TYPE_CHECKING:
    from registry import Registry

__all__ = ["off_loop_read", "short_read"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def short_read(registry: Registry, read: Callable[[*Ts], T], *args: *Ts) -> T:
    """``read(*args)``, without blocking the loop on a networked registry, nor waiting on it past
    ``STATEMENT_TIMEOUT_S`` (then ``RegistryUnavailable``)."""
    if registry.reads_inline:
        return read(*args)
    return await _given_up(read, *args)


async def off_loop_read(registry: Registry, read: Callable[[*Ts], T], *args: *Ts) -> T:
    """``short_read`` for a read too long for the loop even from a local file (a machine's
    every row): on a worker thread whatever the registry, given up the same way on a networked
    one — a connection that never answered held a catalogue catch-up, and every later change."""
    if registry.reads_inline:
        return await anyio.to_thread.run_sync(read, *args)
    return await _given_up(read, *args)


async def _given_up(read: Callable[[*Ts], T], *args: *Ts) -> T:
    with anyio.move_on_after(STATEMENT_TIMEOUT_S):
        return await anyio.to_thread.run_sync(read, *args, abandon_on_cancel=True)
    raise RegistryUnavailable()
