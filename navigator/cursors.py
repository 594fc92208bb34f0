"""Signed, opaque, short-lived cursors (SPEC §3 Cursors).

A cursor carries a page offset, the time its listing started, and a digest of everything the
listing depends on — principal and scopes, the request's own arguments, the catalogue revision, the
grant revision and the grant rows observed. It is signed with HMAC-SHA256 under a key made at start
and held only in memory, so a restart invalidates every cursor. Opening a cursor recomputes the
binding from the present state: any difference, any tampering, or an age past the lifetime (counted
from the first page; later pages do not renew it) is ``invalid_cursor``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from mesh.digests import digest
from navigator.errors import InvalidCursor

__all__ = ["CursorPosition", "CursorSigner", "Listings"]

MAX_CURSOR_CHARS = 512
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class CursorPosition:
    offset: int
    started: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CursorSigner:
    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self._key = secrets.token_bytes(32)
        self.ttl_s = ttl_s
        self._clock = clock

    def issue(self, binding: dict[str, Any], position: CursorPosition) -> str:
        payload = {"b": digest(binding), "o": position.offset, "t": position.started}
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        return f"{body}.{self._sign(body)}"

    def open(self, cursor: object, binding: dict[str, Any]) -> CursorPosition:
        if (
            not isinstance(cursor, str)
            or len(cursor) > MAX_CURSOR_CHARS
            or not cursor.isascii()  # ours are base64url; compare_digest takes ASCII only
            or cursor.count(".") != 1
        ):
            raise InvalidCursor()
        body, _, signature = cursor.partition(".")
        if not hmac.compare_digest(self._sign(body), signature):
            raise InvalidCursor()
        try:
            payload = json.loads(_unb64(body))
            offset, started, bound = int(payload["o"]), float(payload["t"]), str(payload["b"])
        except (binascii.Error, ValueError, KeyError, TypeError):
            raise InvalidCursor() from None
        if offset < 0 or not hmac.compare_digest(bound, digest(binding)):
            raise InvalidCursor()
        if not (started <= self._clock() < started + self.ttl_s):
            raise InvalidCursor()
        return CursorPosition(offset=offset, started=started)

    def start(self) -> CursorPosition:
        return CursorPosition(offset=0, started=self._clock())

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest())


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
