"""The MCP server itself — the four walker tools and ``mesh.tools.discover`` — and the navigator's
life (schema, catalogue, following the registry). Over stdio this is all that loads; the HTTP
application (``navigator.app``) adds the admin API, the console, health and metrics around it."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

import anyio
import fastmcp
from fastmcp import FastMCP

from mesh import tracing
from mesh.methods import UnknownMethods
from navigator.access.grants import Caller
from navigator.catalog.following import follow_registry
from navigator.errors import UnknownMethod, error_body
from navigator.mcp.discover import DiscoverExtension
from navigator.mcp.middleware import CallerMiddleware, CallerSource
from navigator.mcp.tools import WALKER_TOOLS, walker_tools
from navigator.metrics import METRICS
from navigator.nodes.connections import import_client
from navigator.services import Services
from registry import migrate

if TYPE_CHECKING:
    from navigator.mcp.stopping import Stopping

__all__ = ["build_mcp", "running"]

INSTRUCTIONS = (
    "meshnav reaches every tool of every machine by its address HOLDER/ROLE/TOOL. "
    "search for what you need (or walk with seats), describe the tool, then call it."
)
#: A method the navigator does not serve: named by nothing the client sent (``mesh.methods``).
NO_SUCH_METHOD = UnknownMethod()


def build_mcp(
    services: Services,
    fixed_caller: Caller | None = None,
    *,
    token: str | None = None,
    stopping: Stopping | None = None,
) -> FastMCP:
    """The MCP server: exactly the four walker tools.

    Over HTTP each request names its caller. Without HTTP (stdio), ``token`` is authenticated
    again for every request, so its grants are read then and its revocation seen then (SPEC §3);
    ``fixed_caller`` is for tests, its grants read on each request too (``Caller.grants`` None).
    ``stopping`` refuses new calls while an HTTP navigator drains.
    """
    source = _caller_source(services, fixed_caller, token)
    # FastMCP's OpenTelemetry spans would record exception text (FastMCP's own errors echo the
    # arguments they reject) and carry the caller's trace context onward; meshnav reports counts
    # and timings at /metrics instead (SPEC §10, §12). Off for both transports; off, they also
    # cost nothing per request.
    fastmcp.settings.telemetry_mode = "off"
    server = FastMCP(
        "meshnav",
        version=_version(),
        instructions=INSTRUCTIONS,
        mask_error_details=True,
        middleware=[
            UnknownMethods(error_body(NO_SUCH_METHOD)),
            CallerMiddleware(
                set(WALKER_TOOLS), source, stopping=stopping, audit=services.authenticator.audit
            ),
        ],
        tools=list(walker_tools(services.navigator)),
    )
    server.add_extension(DiscoverExtension(services.navigator, source))
    return server


def _caller_source(
    services: Services, fixed_caller: Caller | None, token: str | None
) -> CallerSource | None:
    if token is not None:
        verify = services.authenticator.verify

        async def authenticated() -> Caller:
            return await verify(token)

        return authenticated
    if fixed_caller is not None:
        caller = replace(fixed_caller, grants=None)  # read on each request, never a snapshot

        async def fixed() -> Caller:
            return caller

        return fixed
    return None


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
    tracing.configure("meshnav-navigator")  # on only with an OTLP endpoint set (ADR 0040)
    # FastMCP's client is only for calls to nodes, so it is left out of the imports above; it is
    # imported before serving, by the loading thread once every row is read, while the index
    # worker finishes (ADR 0017): the loop is idle then, awaiting the load. Never in a worker
    # thread beside the serving loop: the loop imports modules of its own on its first requests,
    # and two threads importing the same modules deadlock (Python detects it and fails one
    # import: measured, over stdio).
    await services.catalog.load(meanwhile=import_client)
    gc.enable()  # ``meshnav.serve`` starts without the collector: start-up makes no garbage
    METRICS.gauges["meshnav_machines"] = lambda: _machine_gauge(services)
    METRICS.gauges["meshnav_contracts_held"] = services.catalog.held_counts  # SPEC §14
    services.audit.listeners.append(lambda _: services.catalog.announce("activity"))
    services.catalog.on_status = lambda machine, status: services.audit.event(
        "", "machine.status", machine, status.replace(" ", "_")
    )
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(follow_registry, services)
        tasks.start_soon(services.audit.run)
        try:
            yield
        finally:
            tasks.cancel_scope.cancel()
            await services.audit.close()  # what was recorded is written before we stop
            await services.connections.close()
            services.registry.dispose()
            tracing.stop()  # what is buffered is exported: a clean stop loses no span


def _version() -> str:
    try:
        return version("meshnav")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0+unknown"
