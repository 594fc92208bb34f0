"""Principals and grants: the bodies and rules for them, which the admin API, the console and the
command line's direct path to the registry (``meshnav.access``) share, so that the registry never
holds what the API would refuse. Loads neither the server nor FastMCP: the command line stays
quick."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

import httpx2
from pydantic import AfterValidator, Field, StringConstraints

import registry
from navigator.access.grants import Caller, explain
from navigator.access.tokens import hash_token, mint_token
from navigator.addresses import is_machine_name, refused_name
from navigator.errors import InvalidArguments, UnknownPrincipal
from navigator.http.bodies import Body, is_printable
from navigator.limits import LIMITS
from registry import AccessStore, GrantRecord, Quota

__all__ = [
    "GRANT_ID_MOST",
    "SCOPE_PATTERN",
    "UNKNOWN_PRINCIPAL",
    "GrantBody",
    "HttpUrl",
    "ModuleName",
    "PrincipalBody",
    "QuotaBody",
    "RotateBody",
    "Scope",
    "checked_principal",
    "expiry",
    "grant_verdict",
    "is_principal_name",
    "principal_added",
    "token_rotated",
    "write_grant",
]

_PRINCIPAL_NAME = r"^[A-Za-z0-9_.@:-]+$"
#: The largest id a grant can have: the registry's integer column on PostgreSQL.
GRANT_ID_MOST = 2**31 - 1

#: A scope, as a principal holds it and a grant row or a module names it: an OAuth 2.0 scope
#: token (RFC 6749 §3.3: printable ASCII but space, ``"`` and ``\``), 1 to 256 — ``mesh:admin``,
#: ``ops``, and the scopes identity providers issue (``api://meshnav/Tools.Read``,
#: ``https://www.googleapis.com/auth/cloud-platform``). Every body that takes scopes holds them
#: to it, the command line's direct path included: a stored scope with a NUL or a lone surrogate
#: made every token read fail on PostgreSQL.
SCOPE_PATTERN = r"^[\x21\x23-\x5B\x5D-\x7E]{1,256}$"
Scope = Annotated[str, StringConstraints(pattern=SCOPE_PATTERN)]


def _printable(text: str) -> str:
    if not is_printable(text):
        raise ValueError("holds a control character")
    return text


def _http_url(text: str) -> str:
    """A URL the navigator can open — one its node client (``httpx2``) parses, with a host and a
    port in range (a malformed one was stored, then answered as ``node_unavailable`` on every
    use)."""
    try:
        url = httpx2.URL(text)
    except httpx2.InvalidURL:
        raise ValueError("is not a URL") from None
    if not url.host or not (url.port is None or 0 < url.port < 65536):
        raise ValueError("has no host, or a port out of range")
    return text


#: A URL a body stores (a machine's advertised URL, an endpoint), and a module's name: printable
#: text, as every text a body stores (PostgreSQL refuses a NUL, which the registry reported as an
#: outage); the URL one the navigator can open.
HttpUrl = Annotated[
    str,
    StringConstraints(max_length=2048, pattern=r"^https?://"),
    AfterValidator(_printable),
    AfterValidator(_http_url),
]
ModuleName = Annotated[str, StringConstraints(max_length=128), AfterValidator(_printable)]

#: A grant's principal: a principal's name, ``*``, or a JWT subject (``auth0|123``) — any
#: printable text.
GrantPrincipal = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_printable)]


def is_principal_name(name: str) -> bool:
    """Letters, digits and ``_.@:-``, at most 128, and not dots alone (a URL path would read
    ``..`` as its parent)."""
    return (
        0 < len(name) <= 128
        and re.match(_PRINCIPAL_NAME, name) is not None
        and name.strip(".") != ""
    )


#: The most a quota may say: a million calls a minute, ten thousand at once.
RATE_MOST = 1_000_000
CONCURRENCY_MOST = 10_000


class QuotaBody(Body):
    """A principal's quota (ADR 0041): ``null`` or absent is no limit."""

    rate_per_minute: int | None = Field(default=None, alias="ratePerMinute", ge=1, le=RATE_MOST)
    concurrency: int | None = Field(default=None, ge=1, le=CONCURRENCY_MOST)

    def quota(self) -> Quota:
        return Quota(self.rate_per_minute, self.concurrency)


class PrincipalBody(QuotaBody):
    name: str = Field(min_length=1, max_length=128, pattern=_PRINCIPAL_NAME)
    scopes: list[Scope] = Field(default_factory=list, max_length=64)
    machine: str | None = Field(default=None, max_length=63)
    expires_days: float | None = Field(default=None, alias="expiresDays", gt=0, le=3650)


class RotateBody(Body):
    expires_days: float | None = Field(default=None, alias="expiresDays", gt=0, le=3650)


class GrantBody(Body):
    principal: GrantPrincipal
    target: str = Field(min_length=1, max_length=256)
    effect: Literal["allow", "deny"]
    scopes: list[Scope] = Field(default_factory=list, max_length=64)
    #: A row for a name the registry holds no principal of: one made later, a JWT's subject.
    force: bool = False


#: Why a grant row for a name no principal has is refused, and the two ways on (ADR 0036).
UNKNOWN_PRINCIPAL = (
    "Unknown principal: the registry holds no principal of that name. Add it first (meshnav "
    'principal add), or grant with --force ("force": true) for a name made later, such as a JWT '
    "subject."
)


def write_grant(store: AccessStore, body: GrantBody) -> GrantRecord:
    """The grant row of ``body``: one naming a principal the registry does not hold is refused,
    unless ``force`` — a mistyped name granted nothing to anyone, and said nothing. ``*`` is
    every caller, never unknown."""
    if body.principal != "*" and not body.force:
        try:
            store.principal(body.principal)
        except registry.NotFound:
            raise UnknownPrincipal(UNKNOWN_PRINCIPAL, extra={"pointer": "/principal"}) from None
    return store.grant(body.principal, body.target, effect=body.effect, scopes=body.scopes)


def checked_principal(body: PrincipalBody) -> PrincipalBody:
    """A new principal's fields beyond their model: its name, and a bound machine's."""
    if not is_principal_name(body.name):
        raise InvalidArguments(
            "A principal's name is letters, digits and _.@:- (not dots alone), at most 128.",
            extra={"pointer": "/name"},
        )
    if body.machine is not None and not is_machine_name(body.machine):
        raise refused_name("machine")
    return body


def expiry(days: float | None) -> datetime | None:
    return datetime.now(UTC) + timedelta(days=days) if days else None


def principal_added(store: AccessStore, body: PrincipalBody) -> dict[str, Any]:
    """Add the principal of ``body`` (checked) with a new token: its record and the token, the
    only time it is shown — the one way a principal is added, through the API, the console or
    the command line's direct path."""
    body = checked_principal(body)
    token = mint_token()
    record = store.add_principal(
        body.name,
        scopes=body.scopes,
        token_hash=hash_token(token),
        machine=body.machine,
        expires_at=expiry(body.expires_days),
        quota=body.quota(),
    )
    return {"principal": record.as_json(), "token": token}


def token_rotated(store: AccessStore, name: str, expires_days: float | None) -> dict[str, Any]:
    """A new token for ``name`` (the old one stops at once), expiring in ``expires_days`` days or
    never: its record and the token, the only time it is shown."""
    token = mint_token()
    record = store.rotate_principal(
        name, token_hash=hash_token(token), expires_at=expiry(expires_days)
    )
    return {"principal": record.as_json(), "token": token}


def grant_verdict(store: AccessStore, principal: str, address: str) -> dict[str, Any]:
    """Which row decides whether ``principal`` may call ``address``, and why (``grants.explain``
    on the principal's grant rows, read now)."""
    record = store.principal(principal)
    snapshot = store.snapshot(principal, record.scopes, limit=LIMITS.grant_rows)
    return explain(Caller(principal, frozenset(record.scopes)), snapshot, address)
