"""The navigator's long-lived parts, made once at start and reached by every handler."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from navigator.auth import Authenticator
from navigator.catalog import Catalog
from navigator.nodes import NodeConnections
from navigator.registrar import Registrar
from navigator.service import Navigator
from navigator.settings import NavigatorSettings
from registry import Registry

__all__ = ["Services", "services"]


@dataclass(slots=True)
class Services:
    settings: NavigatorSettings
    registry: Registry
    catalog: Catalog
    connections: NodeConnections
    navigator: Navigator
    registrar: Registrar
    authenticator: Authenticator

    @classmethod
    def create(cls, settings: NavigatorSettings) -> Services:
        registry = Registry(settings.database_url)
        catalog = Catalog(registry)
        connections = NodeConnections()
        return cls(
            settings=settings,
            registry=registry,
            catalog=catalog,
            connections=connections,
            navigator=Navigator(
                registry,
                catalog,
                connections,
                deadline_s=settings.call_deadline_s,
                cursor_ttl_s=settings.cursor_ttl_s,
            ),
            registrar=Registrar(registry, catalog, connections),
            authenticator=Authenticator(registry),
        )


def services(request: Request) -> Services:
    found: Services = request.app.state.meshnav
    return found
