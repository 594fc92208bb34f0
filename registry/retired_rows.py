"""Retired catalogue rows: how many a machine keeps, and when they go (ADR 0029's growth bounds).

A node renaming its roles leaves a retired assignment for each old name, its tools with it; an
operator's retirement leaves one too. ``hold_to`` holds a machine to its bounds and
``prune_retired`` forgets what retention lets go, each through the ``CatalogStore`` given (its
session, its writers' lock, its change log), which calls them as its own methods.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import delete, func, select

from registry.errors import Conflict
from registry.models import Assignment, Machine, Seat, Tool

if TYPE_CHECKING:
    from registry.catalog import CatalogStore

__all__ = ["hold_to", "prune_retired"]


def hold_to(store: CatalogStore, machine: str, *, assignments: int, tools: int) -> None:
    """Keep ``machine`` within ``assignments`` assignments and ``tools`` tools, retired ones
    counted until they are pruned: a node renaming its roles left a retired row for each
    name, and its tools with it, without end. Room is made by dropping the machine's
    longest-retired assignments (never one a seat is placed on: that is an operator's
    record); past a bound with its live ones alone, ``Conflict``."""
    store.session.flush()
    rows = store.session.execute(
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
            store.session.delete(store.session.get_one(Assignment, assignment_id))
        store.session.flush()
        store.log_change(machine)


def prune_retired(store: CatalogStore, older_than: datetime) -> int:
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
    if store.session.execute(due.limit(1)).first() is None:
        return 0
    store._write()
    rows = store.session.execute(due).all()
    if not rows:
        return 0
    ids = [int(assignment_id) for assignment_id, _ in rows]
    for start in range(0, len(ids), 500):  # bound the statement's parameters
        chunk = ids[start : start + 500]
        store.session.execute(delete(Tool).where(Tool.assignment_id.in_(chunk)))
        store.session.execute(delete(Assignment).where(Assignment.id.in_(chunk)))
    for machine in sorted({str(name) for _, name in rows}):
        store.log_change(machine)
    return len(ids)
