"""Node enrolment, heartbeats and a clean stop (``mesh:node``; a node principal speaks only for
its machine). Each names the node instance it comes from: one serves a machine at a time
(``navigator.catalog.instances``, ADR 0050)."""

from __future__ import annotations

import base64
import time
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from starlette.requests import Request

from mesh.instances import INSTANCE_BYTES
from mesh.settings import MAX_HEARTBEAT_S, MIN_HEARTBEAT_S
from navigator.access.tokens import NODE_SCOPE
from navigator.api.base import read_body, require_scope
from navigator.catalog.instances import NodeInstances
from navigator.catalog.registrar import AssignmentSpec
from navigator.errors import InvalidArguments
from navigator.http.bodies import Body
from navigator.operations.rules import HttpUrl, ModuleName, Scope
from navigator.services import services

__all__ = ["heartbeat", "register_node", "stop_node", "update_assignment"]

#: A node instance's id (``mesh.instances``): random URL-safe text, no secret.
InstanceId = Annotated[
    str, StringConstraints(min_length=1, max_length=INSTANCE_BYTES, pattern=r"^[A-Za-z0-9_-]+$")
]


class AssignmentBody(Body):
    role: str = Field(max_length=63)
    module: ModuleName
    kind: Literal["assignment", "node_seat"] = "assignment"
    seat: str | None = Field(default=None, max_length=63)
    scopes: list[Scope] = Field(default_factory=list, max_length=64)
    tools: list[dict[str, Any]] = Field(max_length=4096)
    #: Why the node cannot list the tools (they are its last list, or none): ADR 0057.
    not_listing: str | None = Field(
        default=None, alias="notListing", max_length=200, pattern=r"^[ -~]*$"
    )


class NodeRegistration(Body):
    machine: str = Field(max_length=63)
    advertise: HttpUrl
    heartbeat_s: float = Field(alias="heartbeatS", ge=MIN_HEARTBEAT_S, le=MAX_HEARTBEAT_S)
    assignments: list[AssignmentBody] = Field(max_length=256)
    #: The registering node instance; none from a node that has no instance id.
    instance: InstanceId | None = None
    #: Take the machine over even from an instance that still answers (``--replace``).
    replace: bool = False


class InstanceBody(Body):
    instance: InstanceId


def _spec(body: AssignmentBody, advertise: str) -> AssignmentSpec:
    return AssignmentSpec(
        role=body.role,
        module=body.module,
        tools=body.tools,
        kind=body.kind,
        endpoint=f"{advertise.rstrip('/')}/mcp/{body.role}",
        seat=body.seat,
        scopes=body.scopes,
        not_listing=body.not_listing,
    )


async def register_node(request: Request) -> dict[str, Any]:
    """A node registers its machine and assignments; the answer carries its call-token key, and
    when (on the navigators' clock, the one call tokens are stamped by) it registered: the node
    refuses tokens signed before its first registration, which a node that has restarted cannot
    tell from tokens its previous run accepted (``mesh.calltokens``)."""
    registered_at = time.time()
    caller = require_scope(request, NODE_SCOPE)
    body = await read_body(request, NodeRegistration)
    services(request).connections.destinations.check_url(body.advertise, "/advertise")
    registrar = services(request).registrar
    await registrar.bind(caller.principal, body.machine)  # before anything of the machine's
    claim = await NodeInstances(registrar).claim(body.machine, body.instance, replace=body.replace)
    key, result = await registrar.register_node(
        body.machine,
        principal=caller.principal,
        advertise_url=body.advertise,
        heartbeat_s=body.heartbeat_s,
        assignments=[_spec(a, body.advertise) for a in body.assignments],
        claim=claim,
    )
    return {
        "machine": body.machine,
        "key": base64.b64encode(key).decode("ascii"),
        "registeredAt": registered_at,
        "heartbeatS": body.heartbeat_s,
        **result.as_json(),
    }


class AssignmentUpdate(Body):
    advertise: HttpUrl
    assignment: AssignmentBody
    instance: InstanceId | None = None


async def update_assignment(request: Request) -> dict[str, Any]:
    """A node's assignment changed its tool list: re-indexed at once."""
    caller = require_scope(request, NODE_SCOPE)
    machine = request.path_params["machine"]
    body = await read_body(request, AssignmentUpdate)
    if body.assignment.role != request.path_params["role"]:
        raise InvalidArguments(
            "The assignment's role is not the one the path names.",
            extra={"pointer": "/assignment/role"},
        )
    services(request).connections.destinations.check_url(body.advertise, "/advertise")
    registrar = services(request).registrar
    await registrar.bind(caller.principal, machine)
    result = await registrar.put_assignment(
        machine, _spec(body.assignment, body.advertise), by_node=True, instance=body.instance
    )
    return result.as_json()


async def heartbeat(request: Request) -> dict[str, Any]:
    """A node instance's heartbeat: ``replaced`` once another instance serves its machine."""
    caller = require_scope(request, NODE_SCOPE)
    machine = request.path_params["machine"]
    instance = None  # a heartbeat with no body: a node that has no instance id
    if request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers:
        instance = (await read_body(request, InstanceBody)).instance
    await services(request).registrar.heartbeat(machine, caller.principal, instance)
    return {"machine": machine, "status": "answering"}


async def stop_node(request: Request) -> dict[str, Any]:
    """A node instance stopping cleanly: its machine is not answering from now on."""
    caller = require_scope(request, NODE_SCOPE)
    machine = request.path_params["machine"]
    body = await read_body(request, InstanceBody)
    registrar = services(request).registrar
    stopped = await NodeInstances(registrar).stop(machine, caller.principal, body.instance)
    return {"machine": machine, "stopped": stopped}
