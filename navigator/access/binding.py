"""Who a credential speaks for (SPEC §7, ADR 0044): the one function that turns what a credential
says into a ``Caller``, for every route — MCP, the admin API, the node API and the console.

A stored token names its principal by its hash, and the principal's row gives the scopes. A JWT
proves a name and nothing more: the principal row of that name decides. Its effective scopes are
the token's scopes intersected with the row's; a revoked or expired principal is
``unauthenticated`` whatever it presents; a subject with no principal row holds at most
``mesh:use`` and no grant — never ``mesh:admin`` or ``mesh:node`` — and is marked unregistered,
so that all such subjects share one session budget. A principal's quota comes from its row,
whichever credential it presents.

A JWT's subject becomes a principal's name, a log field, an audit field: one with a control
character or a lone surrogate, or longer than a principal's name may be, is refused here, at
sign-in, before anything downstream sees it. So is a JWT that does not say it is an access token
(RFC 9068 ``typ``), unless the deployment allows untyped ones (``MESHNAV_JWT_ALLOW_UNTYPED``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from mesh.text import is_printable
from navigator.access.grants import Caller
from navigator.errors import GrantRowsUnusable, Unauthenticated
from registry import TokenHolder

__all__ = [
    "MAX_SUBJECT_CHARS",
    "UNREGISTERED_SCOPES",
    "bind",
    "bind_subject",
    "expiry",
    "is_access_token",
    "subject_of",
]

#: The most a subject no principal row stands behind holds.
UNREGISTERED_SCOPES = frozenset({"mesh:use"})
#: A subject's longest name: a principal's name as the registry stores it.
MAX_SUBJECT_CHARS = 128
#: RFC 9068 §2.1: an access token's ``typ`` (compared case-insensitively, RFC 2045).
_ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})
#: What an issuer that types no token in particular writes, if anything: taken only when untyped
#: tokens are allowed.
_GENERIC_TYPES = frozenset({"jwt", "application/jwt"})


def bind(
    holder: TokenHolder | None, now: datetime, claimed: frozenset[str] | None = None
) -> Caller:
    """The caller ``holder`` is now: ``claimed`` is a JWT's scopes, ``None`` for a stored token
    (which carries none of its own). ``Unauthenticated`` when no principal holds the credential,
    or the principal is revoked or expired."""
    if holder is None:
        raise Unauthenticated()
    if not holder.registered:
        scopes = (claimed or frozenset()) & UNREGISTERED_SCOPES
        return Caller(holder.name, scopes, holder.grants, registered=False)
    if not holder.is_active(now):
        raise Unauthenticated()
    scopes = frozenset(holder.scopes)
    if claimed is not None:
        scopes &= claimed
    return Caller(holder.name, scopes, holder.grants, quota=holder.quota)


def bind_subject(holder: TokenHolder | None, claimed: frozenset[str]) -> Caller:
    """``bind`` for a JWT's subject, read with its grant rows (``read_subject_holder``): rows
    that cannot be judged fail closed, as a stored token's do."""
    if holder is None or holder.grants is None:
        raise GrantRowsUnusable()
    return bind(holder, datetime.now(UTC), claimed)


def subject_of(claims: Mapping[str, Any] | None, claim: str) -> str:
    """The principal a verified JWT names: ``Unauthenticated`` unless it is a name a principal
    could have — text, 1 to 128 characters, no control character and no lone surrogate."""
    subject = (claims or {}).get(claim)
    if not isinstance(subject, str) or not 0 < len(subject) <= MAX_SUBJECT_CHARS:
        raise Unauthenticated()
    if not is_printable(subject):
        raise Unauthenticated()
    return subject


def expiry(expires_at: object) -> datetime:
    """A JWT's ``exp`` as a time: one that is missing (a credential that never expires), not a
    number, or past what a calendar holds is ``Unauthenticated``."""
    if isinstance(expires_at, bool) or not isinstance(expires_at, int | float):
        raise Unauthenticated()
    try:
        return datetime.fromtimestamp(expires_at, UTC)
    except (OverflowError, ValueError, OSError):
        raise Unauthenticated() from None


def is_access_token(token: str, *, allow_untyped: bool) -> bool:
    """Whether a JWT's header types it an access token (RFC 9068 §2.1: ``at+jwt``), or types it
    nothing in particular while ``allow_untyped``. An ID token (no ``typ``, or ``JWT``) is not
    one, though its audience may match."""
    head = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, RecursionError):
        return False
    if not isinstance(header, dict):
        return False
    typ = header.get("typ")
    if typ is None:
        return allow_untyped
    if not isinstance(typ, str):
        return False
    return typ.lower() in _ACCESS_TOKEN_TYPES or (allow_untyped and typ.lower() in _GENERIC_TYPES)
