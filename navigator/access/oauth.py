"""The navigator as an OAuth 2.1 resource server, as the MCP authorization specification asks.

It publishes RFC 9728 protected-resource metadata naming the authorization server(s) it trusts
(``MESHNAV_JWT_ISSUER``), and every 401 it gives, on any path, carries the RFC 6750 challenge that
points at that metadata — which is how a client (Claude, VS Code, the Inspector, the SDKs) finds
where to sign in. It never issues tokens itself (ADR 0037): tokens come from the organisation's
authorization server and are verified by ``navigator.access.authentication`` (issuer,
RFC 8707 audience = the MCP resource, signature, expiry).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from navigator.settings import NavigatorSettings

__all__ = [
    "METADATA_PATHS",
    "Challenges",
    "ResourceServer",
    "metadata_routes",
]

#: RFC 9728 §3.1: the metadata of the resource ``{base}/mcp`` is at the well-known path with the
#: resource's path appended; the bare well-known path answers too, for clients that ask there.
METADATA_PATH = "/.well-known/oauth-protected-resource"
METADATA_PATHS = (METADATA_PATH + "/mcp", METADATA_PATH)
RESOURCE_NAME = "meshnav navigator"


def _quoted(value: str) -> str:
    """An RFC 7235 quoted-string of ``value`` (our own URLs and scope names: no quote in them)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True, slots=True)
class ResourceServer:
    """What the navigator says of itself as a protected resource; fixed at start, nothing of the
    registry in it."""

    resource: str
    metadata_url: str
    authorization_servers: tuple[str, ...]
    scopes: tuple[str, ...]

    @classmethod
    def of(cls, settings: NavigatorSettings) -> ResourceServer:
        return cls(
            resource=settings.resource(),
            metadata_url=settings.base_url() + METADATA_PATHS[0],
            authorization_servers=(settings.jwt_issuer,) if settings.jwt_issuer else (),
            scopes=tuple(settings.scopes_supported()),
        )

    def metadata(self) -> dict[str, Any]:
        """RFC 9728 §2's document."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
            "resource_name": RESOURCE_NAME,
        }
        if self.scopes:
            document["scopes_supported"] = list(self.scopes)
        return document

    def challenge(self, *, token_given: bool) -> bytes:
        """A 401's ``WWW-Authenticate`` (RFC 6750 §3, RFC 9728 §5.1): where the metadata is, the
        scopes to ask for, and ``invalid_token`` when a token was presented and refused."""
        params = [f"resource_metadata={_quoted(self.metadata_url)}"]
        if self.scopes:
            params.append(f"scope={_quoted(' '.join(self.scopes))}")
        if token_given:
            params.append('error="invalid_token"')
        return ("Bearer " + ", ".join(params)).encode()

    def insufficient_scope(self, scope: str) -> bytes:
        """A 403's ``WWW-Authenticate`` for a token lacking ``scope`` (RFC 6750 §3.1)."""
        return (
            f'Bearer error="insufficient_scope", scope={_quoted(scope)}, '
            f"resource_metadata={_quoted(self.metadata_url)}"
        ).encode()


#: Set on a 403 by a handler whose caller lacks a scope: the scope it needs (``Challenges`` turns
#: it into the RFC 6750 challenge and takes the marker off).
SCOPE_NEEDED = b"x-meshnav-scope-needed"


class Challenges:
    """Every 401 of every path leaves with the resource server's challenge, in place of any other;
    a 403 a handler marked as a missing scope leaves with ``insufficient_scope``. One place, so
    that no route (MCP, the admin and node API, the console's data, one added later) can answer
    a 401 a client cannot follow to its authorization server."""

    def __init__(self, app: ASGIApp, server: ResourceServer) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token_given = any(name == b"authorization" for name, _ in scope.get("headers", []))

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in (401, 403):
                message = self._challenged(message, token_given=token_given)
            await send(message)

        await self.app(scope, receive, sending)

    def _challenged(self, start: Message, *, token_given: bool) -> Message:
        headers = list(start.get("headers", []))
        needed = next((v for k, v in headers if k.lower() == SCOPE_NEEDED), None)
        if start["status"] == 401:
            challenge: bytes | None = self.server.challenge(token_given=token_given)
        elif needed is not None:
            challenge = self.server.insufficient_scope(needed.decode("latin-1"))
        else:
            return start
        kept = [(k, v) for k, v in headers if k.lower() not in (b"www-authenticate", SCOPE_NEEDED)]
        return {**start, "headers": [*kept, (b"www-authenticate", challenge)]}


def metadata_routes(server: ResourceServer) -> list[Route]:
    """The metadata at both well-known paths: public, the same for everyone, readable from any
    origin (a browser-based client fetches it before it holds any credential)."""
    body = json.dumps(server.metadata()).encode()

    async def metadata(request: Request) -> Response:
        return Response(
            body,
            media_type="application/json",
            headers={"access-control-allow-origin": "*", "cache-control": "max-age=3600"},
        )

    return [Route(path, metadata, methods=["GET"]) for path in METADATA_PATHS]
