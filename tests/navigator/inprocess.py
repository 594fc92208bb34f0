"""The navigator in the test's own process: its services running on a registry of the test's,
and FastMCP's in-memory client of its MCP server.

``navigator_at`` is an async context manager rather than a fixture: ``running`` holds a task
group, which must open and close in one task, and a fixture's teardown runs in another.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastmcp import Client

from navigator.access.grants import Caller
from navigator.limits import LIMITS, Limits
from navigator.mcp.server import build_mcp, running
from navigator.services import Services
from navigator.settings import NavigatorSettings
from navigator.walker.operations import Navigator
from registry import Registry, RegistryUnavailable

__all__ = ["LosingRegistry", "navigator_at", "walker_client"]


class LosingRegistry(Registry):
    """A registry whose next ``lost`` reads, of those ``losing`` picks by their parameters (every
    read unless set), find it gone: ``RegistryUnavailable``, as from a server lost for a while."""

    lost = 0

    def losing(self, params: Mapping[str, Any]) -> bool:
        return True

    def rows(self, statement: Any, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        if self.lost and self.losing(params):
            self.lost -= 1
            raise RegistryUnavailable()
        return super().rows(statement, params)


@asynccontextmanager
async def navigator_at(
    where: Path | str,
    *,
    limits: Limits = LIMITS,
    registry: Callable[[str], Registry] = Registry,
    navigator: Callable[..., Navigator] = Navigator,
    migrate_first: bool = True,
    **settings: Any,
) -> AsyncIterator[Services]:
    """A navigator running in this task, on the SQLite registry ``r.db`` in the folder ``where``
    or on the registry at the URL ``where``; ``settings`` are its other settings, ``limits``,
    ``registry`` (made from the URL) and ``navigator`` the collaborators ``Services.create``
    takes."""
    url = where if isinstance(where, str) else f"sqlite:///{where / 'r.db'}"
    chosen = NavigatorSettings(database_url=url, **settings)
    services = Services.create(chosen, limits=limits, registry=registry(url), navigator=navigator)
    async with running(services, migrate_first=migrate_first):
        yield services


def walker_client(
    services: Services, caller: Caller | None = None, *, token: str | None = None, **client: Any
) -> Client[Any]:
    """FastMCP's in-memory client (``client`` its options) of the navigator's MCP server, acting
    as ``caller``, or as the holder of ``token``."""
    return Client(build_mcp(services, fixed_caller=caller, token=token), **client)
