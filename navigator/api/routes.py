"""The ``/api/v1`` route table."""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from navigator.api import API_PREFIX, access, admin, enrolment
from navigator.api.audit import AUDIT_PARAMETERS
from navigator.api.base import error_response, handler
from navigator.api.openapi import openapi_endpoint
from navigator.errors import MethodNotAllowed, UnknownPath

__all__ = ["QUERY_PARAMETERS", "ROUTES", "api_routes", "no_route"]

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
    ("/seats/{seat}", "DELETE", admin.remove_seat, None),
    ("/principals", "GET", admin.list_principals, None),
    ("/principals", "POST", admin.add_principal, access.PrincipalBody),
    ("/principals/{name}/rotate", "POST", admin.rotate_principal, access.RotateBody),
    ("/principals/{name}/quota", "PUT", admin.set_quota, access.QuotaBody),
    ("/principals/{name}", "DELETE", admin.revoke_principal, None),
    ("/grants", "GET", admin.list_grants, None),
    ("/grants", "POST", admin.add_grant, access.GrantBody),
    ("/grants/check", "GET", admin.check_grant, None),
    ("/grants/{grant}", "DELETE", admin.revoke_grant, None),
    ("/audit", "GET", admin.list_audit, None),
    ("/audit/verify", "GET", admin.verify_audit, None),
    ("/nodes/register", "POST", enrolment.register_node, enrolment.NodeRegistration),
    ("/nodes/{machine}/heartbeat", "POST", enrolment.heartbeat, None),
    (
        "/nodes/{machine}/assignments/{role}",
        "PUT",
        enrolment.update_assignment,
        enrolment.AssignmentUpdate,
    ),
]

#: The query parameters a route reads, by (path, method): (name, required).
QUERY_PARAMETERS = {
    ("/grants", "GET"): [("principal", False)],
    ("/grants/check", "GET"): [("principal", True), ("address", True)],
    ("/audit", "GET"): [(name, False) for name in AUDIT_PARAMETERS],
}


def api_routes() -> list[BaseRoute]:
    routes: list[BaseRoute] = [Route("/openapi.json", handler(openapi_endpoint), methods=["GET"])]
    routes += [
        Route(path, handler(endpoint), methods=[method]) for path, method, endpoint, _ in ROUTES
    ]
    return routes


async def no_route(request: Request, exc: Exception) -> Response:
    """The navigator's answer where no route matches: under ``/api/v1``, SPEC §9's body (a path
    the API does not serve, or a method a path does not take); elsewhere, Starlette's own."""
    assert isinstance(exc, HTTPException)
    if not request.url.path.startswith(API_PREFIX + "/"):
        if exc.status_code in (204, 304):
            return Response(status_code=exc.status_code, headers=exc.headers)
        return PlainTextResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)
    error = MethodNotAllowed() if exc.status_code == 405 else UnknownPath()
    response = error_response(error)
    response.headers.update(exc.headers or {})  # a 405's Allow
    return response
