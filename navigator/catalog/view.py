"""The in-memory catalogue: every live tool by address, machine status, the search index.

Loaded whole at start, then kept current piece by piece — an assignment or machine at a time — when
this navigator changes the registry or another navigator says it did. Nothing here decides who may
call what: that is read from the registry on every request (``navigator.access.grants``).
``Catalog`` answers from its current view (``navigator.catalog.state``) and decides when it is
read again; the reading itself is ``navigator.catalog.loading``'s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime

import anyio

from navigator.addresses import MESH, WILDCARD, Address
from navigator.catalog.contracts import SharedContracts
from navigator.catalog.live_views import CatalogEvent, LiveViews
from navigator.catalog.loading import CATCH_UP_PAGE, place_machine, read_machine, read_whole
from navigator.catalog.machines import (
    ANSWERING,
    NO_ENDPOINT,
    NOT_ANSWERING,
    NOT_LISTING,
    RETIRED,
    MachineState,
)
from navigator.catalog.records import CatalogAssignment, CatalogTool, contracts_fingerprint
from navigator.catalog.registry_reads import Progress, long_read, off_loop_read, short_read
from navigator.catalog.registry_writes import RegistryWrites
from navigator.catalog.state import NO_TOOLS, CatalogState
from navigator.errors import UnknownTool
from navigator.search import SearchIndex
from navigator.search.ranking import RankingSettings
from registry import (
    MachineRecord,
    Registry,
    RegistryError,
    read_changes_since,
    read_machine_records,
)

__all__ = ["Catalog"]

logger = logging.getLogger("meshnav.navigator.catalog")


class Catalog:
    """The catalogue this navigator answers from: queries over its current view, and the load and
    catch-ups that replace or change that view as the registry changes."""

    def __init__(
        self,
        registry: Registry,
        writes: RegistryWrites | None = None,
        ranking: RankingSettings | None = None,
    ) -> None:
        self.registry = registry
        #: How the view's search index ranks (every view made from now on).
        self.ranking = ranking or RankingSettings()
        #: Whether the registry takes this navigator's writes: silence is judged only over the
        #: time it did (``navigator.catalog.registry_writes``).
        self.writes = writes or RegistryWrites()
        self._state = CatalogState(index=SearchIndex(self.ranking))
        #: The live views told of each change (``navigator.catalog.live_views``).
        self._live = LiveViews()
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
        self._contracts = SharedContracts()
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

    def held_state(self, address: str) -> str | None:
        """``held`` or ``rejected`` for a tool whose contract awaits an operator (SPEC §14)."""
        return self._state.held.get(address)

    def held_counts(self) -> dict[str, float]:
        """Tools whose contract awaits an operator, by state (the ``/metrics`` gauge)."""
        counts: dict[str, float] = {"held": 0, "rejected": 0}
        for state in self._state.held.values():
            counts[state] = counts.get(state, 0) + 1
        return counts

    def tools(self) -> Iterator[CatalogTool]:
        return iter(self._state.tools.values())

    @property
    def tool_count(self) -> int:
        return len(self._state.tools)

    def assignment_tools(self, assignment: CatalogAssignment) -> Mapping[str, CatalogTool]:
        """The live tools ``assignment`` holds, by address (empty when retired)."""
        return self._state.placed.get((assignment.machine, assignment.role), NO_TOOLS)

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
        return state.status(self._judged(state, now or datetime.now(UTC)))

    def _judged(self, state: MachineState, now: datetime) -> datetime:
        """The moment ``state``'s heartbeats are judged at: ``now`` less the time the registry
        could not record them, its own grace after an outage included (``RegistryWrites``)."""
        return self.writes.judged_at(now, state.heartbeat_at, state.record.heartbeat_s)

    def silent_since(self, machine: str) -> datetime | None:
        """When ``machine`` stopped answering, if it is not answering for want of heartbeats the
        registry could have recorded; ``None`` otherwise (answering, retired, never heard of, or
        judged as of an unrecorded write). Read from the view alone: a call asks it first."""
        state = self._state.machines.get(machine)
        if state is not None and state.record.retired_at is None and state.record.stopped_at:
            return state.record.stopped_at  # its node stopped cleanly
        if state is None or state.heartbeat_at is None or state.record.retired_at is not None:
            return None
        judged = self._judged(state, datetime.now(UTC))
        return None if state.status(judged) == ANSWERING else state.heartbeat_at + state.limit

    def turning_silent(self) -> bool:
        """Whether a machine last announced answering would now be announced not answering: the
        moment to ask whether the registry could have recorded its heartbeats."""
        now = datetime.now(UTC)
        return any(
            state.announced[0] == ANSWERING
            and state.status(self._judged(state, now)) == NOT_ANSWERING
            for state in self._state.machines.values()
        )

    def heartbeats(self, machine: str, now: datetime) -> str | None:
        """What ``machine``'s heartbeats tell where they explain its status: ``MISSED`` (not
        answering: none was recorded for three intervals), ``UNRECORDED`` (the status is the one
        it had when the registry stopped taking writes); ``None`` while recorded as they come."""
        state = self._state.machines.get(machine)
        return None if state is None else state.heartbeats(now, self._judged(state, now))

    def machine_status_fields(self, machine: str, now: datetime) -> dict[str, str]:
        """A machine's ``status``, and its ``heartbeats`` where they explain it, as a listing
        shows them: ``missed`` when none came, ``unrecorded`` when the registry could not
        record them (ADR 0031)."""
        fields = {"status": self.machine_status(machine, now)}
        heartbeats = self.heartbeats(machine, now)
        if heartbeats is not None:
            fields["heartbeats"] = heartbeats
        return fields

    def _served_status(self, machine: str, endpoint: str | None, now: datetime | None) -> str:
        """Its machine's status; ``no endpoint`` when there is none to call (a tools file's)."""
        status = self.machine_status(machine, now)
        return NO_ENDPOINT if status == ANSWERING and endpoint is None else status

    def assignment_status(self, assignment: CatalogAssignment, now: datetime | None = None) -> str:
        if assignment.retired:
            return RETIRED
        status = self._served_status(assignment.machine, assignment.endpoint, now)
        return NOT_LISTING if status == ANSWERING and assignment.not_listing else status

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

    def assignments_at(self, address: Address | None) -> Iterable[CatalogAssignment]:
        """The assignments a listing at ``address`` reads: every one at the top, a machine's by
        its name, one of them by its key; the mesh seats and a node seat by what they are."""
        if address is None:
            return self.assignments()
        holder, role = address.holder, address.role
        if holder == WILDCARD:
            return [
                a for a in self.assignments() if a.listed_kind == "node seat" and a.role == role
            ]
        if holder == MESH:  # a seat is addressed by its name
            return [a for a in self.assignments() if a.seat is not None and role in (None, a.seat)]
        if role is None:
            return [a for a in self.machine_assignments(holder) if not a.seat]
        assignment = self.assignment(holder, role)
        return () if assignment is None or assignment.seat else (assignment,)

    # --- loading and following the registry ------------------------------------------------

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
    ) -> tuple[int, dict[str, bytes], CatalogState]:
        """What ``load`` runs in a worker thread (``loading.read_whole``)."""
        return read_whole(self.registry, self._contracts, progress, meanwhile, self.ranking)

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
            self.registry, read_changes_since, self.registry, self.revision, CATCH_UP_PAGE
        )
        entries = changes.entries
        if not entries:
            return 0
        # past a page, or behind the pruning mark (entries this view needed may be gone): reload
        if len(entries) >= CATCH_UP_PAGE or changes.pruned_through > self.revision:
            await self._load()
            return len(entries)
        for machine in dict.fromkeys(entry.machine for entry in entries):
            await self._reload_machine(machine)
        self.revision = max(self.revision, entries[-1].id)
        return len(entries)

    async def _reload_machine(self, name: str) -> None:
        """Re-read one machine and its assignments."""
        machine, rows, key = await off_loop_read(self.registry, read_machine, self.registry, name)
        if key is not None:
            self.node_keys[name] = key
        self.generation += 1
        place_machine(self._state, name, machine, rows, self._contracts)
        self._live.emit(CatalogEvent("machine", name))

    async def refresh_heartbeats(self) -> list[str]:
        """Re-read every machine's heartbeat and announce the machines whose status moved since
        it was last announced — including those that went silent, which nothing else reports.

        A machine retired (or back) since this view read it is reloaded whole, its tools with it,
        never its record alone: the record would say retired while its tools stayed indexed,
        until the change log's entry was applied (ADR 0008)."""
        records = await short_read(self.registry, read_machine_records, self.registry)
        machines = self._state.machines
        retirements = []
        for record in records:
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
        self, now: datetime, machines: dict[str, MachineState] | None = None
    ) -> list[str]:
        """Announce the machines (every one by default) whose status moved since last told."""
        changed = []
        for name, state in (self._state.machines if machines is None else machines).items():
            judged = self._judged(state, now)
            status = (state.status(judged), state.heartbeats(now, judged))
            if status != state.announced:
                moved = {state.announced[0], status[0]} == {ANSWERING, NOT_ANSWERING}
                if moved and self.on_status is not None:
                    self.on_status(name, status[0])
                state.announced = status
                changed.append(name)
                self._live.emit(CatalogEvent("status", name))
        return changed

    # --- live views ------------------------------------------------------------------------

    def subscribe(self) -> asyncio.Queue[CatalogEvent]:
        return self._live.subscribe()

    def unsubscribe(self, queue: asyncio.Queue[CatalogEvent]) -> None:
        self._live.unsubscribe(queue)

    def announce(self, kind: str) -> None:
        """Tell live views of a change outside the catalogue (``activity``: audit events)."""
        self._live.emit(CatalogEvent(kind, ""))
