"""The in-memory catalogue: every live tool by address, machine status, the search index.

Loaded whole at start, then kept current piece by piece — an assignment or machine at a time — when
this navigator changes the registry or another navigator says it did. Nothing here decides who may
call what: that is read from the registry on every request (``navigator.access.grants``).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import logging
import operator
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import anyio
import anyio.to_thread

from mesh.digests import digest
from navigator.catalog.registry_reads import Progress, long_read, off_loop_read, short_read
from navigator.catalog.registry_writes import RegistryWrites
from navigator.errors import UnknownTool
from navigator.limits import LIMITS
from navigator.search import SearchIndex, ToolDocument, document_from_tool
from navigator.search.documents import slot_init
from registry import (
    AssignmentPlace,
    CatalogRow,
    CatalogStore,
    MachineRecord,
    NotFound,
    Registry,
    RegistryError,
)
from registry.catalog import CHANGES_SINCE, MACHINE_RECORDS

__all__ = [
    "ANSWERING",
    "MISSED",
    "NOT_ANSWERING",
    "RETIRED",
    "UNRECORDED",
    "Catalog",
    "CatalogEvent",
    "CatalogTool",
    "contracts_fingerprint",
]

logger = logging.getLogger("meshnav.navigator.catalog")

#: Log entries read at once when catching up; further behind than this, reload everything.
CATCH_UP_PAGE = 1000

#: Dead entries are dropped from the shared contracts once they hold at least this many.
_MIN_PURGE = 1024

ANSWERING = "answering"
NOT_ANSWERING = "not answering"
RETIRED = "retired"

#: Why a machine's heartbeats say what they say (a view's ``heartbeats`` field, ADR 0031): none
#: came for three intervals, or the registry could not record those that came.
MISSED = "missed"
UNRECORDED = "unrecorded"


class Contract:
    """A tool's contract, held once per contract digest however many holders serve it.

    The definition stays the compact JSON the registry gave; ``definition`` decodes it when a
    caller needs all of it (describe, a call's first validation, ``schemas: true``). Its title,
    description and annotations are read from it the first time one is asked for: a load decodes
    each definition once, for its search document, and keeps none of it here.
    """

    __slots__ = ("__weakref__", "_head", "digest", "raw")

    def __init__(self, digest: str, raw: str) -> None:
        self.digest = digest
        self.raw = raw
        self._head: tuple[str, str, dict[str, Any] | None] | None = None

    def _read(self) -> tuple[str, str, dict[str, Any] | None]:
        head = self._head
        if head is None:
            head = self._head = _head_of(json.loads(self.raw))
        return head

    @property
    def title(self) -> str:
        return self._read()[0]

    @property
    def description(self) -> str:
        return self._read()[1]

    @property
    def annotations(self) -> dict[str, Any] | None:
        return self._read()[2]

    @property
    def definition(self) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(self.raw)
        return decoded

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Contract):
            return NotImplemented
        return (self.digest, self.raw) == (other.digest, other.raw)

    def __hash__(self) -> int:
        return hash((self.digest, self.raw))

    def __repr__(self) -> str:
        return f"Contract(digest={self.digest!r})"


def _head_of(definition: Mapping[str, Any]) -> tuple[str, str, dict[str, Any] | None]:
    """A definition's title, description and annotations (each as ``Contract`` reads it).
    Annotations that are not an object are none: the registrar refuses such a tool, but a
    registry may hold one from before, and its title was read from them as from an object."""
    annotations = definition.get("annotations")
    if not isinstance(annotations, dict):
        annotations = None
    return (
        str(definition.get("title") or (annotations or {}).get("title") or ""),
        str(definition.get("description") or ""),
        annotations,
    )


@slot_init  # as ``ToolDocument``: a load makes as many of these
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
    contract: Contract
    confirmation: str

    @property
    def contract_digest(self) -> str:
        return self.contract.digest

    @property
    def definition(self) -> dict[str, Any]:
        return self.contract.definition

    @property
    def annotations(self) -> dict[str, Any] | None:
        return self.contract.annotations

    @property
    def title(self) -> str:
        """The whole title, as ``describe`` gives it."""
        return self.contract.title or self.name

    @property
    def listed_title(self) -> str:
        """The title as a listing or a search result shows it: at most 200 characters, as the
        summary, so that an entry without a schema always fits in an answer (ADR 0022)."""
        return _clipped(self.title)

    @property
    def description(self) -> str:
        return self.contract.description

    @property
    def summary(self) -> str:
        """The first sentence or line of the description, at most 200 characters."""
        text = self.description.strip().split("\n", 1)[0]
        head, dot, _ = text.partition(". ")
        return _clipped(head + "." if dot else text)

    @property
    def input_schema(self) -> Any:
        return self.definition.get("inputSchema", {"type": "object"})


def contracts_fingerprint(tools: Iterable[CatalogTool]) -> str:
    """The digest (SPEC §5) of what ``tools`` are, whatever their order: each one's address,
    contract digest and confirmation mark."""
    return digest(sorted([t.address, t.contract.digest, t.confirmation] for t in tools))


def _clipped(text: str) -> str:
    """``text`` cut to ``LIMITS.listed_chars`` characters, an ellipsis marking the cut."""
    most = LIMITS.listed_chars
    return text if len(text) <= most else text[: most - 1] + "…"


_NO_TOOLS: Mapping[str, CatalogTool] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class CatalogAssignment(AssignmentPlace):
    """An assignment as the catalogue keeps it: its tools by name only (their contracts live on
    the ``CatalogTool``s)."""

    tools: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CatalogEvent:
    """What changed, for live views: ``kind`` is machine or status; ``name`` the machine."""

    kind: str
    name: str


@dataclass(slots=True)
class _Machine:
    record: MachineRecord
    heartbeat_at: datetime | None
    #: The status (and ``heartbeats``) last announced to live views; a change is an event.
    announced: tuple[str, str | None] = ("", None)

    def status(self, now: datetime) -> str:
        if self.record.retired_at is not None:
            return RETIRED
        if self.heartbeat_at is None:
            # Registered by an operator (an HTTP MCP server by URL): no heartbeat tells otherwise,
            # so answering; a call it does not answer is node_unavailable, and changes nothing here.
            return ANSWERING if self.record.advertise_url is None else NOT_ANSWERING
        return ANSWERING if now <= self.heartbeat_at + self.limit else NOT_ANSWERING

    def heartbeats(self, now: datetime, judged: datetime) -> str | None:
        """``Catalog.heartbeats``, with ``judged`` the moment its heartbeats are judged at."""
        if self.heartbeat_at is None or self.record.retired_at is not None:
            return None
        if self.status(judged) != ANSWERING:
            return MISSED
        return UNRECORDED if self.status(now) != ANSWERING else None

    @property
    def limit(self) -> timedelta:
        """How long after its last heartbeat a machine is still answering."""
        return timedelta(seconds=self.record.heartbeat_s * LIMITS.missed_heartbeats)


class _SharedContracts:
    """Contracts by digest, held weakly, so that every holder of a contract shares one object as
    long as one holds it.

    A ``weakref.WeakValueDictionary`` would do, at a few microseconds per contract a load adds (a
    third of a second at 100,000): this keeps plain weak references and drops the dead ones when
    it has doubled in size since it last did.
    """

    __slots__ = ("_purge_at", "_refs")

    def __init__(self) -> None:
        self._refs: dict[str, weakref.ref[Contract]] = {}
        self._purge_at = _MIN_PURGE

    def __len__(self) -> int:
        return sum(1 for ref in self._refs.values() if ref() is not None)

    def get(self, digest: str) -> Contract | None:
        ref = self._refs.get(digest)
        return None if ref is None else ref()

    def put(self, contract: Contract) -> None:
        self._refs[contract.digest] = weakref.ref(contract)
        if len(self._refs) >= self._purge_at:
            self._refs = {digest: ref for digest, ref in self._refs.items() if ref() is not None}
            self._purge_at = max(_MIN_PURGE, 2 * len(self._refs))


class _Contracts:
    """The contract for each row's digest — one object per digest, shared by every holder and
    kept (weakly) as long as a tool holds it — and, for one pass over rows, each digest's search
    document, so that a contract's JSON is decoded once per pass however many hold it."""

    __slots__ = ("_seen", "_shared")

    def __init__(self, shared: _SharedContracts) -> None:
        self._shared = shared
        self._seen: dict[str, tuple[Contract, ToolDocument]] = {}

    def get(self, row: CatalogRow, holder: str, role: str) -> tuple[Contract, ToolDocument]:
        digest = str(row.contract_digest)
        seen = self._seen.get(digest)
        if seen is None:
            raw = str(row.definition)
            contract = self._shared.get(digest)
            if contract is None:
                contract = Contract(digest, raw)
                self._shared.put(contract)
            document = document_from_tool(holder, role, json.loads(raw), digest)
            self._seen[digest] = (contract, document)
            return contract, document
        contract, document = seen
        # Another holder of a contract seen in this pass: its text, at this holder's address.
        name = document.name
        return contract, ToolDocument(
            f"{holder}/{role}/{name}",
            holder,
            role,
            name,
            document.title,
            document.description,
            document.parameters,
            digest,
        )


@dataclass(slots=True)
class _State:
    """One view of the catalogue: machines, assignments and live tools, and the index over them."""

    machines: dict[str, _Machine] = field(default_factory=dict)
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
    index: SearchIndex = field(default_factory=SearchIndex)

    def put_machine(self, record: MachineRecord) -> None:
        previous = self.machines.get(record.name)
        machine = _Machine(record, record.last_heartbeat_at)
        machine.announced = (
            previous.announced if previous else (machine.status(datetime.now(UTC)), None)
        )
        self.machines[record.name] = machine

    def put_assignment(
        self, assignment: CatalogAssignment, rows: list[CatalogRow], contracts: _Contracts
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
        placed = self.placed.get(key, _NO_TOOLS)
        if self.assignments[key].retired:
            return not placed
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
        contracts: _Contracts,
        placed: set[str],
    ) -> list[ToolDocument]:
        """Place the assignment's live tools, adding their addresses to ``placed``."""
        holder, role = assignment.holder, assignment.address_role
        key = (assignment.machine, assignment.role)
        documents = []
        for row in rows:
            contract, document = contracts.get(row, holder, role)
            name = str(row.tool)
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

    def drop_assignment(self, key: tuple[str, str]) -> None:
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


class Catalog:
    def __init__(self, registry: Registry, writes: RegistryWrites | None = None) -> None:
        self.registry = registry
        #: Whether the registry takes this navigator's writes: silence is judged only over the
        #: time it did (``navigator.catalog.registry_writes``).
        self.writes = writes or RegistryWrites()
        self._state = _State()
        self._listeners: set[asyncio.Queue[CatalogEvent]] = set()
        #: Told (machine, status) when a machine stops or starts answering (the audit trail).
        self.on_status: Callable[[str, str], None] | None = None
        #: The registry's catalogue revision this view reflects.
        self.revision = 0
        #: Moves whenever the view changes, including between the machines of one catch-up,
        #: which moves ``revision`` only once it is done: cursors bind it.
        self.generation = 0
        #: Each machine's call-token key (persisted in the registry so every navigator can sign).
        self.node_keys: dict[str, bytes] = {}
        #: One contract object per digest, shared by every holder of that tool.
        self._contracts = _SharedContracts()
        #: Held by a load or a catch-up from its read to its last change of the view. Two at once
        #: (the follow loop's and a registrar's) could apply an older read of a machine over a
        #: newer one, and the log position, already past both, would never bring it back.
        self._changing = anyio.Lock()

    # --- reading ---------------------------------------------------------------------------

    @property
    def index(self) -> SearchIndex:
        """The search index over the live tools of the current view."""
        return self._state.index

    def tool(self, address: str) -> CatalogTool:
        tool = self.find_tool(address)
        if tool is None:
            raise UnknownTool()
        return tool

    def find_tool(self, address: str) -> CatalogTool | None:
        """The live tool at ``address``; ``None`` when there is none, or its machine is retired."""
        tool = self._state.tools.get(address)
        if tool is None or self.machine_status(tool.machine) == RETIRED:
            return None
        return tool

    def tools(self) -> Iterator[CatalogTool]:
        return iter(self._state.tools.values())

    @property
    def tool_count(self) -> int:
        return len(self._state.tools)

    def assignment_tools(self, assignment: CatalogAssignment) -> Mapping[str, CatalogTool]:
        """The live tools ``assignment`` holds, by address (empty when retired)."""
        return self._state.placed.get((assignment.machine, assignment.role), _NO_TOOLS)

    def assignment_fingerprint(self, assignment: CatalogAssignment) -> str:
        """``contracts_fingerprint`` of the live tools ``assignment`` holds, kept until they
        change."""
        key = (assignment.machine, assignment.role)
        fingerprints = self._state.fingerprints
        found = fingerprints.get(key)
        if found is None:
            found = fingerprints[key] = contracts_fingerprint(
                self.assignment_tools(assignment).values()
            )
        return found

    def machine_status(self, machine: str, now: datetime | None = None) -> str:
        state = self._state.machines.get(machine)
        if state is None:
            return NOT_ANSWERING
        return state.status(self.writes.judged_at(now or datetime.now(UTC)))

    def silent_since(self, machine: str) -> datetime | None:
        """When ``machine`` stopped answering, if it is not answering for want of heartbeats the
        registry could have recorded; ``None`` otherwise (answering, retired, never heard of, or
        judged as of an unrecorded write). Read from the view alone: a call asks it first."""
        state = self._state.machines.get(machine)
        if state is None or state.heartbeat_at is None or state.record.retired_at is not None:
            return None
        judged = self.writes.judged_at(datetime.now(UTC))
        return None if state.status(judged) == ANSWERING else state.heartbeat_at + state.limit

    def turning_silent(self) -> bool:
        """Whether a machine last announced answering would now be announced not answering: the
        moment to ask whether the registry could have recorded its heartbeats."""
        judged = self.writes.judged_at(datetime.now(UTC))
        return any(
            state.announced[0] == ANSWERING and state.status(judged) == NOT_ANSWERING
            for state in self._state.machines.values()
        )

    def heartbeats(self, machine: str, now: datetime) -> str | None:
        """What ``machine``'s heartbeats tell where they explain its status: ``MISSED`` (not
        answering: none was recorded for three intervals), ``UNRECORDED`` (the status is the one
        it had when the registry stopped taking writes); ``None`` while recorded as they come."""
        state = self._state.machines.get(machine)
        return None if state is None else state.heartbeats(now, self.writes.judged_at(now))

    def _served_status(self, machine: str, endpoint: str | None, now: datetime | None) -> str:
        """Its machine's status; not answering without an endpoint to call."""
        status = self.machine_status(machine, now)
        return NOT_ANSWERING if status == ANSWERING and endpoint is None else status

    def assignment_status(self, assignment: CatalogAssignment, now: datetime | None = None) -> str:
        if assignment.retired:
            return RETIRED
        return self._served_status(assignment.machine, assignment.endpoint, now)

    def status(self, tool: CatalogTool) -> str:
        return self._served_status(tool.machine, tool.endpoint, None)

    def status_at(self, address: str) -> str:
        """The status of the tool at ``address``; not answering when there is none (any more)."""
        tool = self._state.tools.get(address)
        return NOT_ANSWERING if tool is None else self.status(tool)

    def machines(self) -> list[MachineRecord]:
        return [m.record for m in self._state.machines.values()]

    def machine(self, name: str) -> MachineRecord | None:
        """The machine ``name``, retired or not; ``None`` when there is none."""
        machine = self._state.machines.get(name)
        return None if machine is None else machine.record

    def assignments(self) -> list[CatalogAssignment]:
        return list(self._state.assignments.values())

    def machine_assignments(self, machine: str) -> list[CatalogAssignment]:
        """``machine``'s assignments, retired ones included."""
        return list(self._state.by_machine.get(machine, {}).values())

    def assignment(self, machine: str, role: str) -> CatalogAssignment | None:
        """``machine``'s assignment ``role``, retired or not; ``None`` when there is none."""
        return self._state.assignments.get((machine, role))

    # --- loading ---------------------------------------------------------------------------

    async def load(self, meanwhile: Callable[[], object] | None = None) -> None:
        """Read the whole catalogue into a new view, built off the event loop while the rows
        stream in, then switch to it: until then the previous view answers.

        ``meanwhile`` runs in the loading thread once every row is read, while the index worker
        finishes the last texts: work of the loading process's own that would wait otherwise.
        """
        async with self._changing:
            await self._load(meanwhile)

    async def _load(self, meanwhile: Callable[[], object] | None = None) -> None:
        revision, keys, state = await long_read(self.registry, self._read_whole, meanwhile)
        self.node_keys = keys
        self._state = state
        self.revision = revision
        self.generation += 1

    def _read_whole(
        self, progress: Progress, meanwhile: Callable[[], object] | None = None
    ) -> tuple[int, dict[str, bytes], _State]:
        state = _State()
        contracts = _Contracts(self._contracts)
        # Building creates a million small objects and frees few: collecting meanwhile only walks
        # them again and again. Once built they are frozen out of every later collection's walk:
        # a view holds no reference cycles, so refcounting frees it when the next one replaces it.
        collecting = gc.isenabled()
        gc.disable()
        build = state.index.build()
        try:
            with self.registry.read_transaction() as session:
                store = CatalogStore(session)
                revision = store.last_change()
                keys = store.node_keys()
                for machine in store.machines():
                    state.put_machine(machine)
                progress.tick()
                for assignment, rows in _assignments(store.stream_catalog_rows()):
                    progress.tick()
                    build.add(state.put_assignment(assignment, rows, contracts))
            progress.done()
            # beside the index worker's last texts: the first cursor a grant set asks of this view
            # reads them (ADR 0028)
            state.fingerprint_every_assignment()
            build.finish(meanwhile)  # the transaction is over: the rest reads no row
            gc.freeze()
        except BaseException:
            build.abandon()
            raise
        finally:
            if collecting:
                gc.enable()
        return revision, keys, state

    async def catch_up(self) -> int:
        """Apply every change logged since this view was made, machine by machine.

        Returns how many changes were applied. Far behind (more than a page of the log, or behind
        the point the log was pruned to), it loads the whole catalogue again instead. One at a
        time, and not beside a load: each reads the registry after the one before it applied.
        """
        async with self._changing:
            return await self._catch_up()

    async def catch_up_after_write(self) -> None:
        """Apply a change this navigator has just committed, so that its caller reads its own
        write. Lost before it could be read back, the registry leaves the change to the follower
        (``navigator.catalog.following``), which applies it from the log within a second of its
        return: the write is made, and answering ``registry_unavailable`` would say it was not."""
        try:
            await self.catch_up()
        except RegistryError:
            logger.warning("registry lost after a change committed; the follower will apply it")

    async def _catch_up(self) -> int:
        changes = await short_read(
            self.registry,
            self.registry.rows,
            CHANGES_SINCE,
            {"after": self.revision, "limit": CATCH_UP_PAGE},
        )
        if not changes:
            return 0
        pruned_through = changes[0][2]  # entries this view needed may be gone: reload
        if len(changes) >= CATCH_UP_PAGE or (pruned_through or 0) > self.revision:
            await self._load()
            return len(changes)
        for machine in dict.fromkeys(name for _, name, _ in changes):
            await self._reload_machine(machine)
        self.revision = max(self.revision, changes[-1][0])
        return len(changes)

    async def _reload_machine(self, name: str) -> None:
        """Re-read one machine and its assignments."""

        def read() -> tuple[MachineRecord | None, list[CatalogRow], bytes | None]:
            with self.registry.read_transaction() as session:
                store = CatalogStore(session)
                try:
                    machine = store.machine(name)
                except NotFound:
                    return None, [], None
                return machine, store.catalog_rows(machine=name), store.node_key(name)

        machine, rows, key = await off_loop_read(self.registry, read)
        if key is not None:
            self.node_keys[name] = key
        self.generation += 1
        state = self._state
        if machine is not None:
            state.put_machine(machine)
        stale = {(name, role) for role in state.by_machine.get(name, ())}
        contracts = _Contracts(self._contracts)
        for assignment, tools in _assignments(rows):
            stale.discard((assignment.machine, assignment.role))
            state.index.upsert(state.put_assignment(assignment, tools, contracts))
        for gone in stale:
            state.drop_assignment(gone)
        self._emit(CatalogEvent("machine", name))

    async def refresh_heartbeats(self) -> list[str]:
        """Re-read every machine's heartbeat and announce the machines whose status moved since
        it was last announced — including those that went silent, which nothing else reports.

        A machine retired (or back) since this view read it is reloaded whole, its tools with it,
        never its record alone: the record would say retired while its tools stayed indexed,
        until the change log's entry was applied (ADR 0008)."""
        rows = await short_read(self.registry, self.registry.rows, MACHINE_RECORDS, {})
        machines = self._state.machines
        retirements = []
        for row in rows:
            record = MachineRecord(*row)
            state = machines.get(record.name)
            if state is None:
                self._state.put_machine(record)
            elif record.retired_at != state.record.retired_at:
                retirements.append(record.name)
            elif record != state.record:
                state.record = record
                state.heartbeat_at = record.last_heartbeat_at
        if retirements:  # a reload is a change of the view: one at a time, as a catch-up's
            async with self._changing:
                for name in retirements:
                    await self._reload_machine(name)
        return self._announce_status(datetime.now(UTC))

    def note_heartbeat(self, name: str, at: datetime) -> None:
        state = self._state.machines.get(name)
        if state is not None:
            state.heartbeat_at = at
            self._announce_status(at, {name: state})

    def _announce_status(
        self, now: datetime, machines: dict[str, _Machine] | None = None
    ) -> list[str]:
        """Announce the machines (every one by default) whose status moved since last told."""
        changed = []
        judged = self.writes.judged_at(now)
        for name, state in (self._state.machines if machines is None else machines).items():
            status = (state.status(judged), state.heartbeats(now, judged))
            if status != state.announced:
                moved = {state.announced[0], status[0]} == {ANSWERING, NOT_ANSWERING}
                if moved and self.on_status is not None:
                    self.on_status(name, status[0])
                state.announced = status
                changed.append(name)
                self._emit(CatalogEvent("status", name))
        return changed

    # --- live views ------------------------------------------------------------------------

    def subscribe(self) -> asyncio.Queue[CatalogEvent]:
        queue: asyncio.Queue[CatalogEvent] = asyncio.Queue(maxsize=256)
        self._listeners.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[CatalogEvent]) -> None:
        self._listeners.discard(queue)

    def announce(self, kind: str) -> None:
        """Tell live views of a change outside the catalogue (``activity``: audit events)."""
        self._emit(CatalogEvent(kind, ""))

    def _emit(self, event: CatalogEvent) -> None:
        for queue in list(self._listeners):
            if queue.full():
                continue
            queue.put_nowait(event)


def _assignments(
    rows: Iterable[CatalogRow],
) -> Iterator[tuple[CatalogAssignment, list[CatalogRow]]]:
    """Flat rows (ordered by machine, role, tool) grouped back into assignments."""
    for _, grouped in itertools.groupby(rows, key=operator.itemgetter(0, 1)):
        group = list(grouped)
        first = group[0]
        tools = group if first.tool is not None else []  # no tools: one row, joined to none
        yield (
            CatalogAssignment(
                machine=first.machine,
                role=first.role,
                module=first.module,
                kind=first.kind,
                endpoint=first.endpoint,
                seat=first.seat,
                scopes=tuple(first.scopes),
                retired=bool(first.retired),
                tools=tuple([str(row.tool) for row in tools]),
            ),
            tools,
        )
