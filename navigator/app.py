"""The navigator as one ASGI application: MCP at ``/mcp``, the API at ``/api/v1``, the console at
``/``, health and metrics — all behind one authentication middleware."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from navigator.api import api_routes
from navigator.auth import AuthenticationMiddleware
from navigator.console import console_routes, is_console_path
from navigator.metrics import METRICS
from navigator.server import build_mcp, running
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import RegistryError

__all__ = ["build_app"]

logger = logging.getLogger("meshnav.navigator")

PUBLIC_PATHS = ("/healthz", "/readyz", "/metrics")


def build_app(settings: NavigatorSettings, *, migrate_first: bool = True) -> Starlette:
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

    app = Starlette(
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
    app.add_middleware(
        AuthenticationMiddleware,  # type: ignore[arg-type]
        authenticator=services.authenticator,
        public=lambda path: path in PUBLIC_PATHS or is_console_path(path),
        answers_in_band=lambda path: path == "/mcp" or path.startswith("/mcp/"),
    )
    return app
