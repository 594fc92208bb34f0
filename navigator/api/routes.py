"""The ``/api/v1`` route table."""

from __future__ import annotations

from starlette.routing import BaseRoute, Route

from navigator.api import admin, nodes
from navigator.api.base import handler
from navigator.api.openapi import openapi_endpoint

__all__ = ["ROUTES", "api_routes"]

#: (path, method, endpoint, request body model or None) — the table the OpenAPI document describes.
ROUTES = [
    ("/mesh", "GET", admin.get_mesh, None),
    ("/machines", "GET", admin.list_machines, None),
    ("/machines", "POST", admin.add_machine, admin.MachineBody),
    ("/machines/{machine}/retire", "POST", admin.retire_machine, None),
    ("/assignments", "GET", admin.list_assignments, None),
    ("/assignments", "POST", admin.register_assignment, admin.AssignmentRegistration),
    ("/assignments/{machine}/{role}/refresh", "POST", admin.refresh_assignment, None),
    ("/assignments/{machine}/{role}/retire", "POST", admin.retire_assignment, None),
    ("/tools/{machine}/{role}/{tool}/confirmation", "PUT", admin.mark_tool, admin.ToolMarkBody),
    ("/retire", "POST", admin.retire, admin.RetireBody),
    ("/seats", "GET", admin.list_seats, None),
    ("/seats/{seat}", "PUT", admin.place_seat, admin.SeatBody),
    ("/principals", "GET", admin.list_principals, None),
    ("/principals", "POST", admin.add_principal, admin.PrincipalBody),
    ("/principals/{name}/rotate", "POST", admin.rotate_principal, admin.RotateBody),
    ("/principals/{name}", "DELETE", admin.revoke_principal, None),
    ("/grants", "GET", admin.list_grants, None),
    ("/grants", "POST", admin.add_grant, admin.GrantBody),
    ("/grants/check", "GET", admin.check_grant, None),
    ("/grants/{grant}", "DELETE", admin.revoke_grant, None),
    ("/nodes/register", "POST", nodes.register_node, nodes.NodeRegistration),
    ("/nodes/{machine}/heartbeat", "POST", nodes.heartbeat, None),
    ("/nodes/{machine}/assignments/{role}", "PUT", nodes.update_assignment, nodes.AssignmentUpdate),
]


def api_routes() -> list[BaseRoute]:
    routes: list[BaseRoute] = [Route("/openapi.json", openapi_endpoint, methods=["GET"])]
    routes += [
        Route(path, handler(endpoint), methods=[method]) for path, method, endpoint, _ in ROUTES
    ]
    return routes
