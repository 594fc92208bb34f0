"""Signed, opaque, short-lived cursors (SPEC §3 Cursors).

A cursor carries a page offset, the time its listing started, and a digest of everything the
listing depends on — principal and scopes, the request's own arguments, the catalogue revision, the
grant revision and the grant rows observed. It is signed (``mesh.signing``: HMAC-SHA256) under a
key made at start and held only in memory, so a restart invalidates every cursor. Opening a cursor
recomputes the binding from the present state: any difference, any tampering, or an age past the
lifetime (counted from the first page; later pages do not renew it) is ``invalid_cursor``.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mesh import signing
from mesh.digests import digest
from navigator.errors import InvalidCursor

__all__ = ["CursorPosition", "CursorSigner", "Listings"]

MAX_CURSOR_CHARS = 512
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class CursorPosition:
    offset: int
    started: float


class CursorSigner:
    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self._key = secrets.token_bytes(32)
        self.ttl_s = ttl_s
        self._clock = clock

    def issue(self, binding: dict[str, Any], position: CursorPosition) -> str:
        payload = {"b": digest(binding), "o": position.offset, "t": position.started}
        return signing.sign(self._key, payload)

    def open(self, cursor: object, binding: dict[str, Any]) -> CursorPosition:
        payload = signing.verify(self._key, cursor, max_chars=MAX_CURSOR_CHARS)
        if payload is None:
            raise InvalidCursor()
        try:
            offset, started, bound = int(payload["o"]), float(payload["t"]), str(payload["b"])
        except (ValueError, KeyError, TypeError):
            raise InvalidCursor() from None
        if offset < 0 or not hmac.compare_digest(bound, digest(binding)):
            raise InvalidCursor()
        if not signing.unexpired(started + self.ttl_s, self._clock(), self.ttl_s):
            raise InvalidCursor()
        return CursorPosition(offset=offset, started=started)

    def start(self) -> CursorPosition:
        return CursorPosition(offset=0, started=self._clock())


class Listings(Generic[V]):
    """Listings being paged, kept from their first page so that a later one is a slice of the
    same listing, not the same listing computed again (the top of ``seats`` walks every
    machine: tens of milliseconds at 100,000 tools, on the event loop, for each page). Found by
    the listing's binding and start, which only a valid cursor for it carries; at most
    ``size`` are kept, each no longer than a cursor lives. A listing is one snapshot: its later
    pages show the statuses its first page read."""

    def __init__(
        self, ttl_s: float, size: int = 16, clock: Callable[[], float] = time.time
    ) -> None:
        self.ttl_s = ttl_s
        self.size = size
        self._clock = clock
        self._kept: OrderedDict[tuple[str, float], V] = OrderedDict()

    def get(self, binding: dict[str, Any], position: CursorPosition) -> V | None:
        self._expire()
        return self._kept.get((digest(binding), position.started))

    def keep(self, binding: dict[str, Any], position: CursorPosition, listing: V) -> None:
        self._expire()
        key = (digest(binding), position.started)
        self._kept[key] = listing
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)

    def _expire(self) -> None:
        now = self._clock()
        for key in [k for k in self._kept if k[1] + self.ttl_s <= now]:
            del self._kept[key]
