"""Machines, assignments, seats and tools: an operator's changes to the catalogue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from navigator.addresses import MESH, is_name, parse_address, refused_name
from navigator.catalog.registrar import AssignmentSpec, is_node_endpoint
from navigator.catalog.upstream import pull_tools
from navigator.errors import InvalidAddress, InvalidArguments, NotPullable
from registry import CatalogStore, NotFound

if TYPE_CHECKING:
    from navigator.services import Services

__all__ = [
    "CONFIRMATION_MARKS",
    "mark_tool",
    "place_seat",
    "refresh_assignment",
    "remove_seat",
    "retire",
    "retire_address",
]

Mark = Literal["auto", "never", "required", "always", "elicit-only"]
#: The marks an operator sets on a tool; the API also takes ``always``, ``required``'s old name.
CONFIRMATION_MARKS = ("auto", "never", "required", "elicit-only")
_STORED = {"required": "always"}


async def retire(found: Services, machine: str, role: str | None = None) -> str:
    """Retire a machine (``role`` None) or one of its assignments; the address retired."""
    await found.registrar.retire(machine, role)
    return machine if role is None else f"{machine}/{role}"


async def retire_address(found: Services, text: str) -> str:
    """Retire by address: a machine (``db1``), an assignment (``db1/pg``) or a seat (``mesh/x``)."""
    address = parse_address(text)
    if address.is_tool or (address.holder == MESH and address.role is None):
        raise InvalidAddress("Retire a machine, an assignment or a seat.")
    machine, role = address.holder, address.role
    if address.holder == MESH and role is not None:
        placed = (await found.read(lambda session: CatalogStore(session).seats())).get(role)
        if placed is None:
            raise NotFound("No such seat.")
        machine, role = placed
    await found.registrar.retire(machine, role)
    return text


async def refresh_assignment(found: Services, machine: str, role: str) -> dict[str, Any]:
    """Pull an assignment's tools/list from its endpoint again."""
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


async def place_seat(found: Services, seat: str, machine: str, role: str) -> dict[str, Any]:
    """Place a mesh seat on a machine's assignment, or move it there; ``mesh/SEAT`` stays."""
    await found.registrar.place_seat(seat, machine, role)
    return {"seat": f"{MESH}/{seat}", "machine": machine, "role": role}


async def remove_seat(found: Services, seat: str) -> dict[str, Any]:
    """Remove a mesh seat: its instance is retired and ``mesh/SEAT`` is called by no one; a node
    that serves it is refused until an operator places it again."""
    if not is_name(seat):
        raise refused_name("seat")
    await found.registrar.remove_seat(seat)
    return {"removed": f"{MESH}/{seat}"}


async def mark_tool(found: Services, address: str, mark: Mark) -> dict[str, Any]:
    """An operator's confirmation mark on one tool (``MACHINE/ROLE/TOOL``): ``auto`` clears it,
    ``never``, ``required`` (or ``always``) or ``elicit-only``."""
    parsed = parse_address(address)
    if not parsed.is_tool or parsed.holder == MESH:
        raise InvalidAddress("Mark a machine's tool: MACHINE/ROLE/TOOL.")
    if mark not in (*CONFIRMATION_MARKS, "always"):
        raise InvalidArguments("A mark is auto, never, required or elicit-only.")
    machine, role, tool = parsed.holder, str(parsed.role), str(parsed.tool)
    await found.registrar.mark_tool(machine, role, tool, _STORED.get(mark, mark))
    return {"tool": address, "confirmation": "required" if mark == "always" else mark}
