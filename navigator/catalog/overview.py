"""The mesh as operators see it — for ``GET /api/v1/mesh``, the console and ``meshnav mesh``.

An operator's view lists everything, retired parts included; what an agent may call is the walker
tools' business (``navigator.walker.seats``), never this view's. One machine, or the assignments
at one address, are built from what the catalogue keeps of them, not from the whole mesh.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from navigator.addresses import Address
from navigator.catalog.machines import RETIRED
from navigator.catalog.records import CatalogAssignment
from navigator.catalog.view import Catalog
from registry import MachineRecord

__all__ = ["assignment_views", "machine_view", "mesh_view"]


def mesh_view(catalog: Catalog) -> dict[str, Any]:
    now = datetime.now(UTC)
    machines = {
        record.name: _machine(catalog, record, now)
        for record in sorted(catalog.machines(), key=lambda m: m.name)
    }
    seats = []
    node_seats: dict[str, int] = {}
    for assignment in sorted(catalog.assignments(), key=_by_key):
        machine = machines.get(assignment.machine)
        if machine is None:
            continue
        entry = _assignment(catalog, assignment, now)
        machine["assignments"].append(entry)
        if assignment.seat and not assignment.retired:
            seats.append(entry)
        if assignment.kind == "node_seat" and entry["status"] != RETIRED:
            node_seats[assignment.role] = node_seats.get(assignment.role, 0) + 1
    return {
        "seats": seats,
        "machines": list(machines.values()),
        "nodeSeats": [{"role": role, "holderCount": n} for role, n in sorted(node_seats.items())],
        "tools": catalog.tool_count,
    }


def machine_view(catalog: Catalog, name: str) -> dict[str, Any] | None:
    """One machine as ``mesh_view`` lists it, or ``None`` when the catalogue has no such one."""
    record = catalog.machine(name)
    if record is None:
        return None
    now = datetime.now(UTC)
    machine = _machine(catalog, record, now)
    assignments = sorted(catalog.machine_assignments(name), key=_by_key)
    machine["assignments"] = [_assignment(catalog, a, now) for a in assignments]
    return machine


def assignment_views(catalog: Catalog, address: Address) -> list[dict[str, Any]]:
    """The assignments at ``HOLDER/ROLE`` as ``mesh_view`` lists them — those a walk of it reads
    (``Catalog.assignments_at``): a machine's assignment, or every assignment that holds (or held,
    until its machine is read again) the mesh seat ``ROLE``."""
    found = catalog.assignments_at(address)
    now = datetime.now(UTC)
    return [
        _assignment(catalog, a, now)
        for a in sorted(found, key=_by_key)
        if catalog.machine(a.machine) is not None
    ]


def _by_key(assignment: CatalogAssignment) -> tuple[str, str]:
    return (assignment.machine, assignment.role)


def _machine(catalog: Catalog, record: MachineRecord, now: datetime) -> dict[str, Any]:
    return {
        "name": record.name,
        **catalog.machine_status_fields(record.name, now),
        "advertise": record.advertise_url,
        "lastHeartbeat": record.last_heartbeat_at.isoformat() if record.last_heartbeat_at else None,
        "assignments": [],
    }


def _assignment(catalog: Catalog, assignment: CatalogAssignment, now: datetime) -> dict[str, Any]:
    return {
        "address": f"{assignment.holder}/{assignment.address_role}",
        "machine": assignment.machine,
        "role": assignment.role,
        "module": assignment.module,
        "kind": "seat" if assignment.seat else assignment.kind.replace("_", " "),
        "status": catalog.assignment_status(assignment, now),
        "endpoint": assignment.endpoint,
        "tools": len(assignment.tools),
        **({"notListing": assignment.not_listing} if assignment.not_listing else {}),
    }
