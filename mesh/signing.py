"""Signed claims: the one format of the mesh's HMAC signers (call tokens, the navigator's cursors
and its elicitation request states).

A signed text is ``base64url(claims) "." base64url(HMAC-SHA256(key, base64url(claims)))``, the
claims a compact JSON object with sorted keys and base64url without padding. A signer may bind a
text to a ``context`` it does not carry (the call an elicitation state answers): the HMAC is then
over ``base64url(claims) "\\n" context``. Verification compares in constant time and answers
None for anything it did not sign — any shape, encoding or tampering alike — so that each caller
refuses in its own error. Expiry is the caller's claim, checked by ``unexpired``; ``SeenNonces``
makes a signed text good once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import hmac
import json
import threading
from collections.abc import Mapping
from typing import Any

__all__ = ["SeenNonces", "sign", "unexpired", "verify"]


def sign(key: bytes, claims: Mapping[str, Any], *, context: str | None = None) -> str:
    """``claims`` signed under ``key`` (bound to ``context`` if given)."""
    body = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    return f"{body}.{_mac(key, body, context)}"


def verify(
    key: bytes, signed: object, *, context: str | None = None, max_chars: int | None = None
) -> dict[str, Any] | None:
    """The claims of ``signed`` if ``key`` signed them (for ``context``), else None."""
    if (
        not isinstance(signed, str)
        or (max_chars is not None and len(signed) > max_chars)
        or not signed.isascii()  # ours are base64url; compare_digest takes ASCII only
        or signed.count(".") != 1
    ):
        return None
    body, _, mac = signed.partition(".")
    if not hmac.compare_digest(_mac(key, body, context), mac):
        return None
    try:
        claims = json.loads(_unb64(body))
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, dict) else None


def unexpired(expires: float, now: float, longest_s: float | None = None) -> bool:
    """Whether a text expiring at ``expires`` is good at ``now``: before its expiry, and, with
    ``longest_s``, not meant to last longer than that from now (a text from a clock ahead, or
    signed before its start)."""
    return now < expires and (longest_s is None or expires <= now + longest_s)


class SeenNonces:
    """Nonces seen, each until its token expires, and the same in expiry order: forgetting the
    expired ones, oldest first, costs each check O(log n) however many tokens are live. Thread-
    safe (a node checks tokens from its modules' worker threads too)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._expiries: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._seen)

    def first(self, nonce: str, expires: float, now: float) -> bool:
        """Whether ``nonce`` is new and its token unexpired (then it is kept until ``expires``);
        the expired ones are forgotten."""
        with self._lock:
            expiries = self._expiries
            while expiries and expiries[0][0] <= now:
                self._seen.discard(heapq.heappop(expiries)[1])
            if expires <= now or nonce in self._seen:
                return False
            self._seen.add(nonce)
            heapq.heappush(expiries, (expires, nonce))
            return True


def _mac(key: bytes, body: str, context: str | None) -> str:
    # surrogatepass: a context may name a principal, a JWT's subject, which is any JSON string
    message = body if context is None else f"{body}\n{context}"
    return _b64(hmac.new(key, message.encode("utf-8", "surrogatepass"), hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
