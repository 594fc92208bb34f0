"""Serving the navigator: over HTTP with uvicorn, or over stdio as one principal."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

from meshnav.errors import CommandError

if TYPE_CHECKING:
    from navigator.settings import NavigatorSettings

__all__ = ["serve_navigator"]


async def serve_navigator(overrides: dict[str, Any], *, stdio: bool = False) -> None:
    # Importing the server and loading the catalogue make long-lived objects by the million and
    # free next to none: the collector would only walk them again and again. ``running`` turns it
    # back on once the catalogue is loaded (and frozen out of its walks).
    gc.disable()
    from navigator.settings import NavigatorSettings

    settings = NavigatorSettings(**overrides)
    if stdio:
        await _serve_stdio(settings)
        return
    import uvicorn

    from navigator.app import build_app

    app = build_app(settings)
    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, log_level="warning", lifespan="on"
    )
    await uvicorn.Server(config).serve()


async def _serve_stdio(settings: NavigatorSettings) -> None:
    """A stdio navigator acts as the principal whose token is in MESHNAV_TOKEN, resolved now:
    a missing or bad token stops it before it serves."""
    import anyio.to_thread

    from navigator.errors import NavigatorError
    from navigator.server import build_mcp, running
    from navigator.services import Services
    from registry import RegistryError, migrate

    token = settings.token.get_secret_value() if settings.token else None
    services = Services.create(settings)
    try:
        await anyio.to_thread.run_sync(migrate, settings.database_url)
        caller = await services.authenticator.verify(token)
    except NavigatorError:
        raise CommandError("MESHNAV_TOKEN is missing or not a valid principal's token") from None
    except RegistryError as error:
        raise CommandError(str(error)) from None
    server = build_mcp(services, fixed_caller=caller)
    async with running(services, migrate_first=False):
        await server.run_async(transport="stdio", show_banner=False)
