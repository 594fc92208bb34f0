"""What live views (the console's event stream) are told when the catalogue changes.

Each view subscribes a queue of its own; an event a full queue has no room for is dropped for it
alone, so that a view that stopped reading never holds up the catalogue, nor the other views.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

__all__ = ["CatalogEvent", "LiveViews"]

#: Events a live view may fall behind by before it misses some.
_QUEUED = 256


@dataclass(frozen=True, slots=True)
class CatalogEvent:
    """What changed, for live views: ``kind`` is machine or status; ``name`` the machine."""

    kind: str
    name: str


class LiveViews:
    """The queues of the live views subscribed to a catalogue."""

    __slots__ = ("_queues",)

    def __init__(self) -> None:
        self._queues: set[asyncio.Queue[CatalogEvent]] = set()

    def subscribe(self) -> asyncio.Queue[CatalogEvent]:
        queue: asyncio.Queue[CatalogEvent] = asyncio.Queue(maxsize=_QUEUED)
        self._queues.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[CatalogEvent]) -> None:
        self._queues.discard(queue)

    def emit(self, event: CatalogEvent) -> None:
        for queue in list(self._queues):
            if queue.full():
                continue
            queue.put_nowait(event)
