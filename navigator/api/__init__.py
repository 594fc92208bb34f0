"""The HTTP API under ``/api/v1``: nodes enrol and heartbeat; operators change the mesh."""

from __future__ import annotations

from navigator.api.routes import API_PREFIX, api_routes, no_route

__all__ = ["API_PREFIX", "api_routes", "no_route"]
