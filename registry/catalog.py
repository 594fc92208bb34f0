"""The catalogue store: how the catalogue changes — machines, assignments, seats, tools and node
keys, each change logged — inside the caller's transaction. It never commits.

What it reads is ``registry.catalog_reads``'s (``CatalogReader``, which it extends); its records
are ``registry.catalog_records``'s; the change log it writes, ``registry.changelog``'s.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from registry import changelog, retired_rows
from registry.audit import record_change
from registry.catalog_reads import CatalogReader
from registry.catalog_records import AssignmentRecord, MachineRecord, NewTool, machine_record
from registry.contracts import Approval, settle
from registry.errors import NODE_SEAT, Conflict, NotFound, SeatIsNodeSeat, SeatNotPlaced
from registry.models import Assignment, Machine, NodeKey, Revision, Seat, Tool, utcnow
from registry.node_instances import check_instance, stop_instance, take_instance

__all__ = ["CatalogStore"]

NODE_KEY_BYTES = 32
#: The PostgreSQL advisory lock catalogue writers hold to their commit (``CatalogStore._write``):
#: a fixed number of our own, "meshnav" read as a big-endian integer.
CATALOG_WRITES_LOCK = int.from_bytes(b"meshnav", "big")


class CatalogStore(CatalogReader):
    """Reads and changes the catalogue inside the caller's transaction: every change takes the
    catalogue writers' lock first (``_write``) and logs the machine it changed."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._writing = False

    def hold_writers(self) -> None:
        """Take the catalogue writers' lock now, held to commit: before a check whose answer a
        change in the same transaction relies on (``AccessStore.bind_machine``), so that no other
        writer changes what it read before this transaction commits."""
        self._write()

    def _write(self) -> None:
        """Before a transaction's first change to the catalogue: on PostgreSQL, a lock held to its
        commit, so that catalogue writers commit one at a time and the change log's ids become
        visible in the order they were given. Without it an id given earlier could commit later,
        behind a navigator that had read past it, and that change was never caught up (ADR 0008).
        On SQLite a writer's transaction holds the database's one write lock from its first
        statement (``BEGIN IMMEDIATE``, ``Registry.transaction``)."""
        if self._writing:
            return
        self._writing = True
        if self.session.get_bind().dialect.name == "postgresql":
            self.session.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": CATALOG_WRITES_LOCK}
            )

    # --- revisions and the change log ------------------------------------------------------

    def bump(self, counter: str) -> int:
        """Move a revision counter atomically (row-locked on PostgreSQL); return its new value."""
        value = self.session.execute(
            update(Revision)
            .where(Revision.name == counter)
            .values(value=Revision.value + 1)
            .returning(Revision.value)
        ).scalar_one()
        return int(value)

    def log_change(self, machine: str) -> None:
        """Record that ``machine``'s part of the catalogue changed, in the caller's transaction;
        navigators read the log to catch up (``changes_since``), whatever notifications they missed.
        """
        self._write()
        changelog.append_change(self.session, machine)

    def prune_changes(self, older_than: datetime) -> int:
        """Forget the log entries older than ``older_than`` but the newest, and move the mark of
        how far the log is forgotten (``changelog.prune_changes``). Returns how many went."""
        return changelog.prune_changes(self.session, older_than)

    # --- machines --------------------------------------------------------------------------

    def add_machine(
        self, name: str, *, advertise_url: str | None = None, heartbeat_s: float | None = None
    ) -> MachineRecord:
        """Add a machine, or bring back a retired one (an operator's act)."""
        self._write()
        machine = self.session.execute(
            select(Machine).where(Machine.name == name)
        ).scalar_one_or_none()
        if machine is None:
            machine = Machine(name=name, heartbeat_s=heartbeat_s or 5.0)
            self.session.add(machine)
        machine.retired_at = None
        if advertise_url is not None:
            machine.advertise_url = advertise_url
        if heartbeat_s is not None:
            machine.heartbeat_s = heartbeat_s
        self.session.flush()
        self.log_change(name)
        record_change(self.session, "machine.add", name)
        return machine_record(machine)

    def register_node(
        self,
        name: str,
        *,
        advertise_url: str,
        heartbeat_s: float,
        instance: str | None = None,
        judged: str | None = None,
        replace: bool = False,
    ) -> bytes:
        """A node (re)registers its machine: idempotent; returns the machine's call-token key.
        ``instance`` takes the machine over from ``judged`` (``node_instances.take_instance``)."""
        self._write()
        machine = self.session.execute(
            select(Machine).where(Machine.name == name)
        ).scalar_one_or_none()
        if machine is None:
            machine = Machine(name=name)
            self.session.add(machine)
        elif machine.retired_at is not None:
            raise Conflict("The machine was retired by an operator.")
        take_instance(self.session, machine, instance, judged=judged, replace=replace)
        machine.advertise_url = advertise_url
        machine.heartbeat_s = heartbeat_s
        machine.last_heartbeat_at = utcnow()
        self.session.flush()
        self.log_change(name)
        return self._node_key(machine)

    def _node_key(self, machine: Machine) -> bytes:
        key = self.session.get(NodeKey, machine.id)
        if key is None:
            key = NodeKey(machine_id=machine.id, key=secrets.token_bytes(NODE_KEY_BYTES))
            self.session.add(key)
            self.session.flush()
        return key.key

    def heartbeat(self, name: str, instance: str | None = None) -> datetime:
        machine = self._machine(name)
        if machine.retired_at is not None:
            raise Conflict("The machine was retired by an operator.")
        check_instance(machine, instance)
        machine.last_heartbeat_at = utcnow()
        return machine.last_heartbeat_at

    def check_node_instance(self, name: str, instance: str | None) -> None:
        """Before a node's push: ``instance`` serves ``name`` (a machine not there yet, too)."""
        try:
            check_instance(self._machine(name), instance)
        except NotFound:
            return

    def stop_node(self, name: str, instance: str) -> bool:
        """A node instance stopped cleanly: its machine is not answering from now on; whether
        it was the instance serving it (``node_instances.stop_instance``)."""
        self._write()
        stopped = stop_instance(self._machine(name), instance)
        if stopped:
            self.log_change(name)
        return stopped

    def check_writes(self) -> None:
        """A write that lands as a heartbeat's does, and changes nothing: the first machine's row
        (what a heartbeat locks: SQLite's one write lock, a row lock on PostgreSQL) and the
        change log's pruning mark (there, whatever the machines) each changed and changed back.
        Their pages are written at commit, so the write needs the space a heartbeat's needs: a
        value written onto itself changes no byte, SQLite then writes no page, and such a check
        committed on a full disk while every heartbeat failed (ADR 0052). A navigator makes it
        to learn whether the registry would have recorded heartbeats."""
        first = select(func.min(Machine.id)).scalar_subquery()
        for step in (1, -1):  # a period (never 0) negated twice, a count moved and moved back
            self.session.execute(
                update(Machine)
                .where(Machine.id == first)
                .values(heartbeat_s=-Machine.heartbeat_s)
                .execution_options(synchronize_session=False)
            )
            self.session.execute(
                update(Revision)
                .where(Revision.name == changelog.CHANGES_PRUNED)
                .values(value=Revision.value + step)
                .execution_options(synchronize_session=False)
            )

    def retire_machine(self, name: str) -> None:
        self._write()
        machine = self._machine(name)
        machine.retired_at = utcnow()
        self.log_change(name)
        record_change(self.session, "retire", name)

    # --- assignments -----------------------------------------------------------------------

    def put_assignment(
        self,
        machine: str,
        role: str,
        *,
        module: str,
        tools: Sequence[NewTool],
        kind: str = "assignment",
        endpoint: str | None = None,
        scopes: Iterable[str] = (),
        seat: str | None = None,
        by_node: bool = False,
        action: str = "register",
        approval: Approval | None = None,
        refused: dict[str, str] | None = None,
        not_listing: str | None = None,
    ) -> AssignmentRecord:
        """Register an assignment (adding the machine when new); registering again replaces its
        tools, keeps operators' confirmation marks, and restores it when it was retired. Its
        tools' contracts are settled as ``approval`` says (``registry.contracts.settle``);
        ``refused`` names the tools the registration refused, and why.

        A node registering (``by_node``) neither brings back a machine an operator retired nor
        serves a seat where no operator placed it: both are operators' acts (``Conflict``,
        ``SeatNotPlaced``)."""
        self._write()
        owner = self.session.execute(
            select(Machine).where(Machine.name == machine)
        ).scalar_one_or_none()
        if by_node and owner is not None and owner.retired_at is not None:
            raise Conflict("The machine was retired by an operator.")
        if by_node and seat is not None and not self._seat_placed(seat, machine, role):
            raise SeatNotPlaced()
        if owner is None:
            owner = Machine(name=machine)
            self.session.add(owner)
            self.session.flush()
        try:
            assignment = self._assignment(machine, role)
        except NotFound:
            assignment = Assignment(machine=owner, role=role, module=module)
            self.session.add(assignment)
        assignment.module = module
        assignment.kind = kind
        assignment.endpoint = endpoint
        assignment.scopes = sorted(set(scopes))
        assignment.retired_at = None
        assignment.not_listing = None if not_listing is None else not_listing[:200]
        assignment.updated_at = utcnow()
        marks = {tool.name: tool.confirmation for tool in assignment.tools}
        before = {t.name: (t.contract_digest, t.approved_digest) for t in assignment.tools}
        assignment.refused = dict(refused or {})
        assignment.tools = []
        self.session.flush()  # old rows go before new ones arrive: (assignment, name) is unique
        assignment.tools = [
            Tool(
                name=tool.name,
                definition=tool.definition,
                contract_digest=tool.contract_digest,
                confirmation=marks.get(tool.name, tool.confirmation),
            )
            for tool in tools
        ]
        self.session.flush()
        holder = f"mesh/{seat}" if seat else f"{machine}/{role}"
        settle(self.session, assignment, before, approval, holder)
        if seat is not None:
            self._place_seat(seat, assignment)
        self.log_change(machine)
        record_change(self.session, action, f"{machine}/{role}")
        return self._record(assignment)

    def retire_assignment(self, machine: str, role: str) -> None:
        self._write()
        assignment = self._assignment(machine, role)
        assignment.retired_at = utcnow()
        self.log_change(machine)
        record_change(self.session, "retire", f"{machine}/{role}")

    def hold_to(self, machine: str, *, assignments: int, tools: int) -> None:
        """``machine`` within its bounds, retired rows dropped to make room (``retired_rows``)."""
        retired_rows.hold_to(self, machine, assignments=assignments, tools=tools)

    def prune_retired(self, older_than: datetime) -> int:
        """Forget the assignments retired before ``older_than`` (``retired_rows``)."""
        return retired_rows.prune_retired(self, older_than)

    def mark_tool(self, machine: str, role: str, tool: str, confirmation: str) -> None:
        self._write()
        assignment = self._assignment(machine, role)
        for row in assignment.tools:
            if row.name == tool:
                row.confirmation = confirmation
                self.log_change(machine)
                record_change(self.session, "tool.mark", f"{machine}/{role}/{tool}")
                return
        raise NotFound("No such tool.")

    # --- seats -----------------------------------------------------------------------------

    def _place_seat(self, name: str, assignment: Assignment) -> None:
        seat = self.session.execute(select(Seat).where(Seat.name == name)).scalar_one_or_none()
        if seat is None:
            seat = Seat(name=name)
            self.session.add(seat)
        held = self.session.execute(
            select(Seat).where(Seat.assignment_id == assignment.id, Seat.name != name)
        ).scalar_one_or_none()
        if held is not None:
            raise Conflict("That assignment already holds another seat.")
        previous = seat.assignment
        if previous is not None and previous.id != assignment.id:
            # the seat's old instance was addressed only as the seat: left live, it became
            # MACHINE/SEAT, its data and tools under that machine's grants instead of the seat's
            previous.retired_at = previous.retired_at or utcnow()
            self.log_change(previous.machine.name)
        seat.assignment_id = assignment.id
        seat.updated_at = utcnow()
        self.session.flush()

    def place_seat(self, name: str, machine: str, role: str) -> None:
        """Place the mesh seat ``name`` on ``machine``'s assignment ``role`` (moving it if held).
        An assignment not registered yet is placed ahead of its node: it is added, with no tools,
        for the node's registration of the seat to fill (the machine too, when new). A retired
        assignment, or one of a retired machine, is refused (``Conflict``): moving the seat
        retires its live instance, and the seat was left with none."""
        self._write()
        node_seat = select(Assignment.id).where(
            Assignment.kind == "node_seat", Assignment.role == name
        )
        if name == NODE_SEAT or self.session.execute(node_seat.limit(1)).first() is not None:
            raise SeatIsNodeSeat()
        try:
            assignment = self._assignment(machine, role)
        except NotFound:  # an operator's registration of it, with no tools
            self.put_assignment(machine, role, module=role, tools=[])
            assignment = self._assignment(machine, role)
        if assignment.retired_at is not None or assignment.machine.retired_at is not None:
            raise Conflict("The assignment is retired: register it again, then place the seat.")
        self._place_seat(name, assignment)
        self.log_change(machine)
        record_change(self.session, "seat.place", f"mesh/{name} on {machine}/{role}")

    def remove_seat(self, name: str) -> None:
        """Remove the mesh seat ``name``: its instance, if placed, is retired (left live it would
        become ``MACHINE/SEAT``, under that machine's grants), and a node serving it is refused."""
        self._write()
        seat = self.session.execute(select(Seat).where(Seat.name == name)).scalar_one_or_none()
        if seat is None:
            raise NotFound("No such seat.")
        placed = seat.assignment
        if placed is not None:
            placed.retired_at = placed.retired_at or utcnow()
            self.log_change(placed.machine.name)
        self.session.delete(seat)
        self.session.flush()
        record_change(self.session, "seat.remove", f"mesh/{name}")
