"""One view of the catalogue as data: machines, assignments and live tools, and the search index
over them — and how an assignment's tools are placed and dropped as its rows change.

A view is replaced whole by a load and changed in place, an assignment at a time, by a catch-up;
an address belongs to the assignment that placed it last (a seat that moved takes it along).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType

from navigator.catalog.contracts import ContractReader
from navigator.catalog.machines import MachineState
from navigator.catalog.records import CatalogAssignment, CatalogTool, contracts_fingerprint
from navigator.search import SearchIndex, ToolDocument
from registry import CatalogRow, MachineRecord
from registry.contracts import APPROVED

__all__ = ["NO_TOOLS", "CatalogState"]

#: An assignment that places no tools (a retired one, or one not in the view) holds these.
NO_TOOLS: Mapping[str, CatalogTool] = MappingProxyType({})


@dataclass(slots=True)
class CatalogState:
    """One view of the catalogue: machines, assignments and live tools, and the index over them."""

    machines: dict[str, MachineState] = field(default_factory=dict)
    assignments: dict[tuple[str, str], CatalogAssignment] = field(default_factory=dict)
    #: The same assignments by machine, then role: a machine's are read without the others.
    by_machine: dict[str, dict[str, CatalogAssignment]] = field(default_factory=dict)
    tools: dict[str, CatalogTool] = field(default_factory=dict)
    #: The same tools by the assignment that placed them ((machine, role)): a walk reads one
    #: assignment's tools without looking at every tool of the mesh.
    placed: dict[tuple[str, str], dict[str, CatalogTool]] = field(default_factory=dict)
    #: ``contracts_fingerprint`` of each assignment's placed tools, made when first asked and
    #: dropped whenever they change: cursors bind the caller's share of them (SPEC §3).
    fingerprints: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Tools whose contract is not approved (SPEC §14), by address: their state ("held" or
    #: "rejected"); and their addresses by assignment. Not placed: nothing lists, counts or
    #: finds them.
    held: dict[str, str] = field(default_factory=dict)
    held_by: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    index: SearchIndex = field(default_factory=SearchIndex)

    def put_machine(self, record: MachineRecord) -> None:
        previous = self.machines.get(record.name)
        machine = MachineState(record, record.last_heartbeat_at)
        machine.announced = (
            previous.announced if previous else (machine.status(datetime.now(UTC)), None)
        )
        self.machines[record.name] = machine

    def put_assignment(
        self, assignment: CatalogAssignment, rows: list[CatalogRow], contracts: ContractReader
    ) -> list[ToolDocument]:
        """Place an assignment and its live tools; return their documents for the caller to
        index (a whole load indexes many assignments' documents at once)."""
        key = (assignment.machine, assignment.role)
        previous = self.assignments.get(key)
        if previous == assignment and self._placed_as(key, rows):
            # read again with its machine (a change log entry names a machine, not an
            # assignment): nothing of it changed, and its tools stay placed and indexed
            return []
        self.assignments[key] = assignment
        self.by_machine.setdefault(assignment.machine, {})[assignment.role] = assignment
        self._unhold(key)
        documents: list[ToolDocument] = []
        placed: set[str] = set()
        if not assignment.retired:  # or its machine is (the catalogue rows say so)
            documents = self._place_tools(assignment, rows, contracts, placed)
        if previous is not None:
            # only the tools that left: those still here stay indexed, and an unchanged
            # document is not indexed again (removing costs each term's postings)
            self._drop_tools(previous, key, keep=placed)
        return documents

    def fingerprint_every_assignment(self) -> None:
        """Make every placed assignment's ``contracts_fingerprint`` now (a whole load's)."""
        self.fingerprints = {
            key: contracts_fingerprint(tools.values()) for key, tools in self.placed.items()
        }

    def _placed_as(self, key: tuple[str, str], rows: list[CatalogRow]) -> bool:
        """Whether the tools placed for the assignment ``key`` are ``rows``' (a retired one's
        none), name by name with the same contract and confirmation mark."""
        placed = self.placed.get(key, NO_TOOLS)
        if self.assignments[key].retired:
            return not placed
        if key in self.held_by or any(row.contract_state not in (None, APPROVED) for row in rows):
            return False
        if len(placed) != len(rows):
            return False
        held = {tool.name: (tool.contract.digest, tool.confirmation) for tool in placed.values()}
        return all(
            held.get(str(row.tool)) == (str(row.contract_digest), str(row.confirmation))
            for row in rows
        )

    def _place_tools(
        self,
        assignment: CatalogAssignment,
        rows: list[CatalogRow],
        contracts: ContractReader,
        placed: set[str],
    ) -> list[ToolDocument]:
        """Place the assignment's live tools, adding their addresses to ``placed``."""
        holder, role = assignment.holder, assignment.address_role
        key = (assignment.machine, assignment.role)
        documents = []
        for row in rows:
            name = str(row.tool)
            if row.contract_state not in (None, APPROVED):
                address = f"{holder}/{role}/{name}"
                self.held[address] = str(row.contract_state)
                self.held_by.setdefault(key, []).append(address)
                continue
            contract, document = contracts.get(row, holder, role)
            address = document.address if document.name == name else f"{holder}/{role}/{name}"
            other = self.tools.get(address)
            if other is not None and (other.machine, other.endpoint_role) != key:
                self._unplace(other)  # a seat that moved: the address is this assignment's now
            tool = self.tools[address] = CatalogTool(
                address,
                holder,
                role,
                name,
                assignment.machine,
                assignment.role,
                assignment.endpoint,
                contract,
                str(row.confirmation),
            )
            self.placed.setdefault(key, {})[address] = tool
            placed.add(address)
            documents.append(document)
        self.fingerprints.pop(key, None)
        return documents

    def _unplace(self, tool: CatalogTool) -> None:
        key = (tool.machine, tool.endpoint_role)
        self.fingerprints.pop(key, None)
        tools = self.placed.get(key)
        if tools is not None:
            tools.pop(tool.address, None)
            if not tools:
                del self.placed[key]

    def _unhold(self, key: tuple[str, str]) -> None:
        """Forget the held tools of the assignment ``key`` (placed again, or gone)."""
        for address in self.held_by.pop(key, ()):
            self.held.pop(address, None)

    def drop_assignment(self, key: tuple[str, str]) -> None:
        self._unhold(key)
        old = self.assignments.pop(key, None)
        roles = self.by_machine.get(key[0], {})
        roles.pop(key[1], None)
        if not roles:
            self.by_machine.pop(key[0], None)
        if old is not None:
            self._drop_tools(old, key, keep=set())

    def _drop_tools(self, old: CatalogAssignment, key: tuple[str, str], keep: set[str]) -> None:
        """Remove the tools ``old`` placed that are not in ``keep`` (and that no other assignment
        has placed since)."""
        gone = []
        for name in old.tools:
            address = f"{old.holder}/{old.address_role}/{name}"
            current = self.tools.get(address)
            if (
                address not in keep
                and current is not None
                and (current.machine, current.endpoint_role) == key
            ):
                self._unplace(self.tools.pop(address))
                gone.append(address)
        self.index.remove(gone)
