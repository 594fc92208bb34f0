"""Who is calling: bearer tokens of stored principals (hash only), or JWTs when configured.

Authentication is one ASGI middleware in front of every route (``AuthenticationMiddleware``): MCP,
the admin API, the node API and the console's data all pass through it, because FastMCP's own auth
does not guard custom routes. It resolves the principal once per HTTP request and puts a
``Caller`` in the ASGI scope (on the MCP path, also the principal as the MCP SDK's user: the SDK
serves a legacy-era session only to the principal that opened it); missing or bad credentials on
a guarded path are an HTTP 401 whose body is the SPEC §9 JSON, and a registry that cannot be read
an HTTP 503 ``registry_unavailable`` on every route, MCP's two eras included (ADR 0056). Public
paths (health, the console's static shell) carry no credentials.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from fastmcp.server.auth import TokenVerifier
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from navigator.access.auditing import AuditLog
from navigator.access.binding import bind, bind_subject, expiry, is_access_token, subject_of
from navigator.access.grants import Caller
from navigator.access.tokens import TOKEN_PREFIX, hash_token
from navigator.catalog.registry_reads import short_read
from navigator.errors import (
    NavigatorError,
    Unauthenticated,
    error_body,
    from_registry,
)
from navigator.limits import LIMITS
from navigator.settings import NavigatorSettings
from registry import (
    Registry,
    RegistryError,
    read_subject_holder,
    read_token_holder,
)

__all__ = [
    "AuthenticationMiddleware",
    "Authenticator",
    "Credential",
    "caller_from_scope",
    "jwt_verifier",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Authenticator:
    """Resolves a bearer token to a ``Caller``; every failure looks the same to the caller.

    Stored tokens (``mnv_…``) are looked up by hash; anything else is tried as a JWT when the
    deployment configured a verifier (issuer, audience, JWKS or key), its ``sub`` naming the
    principal, whose row decides what it may do (``navigator.access.binding``, ADR 0044).
    """

    def __init__(
        self,
        registry: Registry,
        jwt: TokenVerifier | None = None,
        principal_claim: str = "sub",
        *,
        audit: AuditLog | None = None,
        allow_untyped: bool = False,
    ) -> None:
        self.registry = registry
        self.jwt = jwt
        self.principal_claim = principal_claim
        self.audit = audit
        #: Take JWTs whose header types them nothing in particular (``MESHNAV_JWT_ALLOW_UNTYPED``).
        self.allow_untyped = allow_untyped

    def authenticate(self, token: str | None) -> Caller:
        """A stored token's principal and its grants, read in one transaction (blocking)."""
        if not token or not token.startswith(TOKEN_PREFIX):
            raise Unauthenticated()
        return self.holder_of(hash_token(token))

    def holder_of(self, token_hash: str) -> Caller:
        """The principal holding the stored token of ``token_hash`` now, active, with its grants
        (blocking)."""
        holder = read_token_holder(self.registry, token_hash, limit=LIMITS.grant_rows)
        return bind(holder, datetime.now(UTC))

    def subject(self, principal: str, scopes: frozenset[str]) -> Caller:
        """A JWT's subject as its principal row makes it now, with its grants (blocking): the
        token's ``scopes`` within the row's; none of a revoked or expired principal; at most
        ``mesh:use`` and no grant, not even a ``*`` row's, without a row (ADR 0044)."""
        holder = read_subject_holder(self.registry, principal, scopes, limit=LIMITS.grant_rows)
        return bind_subject(holder, scopes)

    async def verify(self, token: str | None, *, route: str = "/mcp", source: str = "") -> Caller:
        """Any accepted credential: a stored token, or a JWT when a verifier is configured. The
        caller can have it checked again (``Caller.renew``)."""
        caller = (await self.credential(token, route=route, source=source)).caller
        renew = functools.partial(self.verify, token, route=route, source=source)
        return replace(caller, renew=renew)

    async def credential(
        self, token: str | None, *, route: str = "/mcp", source: str = ""
    ) -> Credential:
        """``verify``'s caller, and what stands behind it: the stored token's hash, or the JWT's
        expiry (what a console session is bound to). A refusal is counted on the aggregated
        audit event of ``route``'s name and the ``source`` address, naming a token by the first
        12 digits of its hash, never by its value (ADR 0039, ADR 0045); so is a request refused
        because the registry could not be read (``registry_unavailable``, ADR 0056)."""
        try:
            return await self._credential(token)
        except Unauthenticated:
            self._refused(route, source, token, Unauthenticated.code)
            raise
        except RegistryError as error:
            self._refused(route, source, token, from_registry(error).code)
            raise

    def _refused(self, route: str, source: str, token: str | None, outcome: str) -> None:
        if self.audit is not None:
            self.audit.refused(route, source, hash_token(token)[:12] if token else None, outcome)

    async def _credential(self, token: str | None) -> Credential:
        if token and not token.startswith(TOKEN_PREFIX) and self.jwt is not None:
            if not is_access_token(token, allow_untyped=self.allow_untyped):
                raise Unauthenticated()
            try:
                access = await self.jwt.verify_token(token)
            except (OverflowError, ValueError, TypeError):  # an ``exp`` of Infinity, and the like
                raise Unauthenticated() from None
            if access is None:
                raise Unauthenticated()
            subject = subject_of(access.claims, self.principal_claim)
            expires_at = expiry(access.expires_at)  # one that never expires is not accepted
            scopes = frozenset(access.scopes)
            caller = await short_read(self.registry, self.subject, subject, scopes)
            return Credential(caller, expires_at=expires_at)
        if not token or not token.startswith(TOKEN_PREFIX):
            raise Unauthenticated()
        token_hash = hash_token(token)
        return Credential(await short_read(self.registry, self.holder_of, token_hash), token_hash)


@dataclass(frozen=True, slots=True)
class Credential:
    """An accepted credential: its caller, and a stored token's hash or a JWT's expiry."""

    caller: Caller
    token_hash: str | None = None
    expires_at: datetime | None = None


def jwt_verifier(settings: NavigatorSettings) -> TokenVerifier | None:
    """FastMCP's JWT verifier, when the deployment configured one (SPEC §7)."""
    if not (settings.jwt_jwks_uri or settings.jwt_public_key):
        return None
    from fastmcp.server.auth.providers.jwt import JWTVerifier

    return JWTVerifier(
        public_key=settings.jwt_public_key,
        jwks_uri=settings.jwt_jwks_uri,
        issuer=settings.jwt_issuer,
        # RFC 8707: only a token minted for this navigator (its ``aud`` holds one of these)
        audience=settings.jwt_audiences(),
        algorithm=settings.jwt_algorithm,
    )


def bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name == b"authorization":
            scheme, _, credential = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credential.strip():
                return credential.strip()
            return None
    return None


def session_owner(caller: Caller) -> AuthenticatedUser:
    """The caller as the MCP SDK names who holds a legacy-era session: by principal id, which
    the SDK compares on every request in that session (no token is kept in it)."""
    return AuthenticatedUser(
        AccessToken(token="", client_id=caller.principal, scopes=sorted(caller.scopes))
    )


def caller_from_scope(scope: Scope) -> Caller:
    """The caller the middleware resolved; missing context means deny."""
    caller = scope.get("state", {}).get("meshnav_caller")
    if not isinstance(caller, Caller):
        raise Unauthenticated()
    return caller


async def send_error(
    send: Send, error: NavigatorError, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    body = json.dumps(error_body(error)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class AuthenticationMiddleware:
    """Authenticate every HTTP request except the public paths; 401 with the §9 body otherwise,
    and 503 ``registry_unavailable`` while the registry cannot be read."""

    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        public: Callable[[str], bool],
        holds_sessions: Callable[[str], bool] = lambda path: False,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.public = public
        self.holds_sessions = holds_sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.public(scope["path"]):
            await self.app(scope, receive, send)
            return
        token = bearer(scope.get("headers", []))
        try:
            client = scope.get("client")
            caller = await self.authenticator.verify(
                token, route=scope["path"], source=str(client[0]) if client else ""
            )
        except NavigatorError as error:
            await send_error(send, error)  # its challenge: ``navigator.access.oauth.Challenges``
            return
        except RegistryError as error:
            # on every route and era alike: an MCP request names no owner then, and a legacy-era
            # session is neither opened nor served without its owner (ADR 0056)
            await send_error(send, from_registry(error))
            return
        scope.setdefault("state", {})["meshnav_caller"] = caller
        if self.holds_sessions(scope["path"]):  # MCP: its sessions are the caller's own
            scope["user"] = session_owner(caller)
        await self.app(scope, receive, send)
