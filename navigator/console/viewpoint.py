"""What one viewer sees of the mesh: read through the walker tools' own code (``Navigator.seats``,
``search`` and ``describe``), so the console shows exactly the tools, counts and contracts an agent
holding the same token would be shown — never more.

Operators (``mesh:admin``) also see the mesh's shape from the operators' view (``mesh_view``):
every machine with its status, retired parts included. Even then, every tool and every count
comes from the walker tools, so an operator without grants sees the machines but no tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from navigator.access.grants import Caller
from navigator.access.tokens import ADMIN_SCOPE
from navigator.addresses import MESH, WILDCARD, is_machine_name, parse_address
from navigator.catalog.machines import RETIRED
from navigator.catalog.overview import assignment_views, machine_view, mesh_view
from navigator.catalog.view import Catalog
from navigator.errors import (
    InvalidCursor,
    NavigatorError,
    ToolGrantsChanged,
    ToolNotGranted,
    UnknownPage,
    UnknownTool,
)
from navigator.limits import LIMITS
from navigator.walker.operations import Navigator

__all__ = [
    "TOOLS_PAGE",
    "AssignmentView",
    "Holding",
    "MachineView",
    "MeshView",
    "ToolView",
    "Viewpoint",
]

#: A console page's answer for a machine, or an assignment or seat, it cannot show: none is
#: there, or — to a viewer who is no operator — none of its tools is theirs to call.
NO_MACHINE = "No such machine: meshnav mesh lists the machines you may call tools on."
NO_ASSIGNMENT = "No such assignment or seat: meshnav mesh MACHINE lists those you may call."
#: Tools described (with their schemas) on one page of an assignment.
TOOLS_PAGE = 50
#: A listing whose catalogue or grants moved while it was paged is read again this many times.
LISTING_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Holding:
    """An assignment, node seat or mesh seat as the viewer sees it."""

    address: str
    kind: str
    module: str
    status: str
    #: The tools the viewer may call there; ``None`` where none can be (retired).
    tools: int | None
    machine: str | None = None


@dataclass(frozen=True, slots=True)
class MachineView:
    name: str
    status: str
    tools: int
    holdings: tuple[Holding, ...]
    advertise: str | None = None
    last_heartbeat: str | None = None
    #: Why the status is what it is, where the heartbeats explain it (``Catalog.heartbeats``).
    heartbeats: str | None = None
    #: A listing was longer than the console reads (``Limits.console_listing_pages``): not all
    #: is shown.
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class NodeSeatView:
    role: str
    module: str
    holder_count: int
    tools: int


@dataclass(frozen=True, slots=True)
class MeshView:
    seats: tuple[Holding, ...]
    machines: tuple[MachineView, ...]
    node_seats: tuple[NodeSeatView, ...]
    #: Drawn from the operators' view (every machine, retired ones included).
    operator: bool
    #: A listing was longer than the console reads (``Limits.console_listing_pages``): not all
    #: is shown.
    truncated: bool = False

    @property
    def tools(self) -> int:
        return sum(m.tools for m in self.machines) + sum(s.tools or 0 for s in self.seats)


@dataclass(frozen=True, slots=True)
class ToolView:
    address: str
    name: str
    title: str
    summary: str
    status: str
    #: ``describe``'s answer, or ``None`` with ``problem`` saying why it is missing.
    contract: dict[str, Any] | None
    problem: NavigatorError | None = None


@dataclass(frozen=True, slots=True)
class AssignmentView:
    holding: Holding
    tools: tuple[ToolView, ...]
    total: int
    offset: int
    #: The tools listing was longer than the console reads: ``total`` counts what was read.
    truncated: bool = False


class Viewpoint:
    """One signed-in viewer's reading of the mesh, for one request."""

    def __init__(
        self,
        navigator: Navigator,
        catalog: Catalog,
        caller: Caller,
        *,
        listing_pages: int = LIMITS.console_listing_pages,
    ) -> None:
        self.navigator = navigator
        self.catalog = catalog
        self.caller = caller
        self.listing_pages = listing_pages
        self.operator = ADMIN_SCOPE in caller.scopes

    async def _listing(self, address: str | None) -> dict[str, Any] | None:
        """The ``seats`` listing at ``address``, up to ``listing_pages`` pages (100 entries
        each), with ``truncated`` true when more remained; ``None`` when nothing there is the
        viewer's to call."""
        for attempt in range(LISTING_ATTEMPTS):
            try:
                first = await self.navigator.seats(self.caller, address, None)
                entries = list(first["entries"])
                cursor = first.get("nextCursor")
                for _ in range(self.listing_pages - 1):
                    if cursor is None:
                        break
                    page = await self.navigator.seats(self.caller, address, cursor)
                    entries.extend(page["entries"])
                    cursor = page.get("nextCursor")
                return {**first, "entries": entries, "truncated": cursor is not None}
            except UnknownTool:
                return None
            except (InvalidCursor, ToolGrantsChanged):
                if attempt == LISTING_ATTEMPTS - 1:
                    raise
        return None

    async def _counts(self, address: str | None) -> tuple[dict[str, dict[str, Any]], bool]:
        """The listing's entries by address, and whether the listing was cut."""
        listing = await self._listing(address)
        if listing is None:
            return {}, False
        return {e["address"]: e for e in listing["entries"]}, listing["truncated"]

    # --- the mesh --------------------------------------------------------------------------

    async def mesh(self) -> MeshView:
        top, truncated = await self._counts(None)
        machines = {a: e for a, e in top.items() if e["kind"] == "machine"}
        held: dict[str, dict[str, dict[str, Any]]] = {}
        for name in machines:
            held[name], cut = await self._counts(name)
            truncated = truncated or cut
        if not self.operator:
            return MeshView(
                seats=tuple(_holding(e) for e in top.values() if e["kind"] == "seat"),
                machines=tuple(
                    MachineView(
                        name=name,
                        status=entry["status"],
                        tools=entry["tools"],
                        holdings=tuple(_holding(e, name) for e in held[name].values()),
                        heartbeats=entry.get("heartbeats"),
                    )
                    for name, entry in machines.items()
                ),
                node_seats=tuple(_node_seat(e) for e in top.values() if e["kind"] == "node seat"),
                operator=False,
                truncated=truncated,
            )
        view = mesh_view(self.catalog)
        counts = {a: e for listing in held.values() for a, e in listing.items()}
        counts.update((a, e) for a, e in top.items() if e["kind"] == "seat")
        modules = {
            a["role"]: a["module"]
            for m in view["machines"]
            for a in m["assignments"]
            if a["kind"] == "node seat"
        }
        return MeshView(
            seats=tuple(_operator_holding(s, counts) for s in view["seats"]),
            machines=tuple(_operator_machine(m, top, counts) for m in view["machines"]),
            node_seats=tuple(
                NodeSeatView(
                    role=n["role"],
                    module=modules.get(n["role"], n["role"]),
                    holder_count=n["holderCount"],
                    tools=top.get(f"*/{n['role']}", {}).get("tools", 0),
                )
                for n in view["nodeSeats"]
            ),
            operator=True,
            truncated=truncated,
        )

    # --- a machine -------------------------------------------------------------------------

    async def machine(self, name: str) -> MachineView:
        if not is_machine_name(name):
            raise UnknownPage(NO_MACHINE)
        listing = await self._listing(name)
        if not self.operator:
            if listing is None:  # one with no tool of the viewer's is no machine of theirs
                raise UnknownPage(NO_MACHINE)
            entries = listing["entries"]
            return MachineView(
                name=name,
                status=listing["status"],
                heartbeats=listing.get("heartbeats"),
                tools=sum(e["tools"] for e in entries),
                holdings=tuple(_holding(e, name) for e in entries),
                truncated=listing["truncated"],
            )
        found = machine_view(self.catalog, name)
        if found is None:
            raise UnknownPage(NO_MACHINE)
        counts = {} if listing is None else {e["address"]: e for e in listing["entries"]}
        truncated = listing is not None and listing["truncated"]
        if any(a["kind"] == "seat" for a in found["assignments"]):
            seats, cut = await self._counts(MESH)
            counts.update(seats)
            truncated = truncated or cut
        top = {name: {"tools": sum(e["tools"] for e in counts.values() if e["kind"] != "seat")}}
        return _operator_machine(found, top, counts, truncated=truncated)

    # --- an assignment ---------------------------------------------------------------------

    async def assignment(
        self, holder: str, role: str, *, page: int, tool: str | None
    ) -> AssignmentView:
        if holder == WILDCARD:  # a node seat, ``*/ROLE``: its tools as the walk lists them
            address, parsed = f"{WILDCARD}/{role}", None
        else:
            parsed = parse_address(f"{holder}/{role}")
            address = str(parsed)
        listing = await self._listing(address)
        entries = [] if listing is None else list(listing["entries"])
        if self.operator and parsed is not None:
            known = assignment_views(self.catalog, parsed)
            if not known:
                raise UnknownPage(NO_ASSIGNMENT)
            known.sort(key=lambda a: a["status"] == RETIRED)
            holding = _operator_holding(known[0], {address: {"tools": len(entries)}})
        elif listing is None:
            raise UnknownPage(NO_ASSIGNMENT)
        else:
            holding = Holding(
                address=address,
                kind=listing["kind"],
                module=listing.get("module", ""),
                status=listing.get("status", ""),
                tools=len(entries),
            )
        names = [e["address"].rsplit("/", 1)[1] for e in entries]
        if tool is not None and tool in names:
            page = names.index(tool) // TOOLS_PAGE
        offset = max(0, min(page, max(0, len(entries) - 1) // TOOLS_PAGE)) * TOOLS_PAGE
        tools = [await self._tool(e) for e in entries[offset : offset + TOOLS_PAGE]]
        truncated = listing is not None and listing["truncated"]
        return AssignmentView(holding, tuple(tools), len(entries), offset, truncated)

    async def _tool(self, entry: dict[str, Any]) -> ToolView:
        contract: dict[str, Any] | None = None
        problem: NavigatorError | None = None
        try:
            contract = await self.navigator.describe(self.caller, entry["address"])
        except NavigatorError as error:
            problem = error
        return ToolView(
            address=entry["address"],
            name=entry["address"].rsplit("/", 1)[1],
            title=entry["title"],
            summary=entry["summary"],
            status=entry["status"],
            contract=contract,
            problem=problem,
        )

    def require_operator(self) -> None:
        if not self.operator:
            raise ToolNotGranted(f"This page needs the {ADMIN_SCOPE} scope.")


def _holding(entry: dict[str, Any], machine: str | None = None) -> Holding:
    return Holding(
        address=entry["address"],
        kind=entry["kind"],
        module=entry.get("module", ""),
        status=entry.get("status", ""),
        tools=entry.get("tools", 0),
        machine=machine,
    )


def _node_seat(entry: dict[str, Any]) -> NodeSeatView:
    return NodeSeatView(
        role=entry["address"].split("/", 1)[1],
        module=entry.get("module", ""),
        holder_count=entry.get("holderCount", 0),
        tools=entry.get("tools", 0),
    )


def _operator_holding(entry: dict[str, Any], counts: dict[str, dict[str, Any]]) -> Holding:
    retired = entry["status"] == RETIRED
    return Holding(
        address=entry["address"],
        kind=entry["kind"],
        module=entry["module"],
        status=entry["status"],
        tools=None if retired else counts.get(entry["address"], {}).get("tools", 0),
        machine=entry["machine"],
    )


def _operator_machine(
    machine: dict[str, Any],
    top: dict[str, dict[str, Any]],
    counts: dict[str, dict[str, Any]],
    *,
    truncated: bool = False,
) -> MachineView:
    return MachineView(
        name=machine["name"],
        status=machine["status"],
        tools=top.get(machine["name"], {}).get("tools", 0),
        holdings=tuple(_operator_holding(a, counts) for a in machine["assignments"]),
        advertise=machine["advertise"],
        last_heartbeat=machine["lastHeartbeat"],
        heartbeats=machine.get("heartbeats"),
        truncated=truncated,
    )
