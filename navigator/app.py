"""The navigator as one ASGI application: MCP at ``/mcp``, the API at ``/api/v1``, the console at
``/``, health and metrics — all behind one authentication middleware."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import anyio
from fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from navigator.api import api_routes
from navigator.auth import AuthenticationMiddleware
from navigator.caller import CallerMiddleware
from navigator.console import console_routes, is_console_path
from navigator.discover import DiscoverExtension
from navigator.following import follow_registry
from navigator.grants import Caller
from navigator.metrics import METRICS
from navigator.services import Services
from navigator.settings import NavigatorSettings
from navigator.tools import WALKER_TOOLS, walker_tools
from registry import RegistryError, migrate

__all__ = ["build_app", "build_mcp", "running"]

logger = logging.getLogger("meshnav.navigator")

INSTRUCTIONS = (
    "meshnav reaches every tool of every machine by its address HOLDER/ROLE/TOOL. "
    "search for what you need (or walk with seats), describe the tool, then call it."
)
PUBLIC_PATHS = ("/healthz", "/readyz", "/metrics")


def build_mcp(services: Services, fixed_caller: Caller | None = None) -> FastMCP:
    """The MCP server: exactly the four walker tools."""
    server = FastMCP(
        "meshnav",
        instructions=INSTRUCTIONS,
        mask_error_details=True,
        middleware=[CallerMiddleware(set(WALKER_TOOLS), fixed_caller)],
        tools=list(walker_tools(services.navigator)),
    )
    server.add_extension(DiscoverExtension(services.navigator, fixed_caller))
    return server


def _machine_gauge(services: Services) -> dict[str, float]:
    counts: dict[str, float] = {"answering": 0, "not answering": 0, "retired": 0}
    for machine in services.catalog.machines():
        counts[services.catalog.machine_status(machine.name)] += 1
    return counts


@contextlib.asynccontextmanager
async def running(services: Services, *, migrate_first: bool = True) -> AsyncIterator[None]:
    """The navigator's life: schema up to date, catalogue loaded, the registry followed."""
    if migrate_first:
        await anyio.to_thread.run_sync(migrate, services.settings.database_url)
    await services.catalog.load()
    METRICS.gauges["meshnav_machines"] = lambda: _machine_gauge(services)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(follow_registry, services)
        try:
            yield
        finally:
            tasks.cancel_scope.cancel()
            await services.connections.close()
            services.registry.dispose()


def build_app(settings: NavigatorSettings, *, migrate_first: bool = True) -> Starlette:
    services = Services.create(settings)
    mcp_app = build_mcp(services).http_app(path="/mcp")

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
