"""Reading the catalogue inside the caller's transaction: machines, node keys, assignments with
their tools, seats, revisions and the change log, as records. ``CatalogStore`` extends it with
the changes; a navigator's reads between transactions are ``registry.changelog``'s.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from registry import changelog
from registry.catalog_records import (
    AssignmentRecord,
    MachineRecord,
    assignment_record,
    machine_record,
)
from registry.catalog_rows import CATALOG_ROWS_BATCH, CatalogRow, read_rows, stream_rows
from registry.errors import NotFound
from registry.models import Assignment, Machine, NodeKey, Revision, Seat

__all__ = ["CatalogReader"]


class CatalogReader:
    """Reads the catalogue inside the caller's transaction; changes nothing."""

    def __init__(self, session: Session) -> None:
        self.session = session

    # --- revisions and the change log ------------------------------------------------------

    def revision(self, counter: str) -> int:
        return int(
            self.session.execute(
                select(Revision.value).where(Revision.name == counter)
            ).scalar_one()
        )

    def last_change(self) -> int:
        return changelog.last_change(self.session)

    def changes_since(self, after: int, *, limit: int = 1000) -> list[tuple[int, str]]:
        rows = self.session.execute(changelog.CHANGES_SINCE, {"after": after, "limit": limit})
        return [(int(i), str(m)) for i, m, _ in rows]

    # --- machines --------------------------------------------------------------------------

    def _machine(self, name: str) -> Machine:
        machine = self.session.execute(
            select(Machine).where(Machine.name == name)
        ).scalar_one_or_none()
        if machine is None:
            raise NotFound("No such machine.")
        return machine

    def machine(self, name: str) -> MachineRecord:
        return machine_record(self._machine(name))

    def machines(self) -> list[MachineRecord]:
        return [MachineRecord(*row) for row in self.session.execute(changelog.MACHINE_RECORDS)]

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

    # --- assignments and seats -------------------------------------------------------------

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
        return [assignment_record(a, seats.get(a.id)) for a in assignments]

    def _record(self, assignment: Assignment) -> AssignmentRecord:
        seat = self.session.execute(
            select(Seat.name).where(Seat.assignment_id == assignment.id)
        ).scalar_one_or_none()
        return assignment_record(assignment, seat)

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
        machine, role and tool, in one Core query (``registry.catalog_rows``)."""
        self.session.flush()
        return read_rows(self.session.connection(), machine)

    def stream_catalog_rows(self, *, batch: int = CATALOG_ROWS_BATCH) -> Iterator[CatalogRow]:
        """The whole catalogue as ``catalog_rows`` gives it, read ``batch`` rows at a time while
        the caller's transaction lasts: the navigator's load, which builds as it reads."""
        self.session.flush()
        yield from stream_rows(self.session.connection(), batch=batch)
