"""The catalogue store: machines, assignments, seats, tools and node keys. It never commits."""

from __future__ import annotations

import json
import queue
import secrets
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    Row,
    Select,
    Text,
    bindparam,
    cast,
    delete,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.orm import Session, selectinload

from registry.audit import record_change
from registry.errors import Conflict, NotFound, SeatNotPlaced
from registry.models import (
    Assignment,
    CatalogChange,
    Machine,
    NodeKey,
    Revision,
    Seat,
    Tool,
    utcnow,
)

__all__ = [
    "CHANGES_PRUNED",
    "CHANGES_SINCE",
    "MACHINE_RECORDS",
    "PRUNED_THROUGH",
    "AssignmentPlace",
    "AssignmentRecord",
    "CatalogRow",
    "CatalogStore",
    "MachineRecord",
    "NewTool",
    "ToolRecord",
]

NODE_KEY_BYTES = 32
#: The PostgreSQL channel on which catalogue changes are announced.
NOTIFY_CHANNEL = "meshnav_catalog"
#: The PostgreSQL advisory lock catalogue writers hold to their commit (``CatalogStore._write``):
#: a fixed number of our own, "meshnav" read as a big-endian integer.
CATALOG_WRITES_LOCK = int.from_bytes(b"meshnav", "big")
#: Rows of the catalogue read at a time when it is streamed.
CATALOG_ROWS_BATCH = 2000

# The two reads a navigator makes on every tick of following the registry, as single statements
# for ``Registry.rows`` (inline on SQLite, compiled once), not ORM sessions on a worker thread.
#: The change log after ``after``, oldest first, at most ``limit`` entries: ``(id, machine)``.
#: The revision counter naming the last log id pruned; and the one row that reads it.
CHANGES_PRUNED = "changes_pruned"
PRUNED_THROUGH = select(Revision.value).where(Revision.name == CHANGES_PRUNED)
#: The log after a position, each entry with the pruning mark (a view behind it must reload): one
#: read for both.
CHANGES_SINCE = (
    select(CatalogChange.id, CatalogChange.machine, PRUNED_THROUGH.scalar_subquery())
    .where(CatalogChange.id > bindparam("after"))
    .order_by(CatalogChange.id)
    .limit(bindparam("limit"))
)
#: Every machine, as ``MachineRecord`` fields in order (heartbeats change without a logged change).
MACHINE_RECORDS = select(
    Machine.name,
    Machine.advertise_url,
    Machine.heartbeat_s,
    Machine.last_heartbeat_at,
    Machine.retired_at,
).order_by(Machine.name)


@dataclass(frozen=True, slots=True)
class NewTool:
    """A tool as a module's ``tools/list`` gave it, with its contract digest (the caller's)."""

    name: str
    definition: dict[str, Any]
    contract_digest: str
    confirmation: str = "auto"


class CatalogRow(NamedTuple):
    """One tool of one assignment (or an assignment without tools), read in bulk. The definition
    stays the JSON text the database holds, for the caller to decode once per contract."""

    machine: str
    role: str
    module: str
    kind: str
    endpoint: str | None
    scopes: tuple[str, ...]
    retired: bool
    seat: str | None
    tool: str | None
    definition: str | None
    contract_digest: str | None
    confirmation: str | None


@dataclass(frozen=True, slots=True)
class MachineRecord:
    name: str
    advertise_url: str | None
    heartbeat_s: float
    last_heartbeat_at: datetime | None
    retired_at: datetime | None


@dataclass(frozen=True, slots=True)
class ToolRecord:
    name: str
    definition: dict[str, Any]
    contract_digest: str
    confirmation: str


@dataclass(frozen=True, slots=True)
class AssignmentPlace:
    """Where an assignment runs and how it is addressed: ``HOLDER/ROLE`` is ``mesh/SEAT`` for a
    mesh seat, ``MACHINE/ROLE`` otherwise."""

    machine: str
    role: str
    module: str
    kind: str
    endpoint: str | None
    seat: str | None
    scopes: tuple[str, ...]
    retired: bool

    @property
    def holder(self) -> str:
        return "mesh" if self.seat else self.machine

    @property
    def address_role(self) -> str:
        return self.seat or self.role


@dataclass(frozen=True, slots=True)
class AssignmentRecord(AssignmentPlace):
    """An assignment with its tools' whole contracts."""

    tools: tuple[ToolRecord, ...]


def _machine_record(machine: Machine) -> MachineRecord:
    return MachineRecord(
        name=machine.name,
        advertise_url=machine.advertise_url,
        heartbeat_s=machine.heartbeat_s,
        last_heartbeat_at=machine.last_heartbeat_at,
        retired_at=machine.retired_at,
    )


class CatalogStore:
    """Reads and changes the catalogue inside the caller's transaction."""

    def __init__(self, session: Session) -> None:
        self.session = session
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

    # --- revisions -------------------------------------------------------------------------

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
        self.session.add(CatalogChange(machine=machine))
        self.session.flush()
        if self.session.get_bind().dialect.name == "postgresql":
            # Delivered on commit, with the change: navigators wake and read the log at once.
            self.session.execute(
                text("SELECT pg_notify(:channel, :machine)"),
                {"channel": NOTIFY_CHANNEL, "machine": machine},
            )

    def changes_since(self, after: int, *, limit: int = 1000) -> list[tuple[int, str]]:
        rows = self.session.execute(CHANGES_SINCE, {"after": after, "limit": limit})
        return [(int(i), str(m)) for i, m, _ in rows]

    def last_change(self) -> int:
        return int(
            self.session.execute(select(func.coalesce(func.max(CatalogChange.id), 0))).scalar_one()
        )

    def prune_changes(self, older_than: datetime) -> int:
        """Forget the log entries older than ``older_than``, always keeping the newest (ids must
        never be reused), and move the mark of how far the log is forgotten (``PRUNED_THROUGH``):
        a navigator whose view is older than the mark reloads instead of catching up. Returns how
        many entries went."""
        newest = self.last_change()
        through = self.session.execute(
            select(func.max(CatalogChange.id)).where(
                CatalogChange.at < older_than, CatalogChange.id < newest
            )
        ).scalar_one()
        if through is None:
            return 0
        # Everything up to the mark goes, an entry committed late with an older id included.
        removed = self.session.execute(
            delete(CatalogChange).where(CatalogChange.id <= through)
        ).rowcount  # type: ignore[attr-defined]  # a DELETE's result is a CursorResult
        self.session.execute(
            update(Revision)
            .where(Revision.name == CHANGES_PRUNED, Revision.value < through)
            .values(value=through)
        )
        return int(removed)

    def revision(self, counter: str) -> int:
        return int(
            self.session.execute(
                select(Revision.value).where(Revision.name == counter)
            ).scalar_one()
        )

    # --- machines --------------------------------------------------------------------------

    def _machine(self, name: str) -> Machine:
        machine = self.session.execute(
            select(Machine).where(Machine.name == name)
        ).scalar_one_or_none()
        if machine is None:
            raise NotFound("No such machine.")
        return machine

    def machine(self, name: str) -> MachineRecord:
        return _machine_record(self._machine(name))

    def machines(self) -> list[MachineRecord]:
        return [MachineRecord(*row) for row in self.session.execute(MACHINE_RECORDS)]

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
        return _machine_record(machine)

    def register_node(self, name: str, *, advertise_url: str, heartbeat_s: float) -> bytes:
        """A node (re)registers its machine: idempotent; returns the machine's call-token key."""
        self._write()
        machine = self.session.execute(
            select(Machine).where(Machine.name == name)
        ).scalar_one_or_none()
        if machine is None:
            machine = Machine(name=name)
            self.session.add(machine)
        elif machine.retired_at is not None:
            raise Conflict("The machine was retired by an operator.")
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

    def node_key(self, machine: str) -> bytes | None:
        return self.session.execute(
            select(NodeKey.key)
            .join(Machine, NodeKey.machine_id == Machine.id)
            .where(Machine.name == machine)
        ).scalar_one_or_none()

    def node_keys(self) -> dict[str, bytes]:
        rows = self.session.execute(
            select(Machine.name, NodeKey.key).join(NodeKey, NodeKey.machine_id == Machine.id)
        )
        return {name: key for name, key in rows}

    def heartbeat(self, name: str) -> datetime:
        machine = self._machine(name)
        if machine.retired_at is not None:
            raise Conflict("The machine was retired by an operator.")
        machine.last_heartbeat_at = utcnow()
        return machine.last_heartbeat_at

    def check_writes(self) -> None:
        """A write that changes nothing, as a heartbeat's would: the first machine's heartbeat
        written as it is (SQLite's one write lock; a row lock and a WAL record on PostgreSQL). A
        navigator makes it to learn whether the registry would have recorded heartbeats."""
        first = select(func.min(Machine.id)).scalar_subquery()
        self.session.execute(
            update(Machine)
            .where(Machine.id == first)
            .values(last_heartbeat_at=Machine.last_heartbeat_at)
            .execution_options(synchronize_session=False)
        )

    def retire_machine(self, name: str) -> None:
        self._write()
        machine = self._machine(name)
        machine.retired_at = utcnow()
        self.log_change(name)
        record_change(self.session, "retire", name)

    # --- assignments -----------------------------------------------------------------------

    def _assignment(self, machine: str, role: str) -> Assignment:
        assignment = self.session.execute(
            select(Assignment)
            .join(Machine)
            .where(Machine.name == machine, Assignment.role == role)
            .options(selectinload(Assignment.tools))
        ).scalar_one_or_none()
        if assignment is None:
            raise NotFound("No such assignment.")
        return assignment

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
    ) -> AssignmentRecord:
        """Register an assignment (adding the machine when new); registering again replaces its
        tools, keeps operators' confirmation marks, and restores it when it was retired.

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
        assignment.updated_at = utcnow()
        marks = {tool.name: tool.confirmation for tool in assignment.tools}
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
        """Keep ``machine`` within ``assignments`` assignments and ``tools`` tools, retired ones
        counted until they are pruned: a node renaming its roles left a retired row for each
        name, and its tools with it, without end. Room is made by dropping the machine's
        longest-retired assignments (never one a seat is placed on: that is an operator's
        record); past a bound with its live ones alone, ``Conflict``."""
        self.session.flush()
        rows = self.session.execute(
            select(Assignment.id, Assignment.retired_at, func.count(Tool.id), Seat.id)
            .join(Machine, Assignment.machine_id == Machine.id)
            .outerjoin(Tool, Tool.assignment_id == Assignment.id)
            .outerjoin(Seat, Seat.assignment_id == Assignment.id)
            .where(Machine.name == machine)
            .group_by(Assignment.id, Assignment.retired_at, Seat.id)
        ).all()
        held, count = len(rows), sum(int(row[2]) for row in rows)
        dropped: list[int] = []
        retired = sorted(
            (at, assignment_id, tool_count)
            for assignment_id, at, tool_count, seat in rows
            if at is not None and seat is None
        )
        for _, assignment_id, tool_count in retired:
            if held <= assignments and count <= tools:
                break
            dropped.append(assignment_id)
            held, count = held - 1, count - int(tool_count)
        if held > assignments or count > tools:
            raise Conflict(
                f"The machine would serve more than {assignments} assignments or {tools} tools,"
                " the bound on what one node registers; an operator raises"
                " MESHNAV_NODE_MAX_ASSIGNMENTS or MESHNAV_NODE_MAX_TOOLS, or the node serves fewer."
            )
        if dropped:
            for assignment_id in dropped:
                self.session.delete(self.session.get_one(Assignment, assignment_id))
            self.session.flush()
            self.log_change(machine)

    def prune_retired(self, older_than: datetime) -> int:
        """Forget the assignments retired before ``older_than``, their tools with them (never one
        a seat is placed on). Each machine they belonged to is logged as changed, so that every
        navigator's view reads it again and lets them go. Returns how many assignments went.

        The catalogue writers' lock is taken only when there is something to prune, and what
        goes is read again under it."""
        due = (
            select(Assignment.id, Machine.name)
            .join(Machine, Assignment.machine_id == Machine.id)
            .outerjoin(Seat, Seat.assignment_id == Assignment.id)
            .where(Assignment.retired_at < older_than, Seat.id.is_(None))
        )
        if self.session.execute(due.limit(1)).first() is None:
            return 0
        self._write()
        rows = self.session.execute(due).all()
        if not rows:
            return 0
        ids = [int(assignment_id) for assignment_id, _ in rows]
        for start in range(0, len(ids), 500):  # bound the statement's parameters
            chunk = ids[start : start + 500]
            self.session.execute(delete(Tool).where(Tool.assignment_id.in_(chunk)))
            self.session.execute(delete(Assignment).where(Assignment.id.in_(chunk)))
        for machine in sorted({str(name) for _, name in rows}):
            self.log_change(machine)
        return len(ids)

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

    def _seat_placed(self, name: str, machine: str, role: str) -> bool:
        """Whether an operator placed the mesh seat ``name`` on ``machine``'s assignment ``role``
        (the only place a node may serve it from: SPEC §6, ADR 0032)."""
        placed = self.session.execute(
            select(Machine.name, Assignment.role)
            .select_from(Seat)
            .join(Assignment, Seat.assignment_id == Assignment.id)
            .join(Machine, Assignment.machine_id == Machine.id)
            .where(Seat.name == name)
        ).one_or_none()
        return placed is not None and tuple(placed) == (machine, role)

    def seats(self) -> dict[str, tuple[str, str] | None]:
        rows = self.session.execute(
            select(Seat.name, Machine.name, Assignment.role)
            .outerjoin(Assignment, Seat.assignment_id == Assignment.id)
            .outerjoin(Machine, Assignment.machine_id == Machine.id)
            .order_by(Seat.name)
        )
        return {seat: (m, r) if m is not None else None for seat, m, r in rows}

    # --- reading the whole catalogue -------------------------------------------------------

    def catalog_rows(self, machine: str | None = None) -> list[CatalogRow]:
        """Every assignment (of one machine, when named) and its tools as flat rows, ordered by
        machine, role and tool, in one Core query.

        No ORM entities and no JSON decoding here: at 100,000 tools that is most of the cost.
        """
        self.session.flush()
        return list(_catalog_rows(self.session.connection().execute(_catalog_query(machine))))

    def stream_catalog_rows(self, *, batch: int = CATALOG_ROWS_BATCH) -> Iterator[CatalogRow]:
        """The whole catalogue as ``catalog_rows`` gives it, read ``batch`` rows at a time (a
        server-side cursor on PostgreSQL) while the caller's transaction lasts: the navigator's
        load, which builds as it reads instead of holding every row at once.

        Over a network (PostgreSQL) the next batch is fetched in a thread while the caller works
        on the current one: the server's work and the wait for it overlap the caller's.
        """
        self.session.flush()
        connection = self.session.connection().execution_options(yield_per=batch)
        result = connection.execute(_catalog_query(None))
        try:
            if connection.dialect.name == "sqlite":  # a local file: nothing to wait for
                yield from _catalog_rows(result)
            else:
                yield from _catalog_rows(_read_ahead(result.partitions()))
        finally:
            result.close()  # a reader that stops early closes the server-side cursor too

    def assignment(self, machine: str, role: str) -> AssignmentRecord:
        return self._record(self._assignment(machine, role))

    def assignments(self, machine: str | None = None) -> list[AssignmentRecord]:
        """Every assignment (of one machine, when named), retired ones included, tools loaded."""
        query = (
            select(Assignment)
            .join(Machine)
            .options(selectinload(Assignment.tools), selectinload(Assignment.machine))
            .order_by(Machine.name, Assignment.role)
        )
        if machine is not None:
            query = query.where(Machine.name == machine)
        assignments = self.session.execute(query).scalars().all()
        seats = {
            assignment_id: name
            for name, assignment_id in self.session.execute(
                select(Seat.name, Seat.assignment_id).where(Seat.assignment_id.is_not(None))
            )
        }
        return [_assignment_record(a, seats.get(a.id)) for a in assignments]

    def _record(self, assignment: Assignment) -> AssignmentRecord:
        seat = self.session.execute(
            select(Seat.name).where(Seat.assignment_id == assignment.id)
        ).scalar_one_or_none()
        return _assignment_record(assignment, seat)


def _catalog_query(machine: str | None) -> Select[*tuple[Any, ...]]:
    """Assignments (of one machine, when named) joined with their tools and seat, flat. An
    assignment of a retired machine reads as retired: nothing of it is live, in search, in the
    seats or in the views."""
    query = (
        select(
            Machine.name,
            Assignment.role,
            Assignment.module,
            Assignment.kind,
            Assignment.endpoint,
            cast(Assignment.scopes, Text),
            or_(Assignment.retired_at.is_not(None), Machine.retired_at.is_not(None)),
            Seat.name,
            Tool.name,
            cast(Tool.definition, Text),
            Tool.contract_digest,
            Tool.confirmation,
        )
        .select_from(Assignment)
        .join(Machine, Assignment.machine_id == Machine.id)
        .outerjoin(Tool, Tool.assignment_id == Assignment.id)
        .outerjoin(Seat, Seat.assignment_id == Assignment.id)
        .order_by(Machine.name, Assignment.role, Tool.name)
    )
    return query if machine is None else query.where(Machine.name == machine)


_END = object()


def _read_ahead(
    chunks: Iterator[Sequence[Row[*tuple[Any, ...]]]],
) -> Iterator[Row[*tuple[Any, ...]]]:
    """The rows of ``chunks``, the next chunk fetched by a thread while these are consumed (at
    most two ahead). An error fetching is raised here, in the caller's thread; a caller that
    stops early stops the thread, and the thread is over before this generator is."""
    ahead: queue.Queue[object] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                ahead.put(item, timeout=0.1)
            except queue.Full:
                continue
            return True
        return False

    def fetch() -> None:
        try:
            for chunk in chunks:
                if not put(chunk):
                    return
        except BaseException as error:  # raised again in the caller's thread
            put(error)
            return
        put(_END)

    thread = threading.Thread(target=fetch, name="meshnav-catalogue-rows", daemon=True)
    thread.start()
    try:
        while (item := ahead.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield from item  # type: ignore[misc]  # a chunk of rows
    finally:
        stop.set()
        thread.join()


def _catalog_rows(rows: Iterable[Row[*tuple[Any, ...]]]) -> Iterator[CatalogRow]:
    """``_catalog_query``'s rows as ``CatalogRow``s, each assignment's scopes decoded once per
    distinct value (every tool's row repeats them)."""
    decoded: dict[str, tuple[str, ...]] = {}
    for row in rows:
        text = row[5]
        scopes = decoded.get(text)
        if scopes is None:
            scopes = decoded[text] = tuple(json.loads(text))
        yield CatalogRow._make((*row[:5], scopes, *row[6:]))


def _assignment_record(assignment: Assignment, seat: str | None) -> AssignmentRecord:
    return AssignmentRecord(
        machine=assignment.machine.name,
        role=assignment.role,
        module=assignment.module,
        kind=assignment.kind,
        endpoint=assignment.endpoint,
        seat=seat,
        scopes=tuple(assignment.scopes),
        retired=assignment.retired_at is not None,
        tools=tuple(
            ToolRecord(
                name=t.name,
                definition=t.definition,
                contract_digest=t.contract_digest,
                confirmation=t.confirmation,
            )
            for t in assignment.tools
        ),
    )
