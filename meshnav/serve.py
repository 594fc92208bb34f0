"""Serving the navigator: over HTTP with uvicorn, or over stdio as one principal."""

from __future__ import annotations

import functools
import gc
import os
import socket
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mesh.settings import join_listen
from meshnav.errors import CommandError

if TYPE_CHECKING:
    from pydantic import ValidationError

    from mesh.errors import MeshError
    from navigator.app import NavigatorApp
    from navigator.services import Services
    from navigator.settings import NavigatorSettings

__all__ = ["listening_socket", "mesh_failure", "serve_navigator", "settings_error"]


def settings_error(error: ValidationError) -> CommandError:
    """A setting that does not parse, named with the rule it breaks, never with its value (it
    may be a token)."""
    first = error.errors()[0]
    name = ".".join(str(part) for part in first["loc"]) or "settings"
    return CommandError(f"{name}: {first['msg'].removeprefix('Value error, ')}")


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything else is done: a port in use stops the command
    in one line, before it has touched a registry or a token.

    Made as asyncio makes its own: TCP named as the protocol, which is what makes asyncio set
    ``TCP_NODELAY`` on each accepted connection (``socket.create_server`` leaves the protocol 0,
    and every small answer then waits ~40 ms for a delayed ACK).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, port))
        server.listen(2048)
    except OSError as error:
        server.close()
        reason = os.strerror(error.errno) if error.errno else "the address cannot be bound"
        raise CommandError(f"cannot listen on {join_listen(host, port)}: {reason}") from None
    return server


def mesh_failure(error: BaseException) -> MeshError | None:
    """The node's own failure (a module that cannot be built, a refused enrolment) inside what
    a task group raised, if that is what ended it."""
    from mesh.errors import MeshError

    if isinstance(error, MeshError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = mesh_failure(inner)
            if found is not None:
                return found
    return None


async def serve_navigator(
    overrides: dict[str, Any],
    *,
    stdio: bool = False,
    build: Callable[..., NavigatorApp] | None = None,
) -> None:
    """Serve a navigator with ``overrides`` of its settings; ``build`` makes its app
    (``navigator.app.build_app`` unless given)."""
    # Importing the server and loading the catalogue make long-lived objects by the million and
    # free next to none: the collector would only walk them again and again. ``running`` turns it
    # back on once the catalogue is loaded (and frozen out of its walks).
    gc.disable()
    from pydantic import ValidationError

    from navigator.settings import NavigatorSettings

    try:
        settings = NavigatorSettings(**overrides)
    except ValidationError as error:
        raise settings_error(error) from None
    if stdio:
        await _serve_stdio(settings)
        return
    import anyio
    import anyio.to_thread
    import uvicorn

    from mesh.errors import ServeFailed
    from mesh.lifecycle import Server, serve_until_stopped
    from navigator.app import build_app
    from registry import RegistryError, migrate

    with listening_socket(settings.host, settings.port) as server_socket:
        try:  # a navigator's first start makes its registry (ADR 0036), and says where
            before = await anyio.to_thread.run_sync(migrate, settings.database_url)
        except RegistryError as error:
            raise CommandError(str(error)) from None
        try:  # an audit export others may read, and that cannot be made private (ADR 0045)
            app = (build or build_app)(settings, migrate_first=False)
        except PermissionError as error:
            raise CommandError(str(error)) from None
        config = uvicorn.Config(  # log_config None: its records go to meshnav.logs's handler
            app,
            host=settings.host,
            port=settings.port,
            log_level="warning",
            log_config=None,
            lifespan="on",
        )
        url = f"http://{join_listen(settings.host, settings.port)}"

        async def serving() -> None:  # said once it serves: a silent start looked like a hang
            said = [f"MCP at {url}/mcp, the console at {url}/"]
            said += await registry_lines(app.state.meshnav, made=before is None)
            sys.stderr.write("".join(f"meshnav navigator: {line}\n" for line in said))
            sys.stderr.flush()
            await anyio.sleep_forever()

        try:
            server = Server(config, settings.connection_limits(), drain=app.stopping.drain)
            await serve_until_stopped(server, [server_socket], serving)
        except ServeFailed:
            raise CommandError(
                f"the navigator could not start on {url}; see the log above"
            ) from None


async def _serve_stdio(settings: NavigatorSettings) -> None:
    """A stdio navigator acts as the principal whose token is in MESHNAV_TOKEN: checked now, so
    that a missing or bad token stops it before it serves, and again on every request, so that
    the grants are read then and a revocation or a new deny holds at once (SPEC §3)."""
    import anyio.to_thread

    from navigator.errors import NavigatorError, Unauthenticated
    from navigator.mcp.server import build_mcp, running
    from navigator.services import Services
    from registry import RegistryError, migrate, shown_url

    token = settings.token.get_secret_value() if settings.token else None
    try:  # an existing registry only: one made here could hold no principal (ADR 0036)
        await anyio.to_thread.run_sync(
            functools.partial(migrate, settings.database_url, create=False)
        )
    except RegistryError as error:
        raise CommandError(str(error)) from None
    services = Services.create(settings)
    try:
        await services.authenticator.verify(token)
    except Unauthenticated:
        raise CommandError(await _refused_token(services)) from None
    except NavigatorError:
        raise CommandError(
            f"the registry at {shown_url(settings.database_url)} cannot be read"
        ) from None
    assert token is not None  # verified above
    server = build_mcp(services, token=token)
    async with running(services, migrate_first=False):
        await server.run_async(transport="stdio", show_banner=False)


async def _principal_count(services: Services) -> int | None:
    """How many principals the registry holds; ``None`` when it cannot be read."""
    from registry import AccessStore, RegistryError

    try:
        return await services.read(lambda session: AccessStore(session).principal_count())
    except RegistryError:
        return None


def _no_principals(services: Services) -> str:
    from registry import shown_url

    shown = shown_url(services.settings.database_url)
    return (
        f"the registry at {shown} holds no principals, so no token is accepted yet: "
        f"meshnav principal add NAME --scopes mesh:admin --database {shown} makes the first"
    )


async def registry_lines(services: Services, *, made: bool) -> list[str]:
    """What a navigator says of its registry once it serves: which it opened (an SQLite one by
    its absolute path, a PostgreSQL one without its password), and when it holds no principal
    — a navigator's first start made it, or nobody added one — that every token will be
    refused until one is added (ADR 0036)."""
    from registry import shown_url

    shown = shown_url(services.settings.database_url)
    lines = [f"made a new registry at {shown}" if made else f"the registry is {shown}"]
    if await _principal_count(services) == 0:
        lines.append(_no_principals(services))
    return lines


async def _refused_token(services: Services) -> str:
    """Why a stdio navigator's token was refused: a registry with no principal at all says so,
    where the token alone was blamed."""
    if await _principal_count(services) == 0:
        return _no_principals(services)
    from registry import shown_url

    shown = shown_url(services.settings.database_url)
    return f"MESHNAV_TOKEN is missing or not a valid principal's token in the registry at {shown}"
