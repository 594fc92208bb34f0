"""The ``/api/v1`` route table."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from navigator.api import nodes
from navigator.api.base import handler

__all__ = ["api_routes"]


def api_routes() -> list[BaseRoute]:
    return [
        Route("/nodes/register", handler(nodes.register_node), methods=["POST"]),
        Route("/nodes/{machine}/heartbeat", handler(nodes.heartbeat), methods=["POST"]),
        Route(
            "/nodes/{machine}/assignments/{role}",
            handler(nodes.update_assignment),
            methods=["PUT"],
        ),
    ]
