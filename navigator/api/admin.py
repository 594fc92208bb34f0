"""The admin API (scope ``mesh:admin``): machines, assignments, seats, principals, grants, the mesh.

Every handler checks the scope itself (FastMCP does not guard custom routes) and speaks SPEC §9
errors. Bodies are pydantic models that refuse unknown fields; the same models describe the API
in its OpenAPI document (``navigator.api.openapi``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from starlette.requests import Request

from navigator.access.tokens import ADMIN_SCOPE
from navigator.addresses import is_machine_name, is_name, refused_name
from navigator.api.audit import audit_filter, audit_page, audit_verify
from navigator.api.base import read_body, require_scope
from navigator.catalog.overview import mesh_view
from navigator.catalog.registrar import AssignmentSpec
from navigator.catalog.upstream import pull_tools
from navigator.errors import InvalidArguments
from navigator.http.bodies import Body
from navigator.http.numbers import whole_number
from navigator.operations import mesh_ops, people
from navigator.operations.rules import (
    GRANT_ID_MOST,
    GrantBody,
    HttpUrl,
    ModuleName,
    PrincipalBody,
    QuotaBody,
    RotateBody,
    Scope,
)
from navigator.services import services
from registry import AccessStore, CatalogStore

__all__ = [
    "AssignmentRegistration",
    "MachineBody",
    "RetireBody",
    "SeatBody",
    "ToolMarkBody",
]

NAME = Field(min_length=1, max_length=63)


class MachineBody(Body):
    name: str = NAME
    advertise: HttpUrl | None = None


class AssignmentRegistration(Body):
    machine: str = NAME
    role: str = NAME
    module: ModuleName | None = None
    endpoint: HttpUrl | None = None
    tools: list[dict[str, Any]] | None = Field(default=None, max_length=4096)
    scopes: list[Scope] = Field(default_factory=list, max_length=64)
    seat: str | None = Field(default=None, max_length=63)
    grant_scope_holders: bool = Field(default=False, alias="grantScopeHolders")


class RetireBody(Body):
    address: str = Field(max_length=256)


class SeatBody(Body):
    machine: str = NAME
    role: str = NAME


class ToolMarkBody(Body):
    #: ``always`` is the older name of ``required``, kept for scripts that send it.
    confirmation: Literal["auto", "never", "required", "always", "elicit-only"]


# --- the mesh ----------------------------------------------------------------------------


async def get_mesh(request: Request) -> dict[str, Any]:
    """The whole mesh as the console draws it: seats, machines with status, assignments, counts."""
    require_scope(request, ADMIN_SCOPE)
    return mesh_view(services(request).catalog)


# --- machines ------------------------------------------------------------------------------


async def list_machines(request: Request) -> list[dict[str, Any]]:
    require_scope(request, ADMIN_SCOPE)
    return list(mesh_view(services(request).catalog)["machines"])


async def add_machine(request: Request) -> dict[str, Any]:
    """Add a machine, or bring back a retired one."""
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, MachineBody)
    _name(body.name, machine=True)
    found = services(request)
    if body.advertise is not None:
        found.connections.destinations.check_url(body.advertise, "/advertise")
    await found.registrar.add_machine(body.name, advertise_url=body.advertise)
    return {"machine": body.name, "status": found.catalog.machine_status(body.name)}


async def retire_machine(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    return {"retired": await mesh_ops.retire(services(request), request.path_params["machine"])}


# --- assignments ---------------------------------------------------------------------------


async def list_assignments(request: Request) -> list[dict[str, Any]]:
    require_scope(request, ADMIN_SCOPE)
    return [a for m in mesh_view(services(request).catalog)["machines"] for a in m["assignments"]]


async def register_assignment(request: Request) -> dict[str, Any]:
    """Register an assignment by endpoint (its tools/list is pulled) and/or by pushed tools."""
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, AssignmentRegistration)
    _name(body.machine, machine=True)
    if not is_name(body.role):  # before an endpoint is pulled for it
        raise refused_name("role")
    if body.tools is None and body.endpoint is None:
        raise InvalidArguments("Give an endpoint, tools, or both.")
    nodes = services(request).connections
    if body.endpoint is not None:
        nodes.destinations.check_url(body.endpoint, "/endpoint")
    tools = (
        body.tools
        if body.tools is not None
        else await pull_tools(str(body.endpoint), nodes.verify, nodes.destinations)
    )
    spec = AssignmentSpec(
        role=body.role,
        module=body.module or body.role,
        tools=tools,
        endpoint=body.endpoint,
        seat=body.seat,
        scopes=body.scopes,
    )
    result = await services(request).registrar.put_assignment(
        body.machine,
        spec,
        grant_scope_holders=body.grant_scope_holders,
        approves=body.tools is not None,  # an operator's own list: approved as registered
    )
    return {"assignment": f"{body.machine}/{body.role}", **result.as_json()}


async def refresh_assignment(request: Request) -> dict[str, Any]:
    """Pull an assignment's tools/list from its endpoint again."""
    require_scope(request, ADMIN_SCOPE)
    machine, role = request.path_params["machine"], request.path_params["role"]
    return await mesh_ops.refresh_assignment(services(request), machine, role)


async def retire_assignment(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    machine, role = request.path_params["machine"], request.path_params["role"]
    return {"retired": await mesh_ops.retire(services(request), machine, role)}


async def retire(request: Request) -> dict[str, Any]:
    """Retire by address: a machine (``db1``), an assignment (``db1/pg``) or a seat (``mesh/x``)."""
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, RetireBody)
    return {"retired": await mesh_ops.retire_address(services(request), body.address)}


async def mark_tool(request: Request) -> dict[str, Any]:
    """An operator's confirmation mark on one tool: auto, never, required or elicit-only (the
    API also takes ``always``, ``required``'s alias)."""
    require_scope(request, ADMIN_SCOPE)
    machine, role, tool = (request.path_params[k] for k in ("machine", "role", "tool"))
    body = await read_body(request, ToolMarkBody)
    address = f"{machine}/{role}/{tool}"
    return await mesh_ops.mark_tool(services(request), address, body.confirmation)


# --- seats ---------------------------------------------------------------------------------


async def list_seats(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    placed = await services(request).read(lambda session: CatalogStore(session).seats())
    return {
        name: None if where is None else {"machine": where[0], "role": where[1]}
        for name, where in placed.items()
    }


async def place_seat(request: Request) -> dict[str, Any]:
    """Place a mesh seat on a machine's assignment; its address ``mesh/SEAT`` stays the same."""
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, SeatBody)
    seat = request.path_params["seat"]
    return await mesh_ops.place_seat(services(request), seat, body.machine, body.role)


async def remove_seat(request: Request) -> dict[str, Any]:
    """Remove a mesh seat: its instance is retired, its address called by no one."""
    require_scope(request, ADMIN_SCOPE)
    return await mesh_ops.remove_seat(services(request), request.path_params["seat"])


# --- principals ----------------------------------------------------------------------------


async def list_principals(request: Request) -> list[dict[str, Any]]:
    require_scope(request, ADMIN_SCOPE)
    rows = await services(request).read(lambda session: AccessStore(session).principals())
    return [row.as_json() for row in rows]


async def add_principal(request: Request) -> dict[str, Any]:
    """Add a principal; the answer holds its token, the only time it is shown."""
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, PrincipalBody)
    return await people.add_principal(services(request), body)


async def set_quota(request: Request) -> dict[str, Any]:
    """Replace a principal's quota (ADR 0041): what the body leaves out or sets null is no limit.
    Every navigator holds the principal to it from its next request."""
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, QuotaBody)
    return await people.set_quota(services(request), request.path_params["name"], body)


async def rotate_principal(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, RotateBody)
    name = request.path_params["name"]
    return await people.rotate_principal(services(request), name, body.expires_days)


async def revoke_principal(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    return await people.revoke_principal(services(request), request.path_params["name"])


# --- grants --------------------------------------------------------------------------------


async def list_grants(request: Request) -> list[dict[str, Any]]:
    require_scope(request, ADMIN_SCOPE)
    principal = request.query_params.get("principal")
    rows = await services(request).read(lambda session: AccessStore(session).grants(principal))
    return [row.as_json() for row in rows]


async def add_grant(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    return await people.add_grant(services(request), await read_body(request, GrantBody))


async def revoke_grant(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    grant_id = whole_number(request.path_params["grant"], most=GRANT_ID_MOST)
    return await people.revoke_grant(services(request), grant_id)


async def check_grant(request: Request) -> dict[str, Any]:
    """Which row decides whether a principal may call an address, and why."""
    require_scope(request, ADMIN_SCOPE)
    principal = request.query_params.get("principal", "")
    address = request.query_params.get("address", "")
    return await people.check_grant(services(request), principal, address)


# --- the audit trail ----------------------------------------------------------------------


async def list_audit(request: Request) -> dict[str, Any]:
    """Audit events, newest first, filtered and paged (ADR 0039)."""
    require_scope(request, ADMIN_SCOPE)
    wanted = audit_filter(request.query_params)
    return await services(request).read(lambda session: audit_page(session, wanted))


async def verify_audit(request: Request) -> dict[str, Any]:
    """Every navigator's audit chain recomputed: whether a row was altered by hand."""
    require_scope(request, ADMIN_SCOPE)
    return await services(request).read(audit_verify)


def _name(name: str, *, machine: bool = False) -> None:
    if not (is_machine_name(name) if machine else is_name(name)):
        raise refused_name("machine" if machine else "role")
