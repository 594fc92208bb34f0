"""A cache bounded by the weight of what it holds, not by a count of entries.

Compiled schemas (``navigator.validation``) and callers' parts of the search index
(``navigator.search``) differ in size by orders of magnitude from one entry to the next, so a
count would either waste memory or drop entries that still fit: each value is weighed once, as it
is put, and the least recently used go first once the weights together pass the bound. The newest
entry is always kept, whatever it weighs.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["WeightedCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class WeightedCache(Generic[K, V]):
    """Values by key, weighed by ``weight``; the least recently used dropped first once the
    weights together pass ``max_weight``."""

    def __init__(self, max_weight: int, weight: Callable[[V], int]) -> None:
        self._max_weight = max_weight
        self._weigh = weight
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.weight = 0  # the sum of the held values' weights

    def __len__(self) -> int:
        return len(self._entries)

    def values(self) -> list[V]:
        return list(self._entries.values())

    def lookup(self, key: K, default: D) -> V | D:
        """The value held under ``key`` (now the most recently used), or ``default``. Takes no
        lock: a read and a move of one key are each atomic, and a key dropped in between is
        simply not moved."""
        value = self._entries.get(key, default)
        if value is not default:
            with contextlib.suppress(KeyError):
                self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        """Hold ``value`` under ``key`` unless a value is held there already; then drop the least
        recently used until the weights fit."""
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = value
            self.weight += self._weigh(value)
            while self.weight > self._max_weight and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self.weight -= self._weigh(dropped)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.weight = 0
