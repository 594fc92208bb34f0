"""The HTTP API under ``/api/v1``: nodes enrol and heartbeat; operators change the mesh."""

from __future__ import annotations

from navigator.api.routes import api_routes

__all__ = ["api_routes"]
