"""The navigator as one ASGI application: MCP at ``/mcp``, the API at ``/api/v1``, the console at
``/``, health and metrics — all behind one authentication middleware.

``/mcp`` itself, the path every agent's call takes, goes from the authentication middleware straight
to the MCP app; only the other paths walk Starlette's route table (``NavigatorApp``)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import fastmcp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from navigator.api import api_routes
from navigator.auth import AuthenticationMiddleware
from navigator.console import console_routes, is_console_path
from navigator.metrics import METRICS
from navigator.server import build_mcp, running
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import RegistryError

__all__ = ["NavigatorApp", "build_app"]

logger = logging.getLogger("meshnav.navigator")

PUBLIC_PATHS = ("/healthz", "/readyz", "/metrics")
MCP_PATH = "/mcp"


class NavigatorApp(Starlette):
    """Starlette, less its route table on the MCP path: a request to exactly ``/mcp`` is
    authenticated and handed to the MCP app directly (which has its own error handling), instead
    of passing the outer error and exception layers and matching every route before the mount
    that would reach the same app."""

    def __init__(self, *, mcp: ASGIApp, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mcp = mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MCP_PATH:
            scope["app"] = self
            await self.mcp(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def build_app(settings: NavigatorSettings, *, migrate_first: bool = True) -> NavigatorApp:
    # FastMCP's OpenTelemetry spans would record exception text (FastMCP's own errors echo the
    # arguments they reject) and carry the caller's trace context onward; meshnav reports counts
    # and timings at /metrics instead (SPEC §10, §12). Off, they also cost nothing per request.
    fastmcp.settings.telemetry_mode = "off"
    services = Services.create(settings)
    mcp_app = build_mcp(services).http_app(
        path="/mcp",
        host_origin_protection="auto",
        allowed_hosts=settings.allowed_hosts or None,
        allowed_origins=settings.allowed_origins or None,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with (
            running(services, migrate_first=migrate_first),
            mcp_app.router.lifespan_context(mcp_app),
        ):
            yield

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    async def readyz(request: Request) -> Response:
        try:
            await anyio.to_thread.run_sync(services.registry.ping)
        except RegistryError:
            return JSONResponse({"status": "registry unavailable"}, status_code=503)
        return JSONResponse({"status": "ready"})

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(METRICS.render(), media_type="text/plain; version=0.0.4")

    def guard(inner: ASGIApp) -> AuthenticationMiddleware:
        return AuthenticationMiddleware(
            inner,  # type: ignore[arg-type]
            authenticator=services.authenticator,
            public=lambda path: path in PUBLIC_PATHS or is_console_path(path),
            answers_in_band=lambda path: path == MCP_PATH or path.startswith(MCP_PATH + "/"),
        )

    app = NavigatorApp(
        mcp=guard(mcp_app),  # type: ignore[arg-type]
        routes=[
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics),
            Mount("/api/v1", routes=api_routes()),
            *console_routes(),
            Mount("/", app=mcp_app),
        ],
        lifespan=lifespan,
    )
    app.state.meshnav = services
    app.add_middleware(guard)  # type: ignore[arg-type]
    return app
