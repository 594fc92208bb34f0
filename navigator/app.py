"""The navigator as one ASGI application: MCP at ``/mcp``, the API at ``/api/v1``, the console at
``/``, health and metrics — all behind one authentication middleware.

``/mcp`` itself, the path every agent's call takes, goes from the authentication middleware straight
to the MCP app; only the other paths walk Starlette's route table (``NavigatorApp``)."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
from fastmcp.server.http import HostOriginGuardMiddleware, StreamableHTTPASGIApp
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from navigator.access.authentication import AuthenticationMiddleware
from navigator.access.oauth import METADATA_PATHS, Challenges, ResourceServer, metadata_routes
from navigator.api import API_PREFIX
from navigator.api.routes import api_routes, no_route
from navigator.catalog.registry_writes import registry_writes
from navigator.console import console_routes, is_console_path
from navigator.mcp.early import QuotaRefusals
from navigator.mcp.server import build_mcp, running
from navigator.mcp.sessions import SessionBook
from navigator.mcp.stopping import Stopping
from navigator.metrics import METRICS
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import RegistryError

__all__ = ["NavigatorApp", "build_app"]

logger = logging.getLogger("meshnav.navigator")

#: Answered to anyone by any name: probes, and the OAuth metadata clients read before they hold a
#: credential (ADR 0037).
PUBLIC_PATHS = ("/healthz", "/readyz", "/metrics", *METADATA_PATHS)
MCP_PATH = "/mcp"


class NavigatorApp(Starlette):
    """Starlette, less its route table on the MCP path: a request to exactly ``/mcp`` is
    authenticated and handed to the MCP app directly (which has its own error handling), instead
    of passing the outer error and exception layers and matching every route before the mount
    that would reach the same app."""

    def __init__(self, *, mcp: ASGIApp, stopping: Stopping, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mcp = mcp
        #: Its drain, for the server that runs it (``mesh.lifecycle.Server``).
        self.stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MCP_PATH:
            scope["app"] = self
            await self.mcp(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


GuardKey = tuple[bytes | None, bytes | None, Any, Any]

#: Distinct requests the Host/Origin guard remembers letting through; beyond that it judges anew.
ADMITTED_MAX = 64


def _guard_key(scope: Scope) -> GuardKey:
    """All FastMCP's guard judges by: the first Host and Origin headers (as Starlette's ``Headers``
    reads them), the address the server listens on, and the scheme."""
    host = origin = None
    for name, value in scope["headers"]:
        if name == b"host":
            if host is None:
                host = value
        elif name == b"origin" and origin is None:
            origin = value
    return host, origin, scope.get("server"), scope.get("scheme")


class RememberedHostOrigin:
    """FastMCP's Host/Origin guard (DNS-rebinding protection on ``/mcp``), each distinct request
    shape judged once. Its verdict depends only on ``_guard_key`` and the configuration fixed at
    start, so a request shaped like one it let through passes on one scan of the headers (the
    guard's own parsing costs ~0.1 ms a request); anything else, every refusal included, is
    judged and answered by FastMCP's own code."""

    def __init__(self, app: ASGIApp, /, **options: Any) -> None:
        self.app = app
        self.judge = HostOriginGuardMiddleware(self._admit, **options)
        self.admitted: set[GuardKey] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and _guard_key(scope) in self.admitted:
            await self.app(scope, receive, send)
            return
        await self.judge(scope, receive, send)

    async def _admit(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and len(self.admitted) < ADMITTED_MAX:
            self.admitted.add(_guard_key(scope))
        await self.app(scope, receive, send)


def _remember_host_origin(app: Starlette) -> None:
    """Swap FastMCP's guard in ``app``'s middleware for ``RememberedHostOrigin``, same options."""
    app.user_middleware = [
        Middleware(RememberedHostOrigin, *entry.args, **entry.kwargs)
        if cast(Any, entry.cls) is HostOriginGuardMiddleware
        else entry
        for entry in app.user_middleware
    ]


#: How the MCP SDK's legacy-era transport begins its refusal of a body that is not one JSON-RPC
#: message; pydantic's whole validation error follows, the body's own values in it.
_UNREAD_BODY = "Validation error:"
#: What the sessionless era's transport says of such a body, and now the legacy era's too.
PLAIN_REFUSAL = "Body must be a single JSON-RPC request or notification object"
#: What the SDK answers for a session id it does not hold (404), and what the navigator says.
_NO_SESSION = "Session not found"
SESSION_GONE = (
    "Session not found: the navigator restarted, or the session ended. Open a fresh session "
    "(initialize again, without the Mcp-Session-Id header); nothing else is needed."
)
_HELD_STATUSES = (400, 404)


class PlainRefusals:
    """The MCP app, less what the SDK's legacy-era transport repeats of a body it cannot read:
    its 400 says only what the sessionless era's says (SPEC §9: no error repeats what was sent);
    and its 404 for a session it does not hold says what to do (ADR 0030). Only a 400 or a 404
    is held and read; every other answer passes as it is sent."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def sending(message: Message) -> None:
            if not held and not (
                message["type"] == "http.response.start" and message["status"] in _HELD_STATUSES
            ):
                await send(message)
                return
            held.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                for plain in _plain(held):
                    await send(plain)
                held.clear()

        await self.app(scope, receive, sending)


def _plain(answer: list[Message]) -> list[Message]:
    """A 400 or 404 as it was sent, or with the navigator's words in place of the transport's
    message."""
    start, body = answer[0], b"".join(m.get("body", b"") for m in answer[1:])
    try:
        refusal = json.loads(body)
        error = refusal["error"]
        said = error["message"]
        plain = (
            PLAIN_REFUSAL
            if said.startswith(_UNREAD_BODY)
            else SESSION_GONE
            if said == _NO_SESSION
            else None
        )
    except (ValueError, TypeError, KeyError, AttributeError):  # not the transport's JSON-RPC
        return answer
    if plain is None:
        return answer
    error["message"] = plain
    rewritten = json.dumps(refusal, separators=(",", ":")).encode()
    headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(rewritten)).encode()))
    return [{**start, "headers": headers}, {"type": "http.response.body", "body": rewritten}]


def _session_manager(mcp_app: Starlette) -> StreamableHTTPSessionManager:
    """The MCP SDK's session manager FastMCP made for ``mcp_app`` when its lifespan began."""
    for route in mcp_app.routes:
        endpoint = getattr(route, "endpoint", None)
        if isinstance(endpoint, StreamableHTTPASGIApp) and endpoint.session_manager is not None:
            return endpoint.session_manager
    raise RuntimeError("the MCP app has no session manager")


def build_app(
    settings: NavigatorSettings, *, migrate_first: bool = True, services: Services | None = None
) -> NavigatorApp:
    """The navigator's app for ``settings``, serving ``services`` (made from them unless
    given)."""
    services = services or Services.create(settings)
    stopping = Stopping(on_cut=services.audit.cut)
    mcp_app = build_mcp(services, stopping=stopping).http_app(
        path="/mcp",
        # pinned, not read from FastMCP's environment (FASTMCP_JSON_RESPONSE, …): an answer as one
        # JSON body would carry no progress, and a stateless legacy era no elicitation
        json_response=False,
        stateless_http=False,
        host_origin_protection="auto",
        allowed_hosts=settings.hosts_allowed() or None,
        allowed_origins=settings.origins_allowed() or None,
    )
    _remember_host_origin(mcp_app)
    mcp_app.user_middleware.append(Middleware(PlainRefusals))
    sessions = SessionBook(
        mcp_app,
        per_principal=settings.sessions_per_principal,
        unregistered=settings.unregistered_sessions,
    )
    stopping.sessions = sessions

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with (
            running(services, migrate_first=migrate_first),
            mcp_app.router.lifespan_context(mcp_app),
        ):
            sessions.manager = _session_manager(mcp_app)
            sessions.manager.max_sessions = settings.sessions_max
            yield

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    async def readyz(request: Request) -> Response:
        if stopping.refusing:  # a balancer sends new agents elsewhere while this one drains
            return JSONResponse({"status": "stopping"}, status_code=503)
        try:
            await anyio.to_thread.run_sync(services.registry.ping)
        except RegistryError:
            return JSONResponse({"status": "registry unavailable"}, status_code=503)
        return JSONResponse({"status": "ready", **registry_writes(services.catalog.writes)})

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(METRICS.render(), media_type="text/plain; version=0.0.4")

    def guard(inner: ASGIApp) -> AuthenticationMiddleware:
        return AuthenticationMiddleware(
            inner,  # type: ignore[arg-type]
            authenticator=services.authenticator,
            public=lambda path: path in PUBLIC_PATHS or is_console_path(path),
            holds_sessions=lambda path: path == MCP_PATH or path.startswith(MCP_PATH + "/"),
        )

    resource_server = ResourceServer.of(settings)
    # a call the caller's quota refuses is answered before the MCP app (ADR 0048)
    refusing = QuotaRefusals(sessions, services.navigator.quotas, services.navigator.audit)  # type: ignore[arg-type]
    app = NavigatorApp(
        mcp=Challenges(guard(refusing), resource_server),  # type: ignore[arg-type]
        stopping=stopping,
        routes=[
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics),
            *metadata_routes(resource_server),
            Mount(API_PREFIX, routes=api_routes()),
            *console_routes(),
            Mount("/", app=mcp_app),
        ],
        lifespan=lifespan,
        exception_handlers={HTTPException: no_route},
    )

    def hosts_checked(inner: ASGIApp) -> ASGIApp:
        """``/mcp``'s Host/Origin rule for every other path, before anything is authenticated:
        the console, the admin and the node API. Health and metrics answer probes, which name
        the navigator by any address, without it (ADR 0033); so does the OAuth metadata, which
        holds nothing a rebinding page could learn (ADR 0037)."""
        checked = RememberedHostOrigin(
            inner,
            mode="auto",
            allowed_hosts=settings.hosts_allowed() or None,
            allowed_origins=settings.origins_allowed() or None,
        )

        async def either(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["path"] in PUBLIC_PATHS:
                await inner(scope, receive, send)
                return
            await checked(scope, receive, send)

        return either

    app.state.meshnav = services
    app.add_middleware(guard)  # type: ignore[arg-type]
    app.add_middleware(hosts_checked)  # type: ignore[arg-type]
    app.add_middleware(Challenges, server=resource_server)  # type: ignore[arg-type]  # outermost
    return app
