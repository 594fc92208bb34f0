"""The in-memory catalogue: every live tool by address, machine status, the search index.

Loaded whole at start, then kept current piece by piece — an assignment or machine at a time — when
this navigator changes the registry or another navigator says it did. Nothing here decides who may
call what: that is read from the registry on every request (``navigator.grants``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio.to_thread

from navigator.errors import UnknownTool
from navigator.limits import LIMITS
from navigator.search import SearchIndex, document_from_tool
from registry import AssignmentRecord, CatalogStore, MachineRecord, NotFound, Registry

__all__ = ["ANSWERING", "NOT_ANSWERING", "RETIRED", "Catalog", "CatalogEvent", "CatalogTool"]

#: Log entries read at once when catching up; further behind than this, reload everything.
CATCH_UP_PAGE = 1000

ANSWERING = "answering"
NOT_ANSWERING = "not answering"
RETIRED = "retired"


@dataclass(frozen=True, slots=True)
class CatalogTool:
    """One live tool: how agents address it, and where it actually runs."""

    address: str
    holder: str
    role: str
    name: str
    machine: str
    endpoint_role: str
    endpoint: str | None
    definition: dict[str, Any]
    contract_digest: str
    confirmation: str

    @property
    def title(self) -> str:
        annotations = self.definition.get("annotations") or {}
        return str(self.definition.get("title") or annotations.get("title") or self.name)

    @property
    def description(self) -> str:
        return str(self.definition.get("description") or "")

    @property
    def summary(self) -> str:
        """The first sentence or line of the description, at most 200 characters."""
        text = self.description.strip().split("\n", 1)[0]
        head, dot, _ = text.partition(". ")
        text = head + "." if dot else text
        return text if len(text) <= 200 else text[:199] + "…"

    @property
    def input_schema(self) -> Any:
        return self.definition.get("inputSchema", {"type": "object"})


@dataclass(frozen=True, slots=True)
class CatalogEvent:
    """What changed, for live views: ``kind`` is machine or status; ``name`` the machine."""

    kind: str
    name: str


@dataclass(slots=True)
class _Machine:
    record: MachineRecord
    heartbeat_at: datetime | None
    #: The status last announced to live views; a change from it is an event.
    announced: str = ""

    def status(self, now: datetime) -> str:
        if self.record.retired_at is not None:
            return RETIRED
        if self.heartbeat_at is None:
            # Registered by an operator (an HTTP MCP server by URL): answering until a call fails.
            return ANSWERING if self.record.advertise_url is None else NOT_ANSWERING
        limit = timedelta(seconds=self.record.heartbeat_s * LIMITS.missed_heartbeats)
        return ANSWERING if now - self.heartbeat_at <= limit else NOT_ANSWERING


@dataclass(slots=True)
class _State:
    machines: dict[str, _Machine] = field(default_factory=dict)
    assignments: dict[tuple[str, str], AssignmentRecord] = field(default_factory=dict)
    tools: dict[str, CatalogTool] = field(default_factory=dict)


class Catalog:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.index = SearchIndex()
        self._state = _State()
        self._listeners: set[asyncio.Queue[CatalogEvent]] = set()
        #: The registry's catalogue revision this view reflects (cursors bind it).
        self.revision = 0
        #: Each machine's call-token key (persisted in the registry so every navigator can sign).
        self.node_keys: dict[str, bytes] = {}

    # --- reading ---------------------------------------------------------------------------

    def tool(self, address: str) -> CatalogTool:
        tool = self._state.tools.get(address)
        if tool is None or self.machine_status(tool.machine) == RETIRED:
            raise UnknownTool()
        return tool

    def tools(self) -> Iterator[CatalogTool]:
        return iter(self._state.tools.values())

    def machine_status(self, machine: str, now: datetime | None = None) -> str:
        state = self._state.machines.get(machine)
        if state is None:
            return NOT_ANSWERING
        return state.status(now or datetime.now(UTC))

    def status(self, tool: CatalogTool) -> str:
        if tool.endpoint is None:
            return NOT_ANSWERING
        return self.machine_status(tool.machine)

    def machines(self) -> list[MachineRecord]:
        return [m.record for m in self._state.machines.values()]

    def assignments(self) -> list[AssignmentRecord]:
        return list(self._state.assignments.values())

    # --- loading ---------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the whole catalogue and (re)build the view."""

        def read() -> tuple[int, list[MachineRecord], list[AssignmentRecord], dict[str, bytes]]:
            with self.registry.transaction() as session:
                store = CatalogStore(session)
                return (
                    store.last_change(),
                    store.machines(),
                    store.assignments(),
                    store.node_keys(),
                )

        revision, machines, assignments, keys = await anyio.to_thread.run_sync(read)
        self.node_keys = keys
        self._state = _State()
        self.index = SearchIndex()
        for machine in machines:
            self._put_machine(machine)
        for assignment in assignments:
            self._put_assignment(assignment)
        self.revision = revision

    async def catch_up(self) -> int:
        """Apply every change logged since this view was made, machine by machine.

        Returns how many changes were applied. Far behind (more than a page of the log), it loads
        the whole catalogue again instead.
        """

        def read() -> list[tuple[int, str]]:
            with self.registry.transaction() as session:
                return CatalogStore(session).changes_since(self.revision, limit=CATCH_UP_PAGE)

        changes = await anyio.to_thread.run_sync(read)
        if not changes:
            return 0
        if len(changes) >= CATCH_UP_PAGE:
            await self.load()
            return len(changes)
        for machine in dict.fromkeys(name for _, name in changes):
            await self._reload_machine(machine)
        self.revision = max(self.revision, changes[-1][0])
        return len(changes)

    async def _reload_machine(self, name: str) -> None:
        """Re-read one machine and its assignments."""

        def read() -> tuple[MachineRecord | None, list[AssignmentRecord], bytes | None]:
            with self.registry.transaction() as session:
                store = CatalogStore(session)
                try:
                    machine = store.machine(name)
                except NotFound:
                    return None, [], None
                return machine, store.assignments(machine=name), store.node_key(name)

        machine, assignments, key = await anyio.to_thread.run_sync(read)
        if key is not None:
            self.node_keys[name] = key
        if machine is not None:
            self._put_machine(machine)
        stale = {key for key in self._state.assignments if key[0] == name}
        for assignment in assignments:
            stale.discard((assignment.machine, assignment.role))
            self._put_assignment(assignment)
        for gone in stale:
            self._drop_assignment(gone)
        self._emit(CatalogEvent("machine", name))

    async def refresh_heartbeats(self) -> list[str]:
        """Re-read every machine's heartbeat and announce the machines whose status moved since
        it was last announced — including those that went silent, which nothing else reports."""

        def read() -> list[MachineRecord]:
            with self.registry.transaction() as session:
                return CatalogStore(session).machines()

        records = await anyio.to_thread.run_sync(read)
        for record in records:
            state = self._state.machines.get(record.name)
            if state is None:
                self._put_machine(record)
            else:
                state.record = record
                state.heartbeat_at = record.last_heartbeat_at
        return self._announce_status(datetime.now(UTC))

    def note_heartbeat(self, name: str, at: datetime) -> None:
        state = self._state.machines.get(name)
        if state is not None:
            state.heartbeat_at = at
            self._announce_status(at, only=name)

    def _announce_status(self, now: datetime, only: str | None = None) -> list[str]:
        changed = []
        for name, state in self._state.machines.items():
            if only is not None and name != only:
                continue
            status = state.status(now)
            if status != state.announced:
                state.announced = status
                changed.append(name)
                self._emit(CatalogEvent("status", name))
        return changed

    def _put_machine(self, record: MachineRecord) -> None:
        previous = self._state.machines.get(record.name)
        machine = _Machine(record, record.last_heartbeat_at)
        machine.announced = previous.announced if previous else machine.status(datetime.now(UTC))
        self._state.machines[record.name] = machine

    def _put_assignment(self, assignment: AssignmentRecord) -> None:
        key = (assignment.machine, assignment.role)
        self._drop_assignment(key)
        self._state.assignments[key] = assignment
        if assignment.retired:
            return
        holder, role = assignment.holder, assignment.address_role
        documents = []
        for record in assignment.tools:
            tool = CatalogTool(
                address=f"{holder}/{role}/{record.name}",
                holder=holder,
                role=role,
                name=record.name,
                machine=assignment.machine,
                endpoint_role=assignment.role,
                endpoint=assignment.endpoint,
                definition=record.definition,
                contract_digest=record.contract_digest,
                confirmation=record.confirmation,
            )
            self._state.tools[tool.address] = tool
            documents.append(
                document_from_tool(holder, role, record.definition, record.contract_digest)
            )
        self.index.upsert(documents)

    def _drop_assignment(self, key: tuple[str, str]) -> None:
        old = self._state.assignments.pop(key, None)
        if old is None:
            return
        gone = []
        for tool in old.tools:
            address = f"{old.holder}/{old.address_role}/{tool.name}"
            current = self._state.tools.get(address)
            if current is not None and (current.machine, current.endpoint_role) == key:
                del self._state.tools[address]
                gone.append(address)
        self.index.remove(gone)

    # --- live views ------------------------------------------------------------------------

    def subscribe(self) -> asyncio.Queue[CatalogEvent]:
        queue: asyncio.Queue[CatalogEvent] = asyncio.Queue(maxsize=256)
        self._listeners.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[CatalogEvent]) -> None:
        self._listeners.discard(queue)

    def _emit(self, event: CatalogEvent) -> None:
        for queue in list(self._listeners):
            if queue.full():
                continue
            queue.put_nowait(event)
