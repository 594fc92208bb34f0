"""``seats``: walking the mesh from the top to one assignment's tools, showing only what the caller
may call (SPEC §3). Entries are uniform — ``{"address", "kind", ...}`` — so that every level pages
the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mesh.digests import digest
from navigator.access.grants import Permissions
from navigator.addresses import MESH, WILDCARD, Address
from navigator.catalog.machines import RETIRED, collapsed_status
from navigator.catalog.records import CatalogAssignment, CatalogTool, contracts_fingerprint
from navigator.catalog.view import Catalog
from navigator.errors import UnknownTool
from navigator.limits import LIMITS

__all__ = ["authorised_contracts", "reachable", "walk"]

NOTHING_HERE = (
    "Nothing you may call is at that address: seats with no address lists the machines and "
    "seats you may call."
)


@dataclass(slots=True)
class _Holding:
    """What one assignment offers the caller: its status and the tools it may call."""

    assignment: CatalogAssignment
    status: str
    tools: Collection[CatalogTool]

    @property
    def machine(self) -> str:
        return self.assignment.machine

    @property
    def role(self) -> str:
        return self.assignment.role

    @property
    def holder(self) -> str:
        """How agents address it: the machine, or ``mesh`` for a mesh seat."""
        return self.assignment.holder

    @property
    def address_role(self) -> str:
        """The role, or the seat's name for a mesh seat."""
        return self.assignment.address_role

    @property
    def module(self) -> str:
        return self.assignment.module

    @property
    def kind(self) -> str:
        return self.assignment.listed_kind


def _holdings(
    catalog: Catalog, permissions: Permissions, address: Address | None
) -> list[_Holding]:
    """The assignments the listing at ``address`` names that offer the caller a tool, each with
    those tools.

    Only those assignments are read, and their tools one by one only when a grant names some of
    them: a walk costs what it lists, not the whole mesh.
    """
    offers = _offers(catalog, permissions, catalog.assignments_at(address))
    return [_Holding(assignment, status, allowed) for assignment, status, allowed, _ in offers]


def _offers(
    catalog: Catalog, permissions: Permissions, assignments: Iterable[CatalogAssignment]
) -> Iterator[tuple[CatalogAssignment, str, Collection[CatalogTool], bool]]:
    """Each of ``assignments`` that offers the caller a live tool: with its status, the tools it
    offers, and whether the grants decide all of its tools alike (then it offers all of them,
    and they were not asked one by one)."""
    now = datetime.now(UTC)
    for assignment in assignments:
        every = permissions.decide_all(assignment.holder, assignment.address_role)
        if every is not None and not every.allowed:
            continue
        status = catalog.assignment_status(assignment, now)
        tools = catalog.assignment_tools(assignment)
        if status == RETIRED or not tools:
            continue
        allowed: Collection[CatalogTool] = tools.values()
        if every is None:
            allowed = [tool for tool in allowed if permissions.permits(tool.address)]
        if allowed:
            yield assignment, status, allowed, every is not None


def authorised_contracts(catalog: Catalog, permissions: Permissions) -> str:
    """SPEC §3 Cursors: the digest of the contracts of every live tool the caller may call.

    Read assignment by assignment, as the top of ``seats`` is: each that offers the caller a
    tool counts by how the listings show it — machine, role, kind (a node seat is a ``*/ROLE``
    entry at the top) and module — and by its tools: the fingerprint the catalogue keeps until
    they change when the grants open it whole, else those the caller may call of it. A change
    to tools the caller may not call leaves it as it was.
    """
    assignments = sorted(reachable(catalog, permissions), key=lambda a: (a.machine, a.role))
    return digest(
        [
            [
                assignment.machine,
                assignment.role,
                assignment.listed_kind,
                assignment.module,
                catalog.assignment_fingerprint(assignment)
                if whole
                else contracts_fingerprint(allowed),
            ]
            for assignment, _, allowed, whole in _offers(catalog, permissions, assignments)
        ]
    )


def reachable(catalog: Catalog, permissions: Permissions) -> Iterable[CatalogAssignment]:
    """The assignments that may offer the caller a tool: those of the holders its grants' reach
    names, when every pattern of it names one ("db1", "mesh/billing"); else every assignment."""
    reach = permissions.reach
    if reach is None or any(pattern.holder is None for pattern in reach):
        return catalog.assignments()
    found: list[CatalogAssignment] = []
    for holder in {pattern.holder for pattern in reach}:
        if holder == MESH:
            candidates = [a for a in catalog.assignments() if a.seat is not None]
        else:
            candidates = catalog.machine_assignments(str(holder))
        found += [a for a in candidates if a.holder == holder]
    return found


def walk(
    catalog: Catalog,
    permissions: Permissions,
    address: Address | None,
    *,
    holdings_of: Callable[[Catalog, Permissions, Address | None], list[_Holding]] = _holdings,
) -> dict[str, Any]:
    """The listing at ``address`` (the whole mesh when ``None``), before paging; ``holdings_of``
    finds what it lists (a test passes a slow reference to compare)."""
    holdings = holdings_of(catalog, permissions, address)
    if address is None:
        return {"address": None, "kind": "mesh", "entries": _top(catalog, holdings)}
    if address.holder == WILDCARD:
        return _node_seat(str(address.role), holdings)
    if address.role is None and address.holder == MESH:
        seats = [_seat_entry(h) for h in holdings]
        return {"address": MESH, "kind": "mesh seats", "entries": sorted(seats, key=_by_address)}
    if address.role is None:
        if not holdings:
            raise UnknownTool(NOTHING_HERE)
        entries = [
            {
                "address": f"{h.machine}/{h.role}",
                "kind": h.kind,
                "module": h.module,
                "status": h.status,
                "tools": len(h.tools),
            }
            for h in holdings
        ]
        return {
            "address": address.holder,
            "kind": "machine",
            **catalog.machine_status_fields(address.holder, datetime.now(UTC)),
            "entries": sorted(entries, key=_by_address),
        }
    if not holdings:
        raise UnknownTool(NOTHING_HERE)
    holding = holdings[0]
    tools = sorted(holding.tools, key=lambda t: t.address)
    return {
        "address": str(address),
        "kind": holding.kind,
        "module": holding.module,
        "status": holding.status,
        "entries": [
            {
                "address": t.address,
                "kind": "tool",
                "title": t.listed_title,
                "summary": t.summary,
                "status": holding.status,
            }
            for t in tools
        ],
    }


def _node_seat(role: str, holdings: list[_Holding]) -> dict[str, Any]:
    """A node seat across the machines that hold it, each tool as search gives it: the same
    contract on two or more machines is one ``*/ROLE/TOOL`` entry with the first 16 holders in
    holder order and their count (answering when any of them answers), a contract on one machine
    is its own address (SPEC §3)."""
    held = sorted(holdings, key=lambda h: h.holder)
    if not held:
        raise UnknownTool(NOTHING_HERE)
    offered: dict[tuple[str, str], list[tuple[_Holding, CatalogTool]]] = defaultdict(list)
    for holding in held:
        for tool in holding.tools:
            offered[(tool.name, tool.contract_digest)].append((holding, tool))
    entries = []
    for group in offered.values():
        holding, tool = group[0]
        entry: dict[str, Any] = {
            "address": tool.address,
            "kind": "tool",
            "title": tool.listed_title,
            "summary": tool.summary,
            "status": holding.status,
        }
        if len(group) > 1:
            shown = group[: LIMITS.collapsed_holders]
            entry |= {
                "address": f"{WILDCARD}/{role}/{tool.name}",
                "status": collapsed_status({h.status for h, _ in group}),
                "holders": [h.holder for h, _ in shown],
                "holderCount": len(group),
            }
        entries.append(entry)
    return {
        "address": f"{WILDCARD}/{role}",
        "kind": "node seat",
        "module": held[0].module,
        "holderCount": len(held),
        "entries": sorted(entries, key=lambda e: (e["address"].rsplit("/", 1)[1], e["address"])),
    }


def _by_address(entry: dict[str, Any]) -> str:
    return str(entry["address"])


def _seat_entry(holding: _Holding) -> dict[str, Any]:
    return {
        "address": f"{MESH}/{holding.address_role}",
        "kind": "seat",
        "module": holding.module,
        "status": holding.status,
        "tools": len(holding.tools),
    }


def _top(catalog: Catalog, holdings: list[_Holding]) -> list[dict[str, Any]]:
    seats = sorted((_seat_entry(h) for h in holdings if h.kind == "seat"), key=_by_address)
    per_machine: dict[str, int] = defaultdict(int)
    node_seats: dict[str, list[_Holding]] = defaultdict(list)
    for holding in holdings:
        if holding.kind == "seat":
            continue
        per_machine[holding.machine] += len(holding.tools)
        if holding.kind == "node seat":
            node_seats[holding.role].append(holding)
    now = datetime.now(UTC)
    machines = [
        {
            "address": name,
            "kind": "machine",
            **catalog.machine_status_fields(name, now),
            "tools": count,
        }
        for name, count in sorted(per_machine.items())
    ]
    roles = [
        {
            "address": f"*/{role}",
            "kind": "node seat",
            "module": min(held, key=lambda h: h.holder).module,  # as ``_node_seat`` names it
            "holderCount": len(held),
            "tools": max(len(h.tools) for h in held),
        }
        for role, held in sorted(node_seats.items())
    ]
    return seats + machines + roles
