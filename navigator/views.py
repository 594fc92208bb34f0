"""The mesh as operators see it — for ``GET /api/v1/mesh``, the console and ``meshnav mesh``.

An operator's view lists everything, retired parts included; what an agent may call is the walker
tools' business (``navigator.walk``), never this view's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from navigator.catalog import RETIRED, Catalog

__all__ = ["mesh_view"]


def mesh_view(catalog: Catalog) -> dict[str, Any]:
    now = datetime.now(UTC)
    machines: dict[str, dict[str, Any]] = {}
    for record in sorted(catalog.machines(), key=lambda m: m.name):
        machines[record.name] = {
            "name": record.name,
            "status": catalog.machine_status(record.name, now),
            "advertise": record.advertise_url,
            "lastHeartbeat": record.last_heartbeat_at.isoformat()
            if record.last_heartbeat_at
            else None,
            "assignments": [],
        }
    seats = []
    node_seats: dict[str, int] = {}
    for assignment in sorted(catalog.assignments(), key=lambda a: (a.machine, a.role)):
        machine = machines.get(assignment.machine)
        if machine is None:
            continue
        status = catalog.assignment_status(assignment, now)
        entry = {
            "address": f"{assignment.holder}/{assignment.address_role}",
            "machine": assignment.machine,
            "role": assignment.role,
            "module": assignment.module,
            "kind": "seat" if assignment.seat else assignment.kind.replace("_", " "),
            "status": status,
            "endpoint": assignment.endpoint,
            "tools": len(assignment.tools),
        }
        machine["assignments"].append(entry)
        if assignment.seat and not assignment.retired:
            seats.append(entry)
        if assignment.kind == "node_seat" and status != RETIRED:
            node_seats[assignment.role] = node_seats.get(assignment.role, 0) + 1
    return {
        "seats": seats,
        "machines": list(machines.values()),
        "nodeSeats": [{"role": role, "holderCount": n} for role, n in sorted(node_seats.items())],
        "tools": catalog.tool_count,
    }
