"""Call tokens: the navigator signs each forwarded call; a node obeys only what it signed (§6).

A token is ``base64url(claims) "." base64url(HMAC-SHA256(key, base64url(claims)))``
(``mesh.signing``) where the key is the machine's own, issued at registration. The claims name
the principal, the address the agent called, the endpoint role and tool on this machine, the
arguments' digest, a nonce, when it was signed and an expiry at most 30 s ahead. The node checks
all of them and remembers nonces until they expire, so a token is good for exactly one call of
exactly that tool with exactly those arguments.

Its memory of nonces is its process's: a node that restarts within a token's life cannot tell a
token its previous run accepted from a new one, and the key outlives the process (the registry
keeps it, so that every navigator signs for every node). So a node also refuses tokens signed
before its first registration, by the time the navigator gave in its answer — the navigators'
clock on both sides, the clock the tokens are signed by. Such a token is answered
``node_unavailable`` (it is no judgement of the call: one signed while the node restarted may be
sent again).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mesh import signing
from mesh.digests import arguments_digest
from mesh.errors import CallTokenRejected, NotEnrolled, SignedBeforeStart
from mesh.signing import SeenNonces

__all__ = [
    "MAX_LIFETIME_S",
    "META_KEY",
    "CallClaims",
    "CallTokenVerifier",
    "caller",
    "sign_call_token",
]

#: Where the token travels: the ``_meta`` of the ``tools/call`` request.
META_KEY = "meshnav/call-token"
MAX_LIFETIME_S = 30
#: Clock skew tolerated between navigator and node.
SKEW_S = 5
#: The principal whose call a module is running: set by the node for the call its token covers,
#: so that a module can share what it holds among callers (``mesh.modules.turns``).
caller: ContextVar[str | None] = ContextVar("meshnav_caller", default=None)


@dataclass(frozen=True, slots=True)
class CallClaims:
    principal: str
    address: str
    machine: str
    role: str
    tool: str
    arguments_digest: str
    nonce: str
    issued: float
    expires: float


def sign_call_token(
    key: bytes,
    *,
    principal: str,
    address: str,
    machine: str,
    role: str,
    tool: str,
    arguments_digest: str,
    lifetime_s: float = MAX_LIFETIME_S,
    now: float | None = None,
) -> str:
    issued = time.time() if now is None else now
    claims = {
        "p": principal,
        "a": address,
        "m": machine,
        "r": role,
        "t": tool,
        "d": arguments_digest,
        "n": secrets.token_urlsafe(16),
        "i": issued,
        "e": issued + min(lifetime_s, MAX_LIFETIME_S),
    }
    return signing.sign(key, claims)


class CallTokenVerifier:
    """Checks tokens for one machine. ``key`` is read on every check: it arrives at registration;
    so does ``floor``, the navigators' time of this process's first registration (None: no
    floor)."""

    def __init__(
        self,
        machine: str,
        key: Callable[[], bytes | None],
        clock: Callable[[], float] = time.time,
        floor: Callable[[], float | None] = lambda: None,
    ) -> None:
        self.machine = machine
        self._key = key
        self._clock = clock
        self._floor = floor
        self._seen = SeenNonces()  # of accepted tokens, until they expire

    def verify(
        self, token: object, *, role: str, tool: str, arguments: Mapping[str, Any]
    ) -> CallClaims:
        """The claims of a good token for this call; ``CallTokenRejected`` otherwise."""
        key = self._key()
        if key is None:
            raise NotEnrolled()
        raw = signing.verify(key, token)
        if raw is None:
            raise CallTokenRejected()
        try:
            claims = CallClaims(
                principal=str(raw["p"]),
                address=str(raw["a"]),
                machine=str(raw["m"]),
                role=str(raw["r"]),
                tool=str(raw["t"]),
                arguments_digest=str(raw["d"]),
                nonce=str(raw["n"]),
                issued=float(raw["i"]),
                expires=float(raw["e"]),
            )
        except (KeyError, TypeError, ValueError):
            raise CallTokenRejected() from None
        now = self._clock()
        if not signing.unexpired(claims.expires, now, MAX_LIFETIME_S + SKEW_S):
            raise CallTokenRejected()
        if (claims.machine, claims.role, claims.tool) != (self.machine, role, tool):
            raise CallTokenRejected()
        floor = self._floor()
        if floor is not None and claims.issued < floor:
            raise SignedBeforeStart()
        try:
            digest = arguments_digest(arguments)
        except (TypeError, ValueError):
            raise CallTokenRejected() from None
        if not hmac.compare_digest(claims.arguments_digest, digest):
            raise CallTokenRejected()
        self._remember(claims.nonce, claims.expires, now)
        return claims

    def _remember(self, nonce: str, expires: float, now: float) -> None:
        """Refuse a nonce seen before."""
        if not self._seen.first(nonce, expires, now):
            raise CallTokenRejected()
