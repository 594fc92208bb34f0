"""Retired assignments are pruned after their retention, and a node's machine is held to its
bound (issue 26, item 6; ADR 0032), on SQLite and on PostgreSQL."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from navigator.catalog.view import Catalog
from registry import CatalogStore, Conflict, NewTool, Registry
from registry.changelog import PRUNED_THROUGH
from registry.models import utcnow


def tools(*names: str) -> list[NewTool]:
    return [NewTool(name=n, definition={"name": n}, contract_digest=f"d-{n}") for n in names]


def _retire(registry: Registry, machine: str, role: str) -> datetime:
    """Retire ``machine/role``; a moment that comes after its retirement and before the next."""
    with registry.transaction() as session:
        CatalogStore(session).retire_assignment(machine, role)
    time.sleep(0.01)
    after = utcnow()
    time.sleep(0.01)
    return after


def _held(registry: Registry) -> dict[str, tuple[bool, int]]:
    with registry.read_transaction() as session:
        return {
            f"{a.machine}/{a.role}": (a.retired, len(a.tools))
            for a in CatalogStore(session).assignments()
        }


async def test_retired_assignments_past_their_retention_go_and_every_view_follows(
    registry: Registry,
) -> None:
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("db1", "old", module="m", tools=tools("a", "b"))
        store.put_assignment("db1", "recent", module="m", tools=tools("a"))
        store.put_assignment("db1", "live", module="m", tools=tools("a"))
        store.put_assignment("web1", "notes", module="m", tools=tools("q"), seat="notes")
        store.put_assignment("web1", "gone", module="m", tools=tools("q"))
    _retire(registry, "web1", "notes")  # the seat's placement: an operator's record, kept
    _retire(registry, "web1", "gone")
    cutoff = _retire(registry, "db1", "old")
    _retire(registry, "db1", "recent")
    view = Catalog(registry)  # a navigator's view, loaded before the prune
    await view.load()
    assert view.assignment("db1", "old") is not None
    with registry.transaction() as session:
        store = CatalogStore(session)
        start = store.last_change()
        assert store.prune_retired(cutoff) == 2
        assert store.prune_retired(cutoff) == 0  # the second navigator finds nothing left
        logged = [machine for _, machine in store.changes_since(start)]
    assert sorted(logged) == ["db1", "web1"]
    assert _held(registry) == {
        "db1/live": (False, 1),
        "db1/recent": (True, 1),
        "web1/notes": (True, 1),
    }
    assert await view.catch_up() == 2  # from the log: the pruned rows leave the view
    assert view.assignment("db1", "old") is None
    assert view.assignment("web1", "gone") is None
    assert view.assignment("db1", "live") is not None
    with registry.transaction() as session:  # the log's own pruning is as it was
        store = CatalogStore(session)
        store.prune_changes(utcnow())
        assert store.last_change() > start  # the newest entry is always kept
        assert start <= session.execute(PRUNED_THROUGH).scalar_one() < store.last_change()


def test_a_machine_past_its_bound_drops_its_longest_retired_first(registry: Registry) -> None:
    bound = {"assignments": 3, "tools": 5}
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("db1", "live", module="m", tools=tools("a"))
        for role in ("r1", "r2", "r3"):
            store.put_assignment("db1", role, module="m", tools=tools("a"), by_node=True)
    for role in ("r1", "r2", "r3"):
        _retire(registry, "db1", role)
    with registry.transaction() as session:
        CatalogStore(session).hold_to("db1", **bound)
    assert _held(registry) == {
        "db1/live": (False, 1),
        "db1/r2": (True, 1),
        "db1/r3": (True, 1),
    }

    # live tools alone past the bound: refused, the transaction with them
    def past_the_bound() -> None:
        with registry.transaction() as session:
            store = CatalogStore(session)
            store.put_assignment("db1", "big", module="m", tools=tools(*"abcde"), by_node=True)
            store.hold_to("db1", **bound)

    with pytest.raises(Conflict, match="MESHNAV_NODE_MAX_TOOLS"):
        past_the_bound()
    assert set(_held(registry)) == {"db1/live", "db1/r2", "db1/r3"}
