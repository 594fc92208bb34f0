"""The catalogue's change log: one entry per change to a machine's part of the catalogue, read by
every navigator to keep its view current whatever notifications it missed (ADR 0008); how far the
log is forgotten; and the two reads a navigator makes on every tick of following the registry.

Those two reads are single statements for ``Registry.rows`` (inline on SQLite, compiled once), not
ORM sessions on a worker thread; a navigator calls them as functions and gets records back. The
log's writes run in the catalogue store's transaction (``CatalogStore.log_change``, which takes the
catalogue writers' lock first).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from sqlalchemy import bindparam, delete, func, select, text, update
from sqlalchemy.orm import Session

from registry.catalog_records import MachineRecord
from registry.models import CatalogChange, Machine, Revision

if TYPE_CHECKING:
    from registry.database import Registry

__all__ = [
    "CHANGES_PRUNED",
    "CHANGES_SINCE",
    "MACHINE_RECORDS",
    "NOTIFY_CHANNEL",
    "PRUNED_THROUGH",
    "ChangeRecord",
    "ChangesSince",
    "append_change",
    "last_change",
    "prune_changes",
    "read_changes_since",
    "read_machine_records",
]

#: The PostgreSQL channel on which catalogue changes are announced.
NOTIFY_CHANNEL = "meshnav_catalog"

#: The revision counter naming the last log id pruned; and the one row that reads it.
CHANGES_PRUNED = "changes_pruned"
PRUNED_THROUGH = select(Revision.value).where(Revision.name == CHANGES_PRUNED)
#: The log after ``after``, oldest first, at most ``limit`` entries, each with the pruning mark (a
#: view behind it must reload): ``(id, machine, pruned through)``, one read for both.
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
    Machine.instance_id,
    Machine.instance_since,
).order_by(Machine.name)


class ChangeRecord(NamedTuple):
    """One entry of the log: its id (the catalogue's revision once applied) and the machine whose
    part of the catalogue changed."""

    id: int
    machine: str


@dataclass(frozen=True, slots=True)
class ChangesSince:
    """The log's entries after a position, oldest first, read with the mark of how far the log is
    forgotten."""

    entries: tuple[ChangeRecord, ...]
    #: The last log id pruned: a view older than it may have missed entries that are gone, and
    #: reloads instead of catching up. 0 when nothing is pruned, or no entry follows (then there is
    #: nothing to catch up).
    pruned_through: int


def read_changes_since(registry: Registry, after: int, limit: int) -> ChangesSince:
    """The first ``limit`` log entries after ``after`` and the pruning mark, in one statement of
    the registry as it is now (``Registry.rows``): a navigator's catch-up, as often as it follows.
    ``limit`` entries back means there may be more: the caller reads on, or reloads."""
    rows = registry.rows(CHANGES_SINCE, {"after": after, "limit": limit})
    if not rows:
        return ChangesSince(entries=(), pruned_through=0)
    return ChangesSince(
        entries=tuple(ChangeRecord(int(id_), str(machine)) for id_, machine, _ in rows),
        pruned_through=int(rows[0][2] or 0),
    )


def read_machine_records(registry: Registry) -> list[MachineRecord]:
    """Every machine by name, read as ``read_changes_since`` reads: its heartbeats move without a
    logged change, so a navigator reads them on every tick."""
    return [MachineRecord(*row) for row in registry.rows(MACHINE_RECORDS, {})]


def append_change(session: Session, machine: str) -> None:
    """The log's entry for a change to ``machine``, in the caller's transaction, announced to
    navigators on PostgreSQL when it commits. The caller holds the catalogue writers' lock."""
    session.add(CatalogChange(machine=machine))
    session.flush()
    if session.get_bind().dialect.name == "postgresql":
        # Delivered on commit, with the change: navigators wake and read the log at once.
        session.execute(
            text("SELECT pg_notify(:channel, :machine)"),
            {"channel": NOTIFY_CHANNEL, "machine": machine},
        )


def last_change(session: Session) -> int:
    """The newest entry's id; 0 for an empty log."""
    return int(session.execute(select(func.coalesce(func.max(CatalogChange.id), 0))).scalar_one())


def prune_changes(session: Session, older_than: datetime) -> int:
    """Forget the log entries older than ``older_than``, always keeping the newest (ids must
    never be reused), and move the mark of how far the log is forgotten (``PRUNED_THROUGH``):
    a navigator whose view is older than the mark reloads instead of catching up. Returns how
    many entries went."""
    newest = last_change(session)
    through = session.execute(
        select(func.max(CatalogChange.id)).where(
            CatalogChange.at < older_than, CatalogChange.id < newest
        )
    ).scalar_one()
    if through is None:
        return 0
    # Everything up to the mark goes, an entry committed late with an older id included.
    removed = session.execute(delete(CatalogChange).where(CatalogChange.id <= through)).rowcount  # type: ignore[attr-defined]  # a DELETE's result is a CursorResult
    session.execute(
        update(Revision)
        .where(Revision.name == CHANGES_PRUNED, Revision.value < through)
        .values(value=through)
    )
    return int(removed)
