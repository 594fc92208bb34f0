"""The ``http`` module: an MCP server on HTTP, served behind the node as one of its assignments.

``--module 'http:ROLE=URL'`` proxies the server at ``URL`` as ``MACHINE/ROLE``: the node checks
the navigator's call token on every call as it does for every module, so the upstream need not be
reachable by anyone but the node (ADR 0038). The node sends the upstream only what the operator
gave it for that role — headers (``--module-header``) and an OAuth client's access token
(``--module-oauth``), read from the node's environment or files at start — and never a header of
the request it serves (``forward_incoming_headers=False``: the call token stays on the node).
What else it is shown of a call, how much of its answer is read and what of its failures is
logged: ``mesh.modules.upstream`` (ADR 0046).

Each request to the module opens a fresh MCP session with the upstream (FastMCP's own proxy
strategy for remote servers): nothing of one caller's session is seen by another's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator
from weakref import WeakKeyDictionary

import anyio
import httpx2
from fastmcp import FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server.providers.proxy import ProxyProvider

from mesh.modules.credentials import ClientCredentials, ModuleCredentials
from mesh.modules.spec import UpstreamLimits
from mesh.modules.upstream import UpstreamCalls, UpstreamClient, bounded_http_client

__all__ = ["ClientCredentialsAuth", "build_http_module", "upstream_refusal"]

logger = logging.getLogger("meshnav.node")

#: A cached access token is renewed this long before it expires (or at half its life, if less).
RENEW_BEFORE_S = 30.0
TOKEN_TIMEOUT_S = 30.0


class TokenRefused(Exception):
    """The upstream's authorization server gave no token; says why by status only."""


class ClientCredentialsAuth(httpx2.Auth):
    """The client credentials grant (RFC 6749 §4.4) for an upstream: a token fetched once,
    cached, renewed before it expires, and fetched again once when the upstream refuses it."""

    def __init__(self, client: ClientCredentials, resource: str) -> None:
        self.client = client
        self.resource = resource
        self._token: str | None = None
        self._renew_at = 0.0
        self._lock = anyio.Lock()

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._current(stale=None)
        request.headers["authorization"] = f"Bearer {token}"
        response = yield request
        if response.status_code == 401:
            token = await self._current(stale=token)
            request.headers["authorization"] = f"Bearer {token}"
            yield request

    async def _current(self, *, stale: str | None) -> str:
        async with self._lock:
            token = self._token  # another request's refusal may have renewed it meanwhile
            if token is not None and token != stale and time.monotonic() < self._renew_at:
                return token
            self._token, lifetime = await self._fetch()
            self._renew_at = time.monotonic() + lifetime - min(RENEW_BEFORE_S, lifetime / 2)
            return self._token

    async def _fetch(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials", "resource": self.resource}
        if self.client.scope:
            form["scope"] = self.client.scope
        async with httpx2.AsyncClient(timeout=TOKEN_TIMEOUT_S) as http:
            try:
                answer = await http.post(
                    self.client.token_url,
                    data=form,
                    auth=(self.client.client_id, self.client.secret),
                )
            except httpx2.HTTPError:
                raise TokenRefused("the token endpoint did not answer") from None
        try:
            body = answer.json()
            token, lifetime = body["access_token"], float(body.get("expires_in", 300))
        except (ValueError, KeyError, TypeError):
            raise TokenRefused(f"the token endpoint answered {answer.status_code}") from None
        if answer.status_code != 200 or not isinstance(token, str) or not token:
            raise TokenRefused(f"the token endpoint answered {answer.status_code}")
        logger.info("an access token for %s was fetched", self.client.client_id)
        return token, lifetime


#: Each http module's upstream refusal (its last answer's status when 400 or more, else None):
#: the cause a node gives for a list it could not get, which the MCP client's error does not say.
_REFUSALS: WeakKeyDictionary[FastMCP, list[int | None]] = WeakKeyDictionary()


def upstream_refusal(server: FastMCP) -> int | None:
    """The status the upstream of the http module ``server`` last refused with, if it did."""
    return _REFUSALS.get(server, [None])[0]


def build_http_module(
    role: str,
    url: str,
    credentials: ModuleCredentials | None,
    upstream: UpstreamLimits | None = None,
) -> FastMCP:
    """The server of assignment ``role``: the MCP server at ``url``, proxied with its
    credentials, its answers read to ``upstream.answer_bytes`` (``mesh.modules.upstream``)."""
    credentials = credentials or ModuleCredentials()
    upstream = upstream or UpstreamLimits()
    auth = None if credentials.oauth is None else ClientCredentialsAuth(credentials.oauth, url)
    refusal: list[int | None] = [None]
    transport = StreamableHttpTransport(
        url,
        headers=dict(credentials.headers),
        auth=auth,
        httpx_client_factory=bounded_http_client(upstream.answer_bytes, refusal),  # type: ignore[arg-type]  # the SDK's keywords
        max_sse_event_size=upstream.answer_bytes,
    )
    client = UpstreamClient(
        transport,
        name=f"meshnav-http-{role}",
        forward_incoming_headers=False,
        roots=None,
        sampling_handler=None,
        elicitation_handler=None,
    )
    server = FastMCP(role, mask_error_details=True)
    server.provider_error_strategy = "raise"  # an upstream that cannot be listed is an error
    server.add_provider(ProxyProvider(client.new))
    server.add_middleware(UpstreamCalls(role, upstream))
    _REFUSALS[server] = refusal
    return server
