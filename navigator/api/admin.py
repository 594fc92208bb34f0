"""The admin API (scope ``mesh:admin``): machines, assignments, seats, principals, grants, the mesh.

Every handler checks the scope itself (FastMCP does not guard custom routes) and speaks SPEC §9
errors. Bodies are pydantic models that refuse unknown fields; the same models describe the API
in its OpenAPI document (``navigator.api.openapi``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from starlette.requests import Request

from navigator.access.tokens import ADMIN_SCOPE, hash_token, mint_token
from navigator.addresses import (
    MESH,
    is_machine_name,
    is_name,
    parse_address,
    parse_pattern,
    refused_name,
)
from navigator.api.access import (
    GRANT_ID_MOST,
    GrantBody,
    HttpUrl,
    ModuleName,
    PrincipalBody,
    QuotaBody,
    RotateBody,
    Scope,
    checked_principal,
    expiry,
    grant_verdict,
    write_grant,
)
from navigator.api.audit import audit_filter, audit_page, audit_verify
from navigator.api.base import read_body, require_scope
from navigator.catalog.overview import mesh_view
from navigator.catalog.registrar import AssignmentSpec, is_node_endpoint
from navigator.catalog.upstream import pull_tools
from navigator.errors import InvalidAddress, InvalidArguments, NotPullable
from navigator.http.bodies import Body
from navigator.http.numbers import whole_number
from navigator.services import services
from registry import AccessStore, CatalogStore, NotFound

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
    name = request.path_params["machine"]
    await services(request).registrar.retire(name, None)
    return {"retired": name}


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
        body.machine, spec, grant_scope_holders=body.grant_scope_holders
    )
    return {"assignment": f"{body.machine}/{body.role}", **result.as_json()}


async def refresh_assignment(request: Request) -> dict[str, Any]:
    """Pull an assignment's tools/list from its endpoint again."""
    require_scope(request, ADMIN_SCOPE)
    machine, role = request.path_params["machine"], request.path_params["role"]
    found = services(request)
    record, advertised = await found.read(
        lambda session: (
            CatalogStore(session).assignment(machine, role),
            CatalogStore(session).machine(machine).advertise_url,
        )
    )
    if record.endpoint is None:
        raise InvalidArguments("This assignment has no endpoint to pull from.")
    if is_node_endpoint(record.endpoint, advertised):
        # a node lists its tools to no client (ADR 0004): a pull would read none, and remove all
        raise NotPullable()
    spec = AssignmentSpec(
        role=role,
        module=record.module,
        tools=await pull_tools(
            record.endpoint, found.connections.verify, found.connections.destinations
        ),
        kind=record.kind,
        endpoint=record.endpoint,
        seat=record.seat,
        scopes=record.scopes,
    )
    result = await found.registrar.put_assignment(machine, spec, action="refresh")
    return {"assignment": f"{machine}/{role}", **result.as_json()}


async def retire_assignment(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    machine, role = request.path_params["machine"], request.path_params["role"]
    await services(request).registrar.retire(machine, role)
    return {"retired": f"{machine}/{role}"}


async def retire(request: Request) -> dict[str, Any]:
    """Retire by address: a machine (``db1``), an assignment (``db1/pg``) or a seat (``mesh/x``)."""
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, RetireBody)
    address = parse_address(body.address)
    if address.is_tool or (address.holder == MESH and address.role is None):
        raise InvalidAddress("Retire a machine, an assignment or a seat.")
    found = services(request)
    machine, role = address.holder, address.role
    if address.holder == MESH and role is not None:
        placed = (await found.read(lambda session: CatalogStore(session).seats())).get(role)
        if placed is None:
            raise NotFound("No such seat.")
        machine, role = placed
    await found.registrar.retire(machine, role)
    return {"retired": body.address}


async def mark_tool(request: Request) -> dict[str, Any]:
    """An operator's confirmation mark on one tool: auto (the annotations decide), never,
    required (``always``, its older name) or elicit-only."""
    require_scope(request, ADMIN_SCOPE)
    machine, role, tool = (request.path_params[k] for k in ("machine", "role", "tool"))
    body = await read_body(request, ToolMarkBody)
    stored = "always" if body.confirmation == "required" else body.confirmation
    await services(request).registrar.mark_tool(machine, role, tool, stored)
    shown = "required" if stored == "always" else stored
    return {"tool": f"{machine}/{role}/{tool}", "confirmation": shown}


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
    await services(request).registrar.place_seat(seat, body.machine, body.role)
    return {"seat": f"{MESH}/{seat}", "machine": body.machine, "role": body.role}


async def remove_seat(request: Request) -> dict[str, Any]:
    """Remove a mesh seat; the assignment that held it is retired with it."""
    require_scope(request, ADMIN_SCOPE)
    seat = request.path_params["seat"]
    await services(request).registrar.remove_seat(seat)
    return {"removed": f"{MESH}/{seat}"}


# --- principals ----------------------------------------------------------------------------


async def list_principals(request: Request) -> list[dict[str, Any]]:
    require_scope(request, ADMIN_SCOPE)
    rows = await services(request).read(lambda session: AccessStore(session).principals())
    return [row.as_json() for row in rows]


async def add_principal(request: Request) -> dict[str, Any]:
    """Add a principal; the answer holds its token, the only time it is shown."""
    require_scope(request, ADMIN_SCOPE)
    body = checked_principal(await read_body(request, PrincipalBody))
    token = mint_token()
    record = await services(request).transact(
        lambda session: AccessStore(session).add_principal(
            body.name,
            scopes=body.scopes,
            token_hash=hash_token(token),
            machine=body.machine,
            expires_at=expiry(body.expires_days),
            quota=body.quota(),
        )
    )
    return {"principal": record.as_json(), "token": token}


async def set_quota(request: Request) -> dict[str, Any]:
    """Replace a principal's quota (ADR 0041): what the body leaves out or sets null is no limit.
    Every navigator holds the principal to it from its next request."""
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, QuotaBody)
    name = request.path_params["name"]
    record = await services(request).transact(
        lambda session: AccessStore(session).set_quota(name, body.quota())
    )
    return record.as_json()


async def rotate_principal(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, RotateBody)
    name = request.path_params["name"]
    token = mint_token()
    record = await services(request).transact(
        lambda session: AccessStore(session).rotate_principal(
            name, token_hash=hash_token(token), expires_at=expiry(body.expires_days)
        )
    )
    return {"principal": record.as_json(), "token": token}


async def revoke_principal(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    name = request.path_params["name"]
    await services(request).transact(lambda session: AccessStore(session).revoke_principal(name))
    return {"revoked": name}


# --- grants --------------------------------------------------------------------------------


async def list_grants(request: Request) -> list[dict[str, Any]]:
    require_scope(request, ADMIN_SCOPE)
    principal = request.query_params.get("principal")
    rows = await services(request).read(lambda session: AccessStore(session).grants(principal))
    return [row.as_json() for row in rows]


async def add_grant(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, GrantBody)
    parse_pattern(body.target)
    row = await services(request).transact(lambda session: write_grant(AccessStore(session), body))
    return row.as_json()


async def revoke_grant(request: Request) -> dict[str, Any]:
    require_scope(request, ADMIN_SCOPE)
    grant_id = whole_number(request.path_params["grant"], most=GRANT_ID_MOST)
    if grant_id is None:
        raise NotFound("No such grant.")
    await services(request).transact(lambda session: AccessStore(session).revoke_grant(grant_id))
    return {"revoked": grant_id}


async def check_grant(request: Request) -> dict[str, Any]:
    """Which row decides whether a principal may call an address, and why."""
    require_scope(request, ADMIN_SCOPE)
    principal = request.query_params.get("principal", "")
    address = request.query_params.get("address", "")
    return await services(request).read(
        lambda session: grant_verdict(AccessStore(session), principal, address)
    )


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
