"""Short registry reads from the event loop: inline where the registry answers from a local file
in microseconds, on a worker thread where it is across a network (``Registry.reads_inline``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, TypeVarTuple

import anyio.to_thread

if TYPE_CHECKING:
    from registry import Registry

__all__ = ["short_read"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


async def short_read(registry: Registry, read: Callable[[*Ts], T], *args: *Ts) -> T:
    """``read(*args)``, without blocking the loop on a networked registry."""
    if registry.reads_inline:
        return read(*args)
    return await anyio.to_thread.run_sync(read, *args)
