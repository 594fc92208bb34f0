"""Machines, assignments, seats, tools and the change log, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from registry import (
    UNWRITABLE,
    CatalogStore,
    Conflict,
    NewTool,
    NotFound,
    Registry,
    RegistryUnavailable,
    SeatNotPlaced,
)
from registry.audit import AuditFilter, AuditStore
from registry.changelog import PRUNED_THROUGH

pytestmark = pytest.mark.xdist_group("postgres")


def tool(name: str, digest: str = "d" * 64) -> NewTool:
    return NewTool(
        name=name,
        definition={"name": name, "inputSchema": {"type": "object"}},
        contract_digest=digest,
    )


def test_registering_a_node_again_is_idempotent(registry: Registry) -> None:
    for _ in range(3):
        with registry.transaction() as session:
            store = CatalogStore(session)
            key = store.register_node("db1", advertise_url="http://127.0.0.1:1", heartbeat_s=5)
            store.put_assignment(
                "db1", "sqlite", module="sqlite", tools=[tool("query"), tool("list_tables")]
            )
    with registry.transaction() as session:
        store = CatalogStore(session)
        assert [m.name for m in store.machines()] == ["db1"]
        assignments = store.assignments()
        assert len(assignments) == 1
        assert [t.name for t in assignments[0].tools] == ["list_tables", "query"]
        assert store.node_key("db1") == key and len(key) == 32


def test_registering_again_replaces_tools_and_keeps_operator_marks(registry: Registry) -> None:
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("db1", "pg", module="postgres", tools=[tool("query"), tool("drop")])
        store.mark_tool("db1", "pg", "drop", "elicit-only")
    with registry.transaction() as session:
        CatalogStore(session).put_assignment(
            "db1", "pg", module="postgres", tools=[tool("drop", "e" * 64)]
        )
    with registry.transaction() as session:
        (assignment,) = CatalogStore(session).assignments()
    assert [(t.name, t.confirmation, t.contract_digest) for t in assignment.tools] == [
        ("drop", "elicit-only", "e" * 64)
    ]


def test_a_retired_assignment_is_restored_by_registering_it_again(registry: Registry) -> None:
    with registry.transaction() as session:
        CatalogStore(session).put_assignment("db1", "pg", module="postgres", tools=[tool("query")])
        CatalogStore(session).retire_assignment("db1", "pg")
    with registry.transaction() as session:
        assert CatalogStore(session).assignment("db1", "pg").retired
        CatalogStore(session).put_assignment("db1", "pg", module="postgres", tools=[tool("query")])
    with registry.transaction() as session:
        assert not CatalogStore(session).assignment("db1", "pg").retired


def test_a_retired_machine_cannot_register_itself_back(registry: Registry) -> None:
    with registry.transaction() as session:
        CatalogStore(session).register_node("db1", advertise_url="http://h:1", heartbeat_s=5)
        CatalogStore(session).retire_machine("db1")
    with pytest.raises(Conflict), registry.transaction() as session:
        CatalogStore(session).register_node("db1", advertise_url="http://h:1", heartbeat_s=5)
    with registry.transaction() as session:
        CatalogStore(session).add_machine("db1")
        assert CatalogStore(session).machine("db1").retired_at is None


def test_a_seat_moves_between_machines_and_keeps_its_name(registry: Registry) -> None:
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("web1", "backup", module="stdio", tools=[tool("run")], seat="backup")
        store.put_assignment("web2", "backup", module="stdio", tools=[tool("run")])
    with registry.transaction() as session:
        assert CatalogStore(session).seats() == {"backup": ("web1", "backup")}
        CatalogStore(session).place_seat("backup", "web2", "backup")
    with registry.transaction() as session:
        store = CatalogStore(session)
        assert store.seats() == {"backup": ("web2", "backup")}
        holders = {a.machine: (a.holder, a.retired) for a in store.assignments()}
    # the old instance is retired, not left live as web1/backup under web1's grants (a review)
    assert holders == {"web1": ("web1", True), "web2": ("mesh", False)}


def test_a_removed_seat_retires_its_instance_and_is_served_nowhere(registry: Registry) -> None:
    """There was no way to remove a mesh seat (issue 38). Its instance, left live, would become
    ``web1/backup`` under web1's grants; a node serving it again is refused."""
    backup = {"module": "stdio", "tools": [tool("run")], "seat": "backup"}
    with registry.transaction() as session:
        CatalogStore(session).put_assignment("web1", "backup", **backup)
    with registry.transaction() as session:
        CatalogStore(session).remove_seat("backup")
    with registry.transaction() as session:
        store = CatalogStore(session)
        assert store.seats() == {}
        assert store.assignment("web1", "backup").retired
        with pytest.raises(SeatNotPlaced):
            store.put_assignment("web1", "backup", **backup, by_node=True)
        with pytest.raises(NotFound):
            store.remove_seat("backup")
        [event] = AuditStore(session).events(AuditFilter(action="seat.remove"))
    assert event.entry.target == "mesh/backup"


@pytest.mark.parametrize("retired", ["assignment", "machine"])
def test_a_seat_is_not_moved_onto_a_retired_assignment(registry: Registry, retired: str) -> None:
    """Moving a seat retires its live instance: moved onto a retired assignment (or one of a
    retired machine), the seat was left with no live instance at all (a review)."""
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("web1", "backup", module="stdio", tools=[tool("run")], seat="backup")
        store.put_assignment("web2", "backup", module="stdio", tools=[tool("run")])
        if retired == "assignment":
            store.retire_assignment("web2", "backup")
        else:
            store.retire_machine("web2")
    with pytest.raises(Conflict), registry.transaction() as session:
        CatalogStore(session).place_seat("backup", "web2", "backup")
    with registry.transaction() as session:
        store = CatalogStore(session)
        assert store.seats() == {"backup": ("web1", "backup")}
        assert not store.assignment("web1", "backup").retired


def test_a_node_serves_a_seat_only_where_an_operator_placed_it(registry: Registry) -> None:
    """Else any node token could take a free seat, and every grant on it (``mesh/*/*``); placing
    and moving a seat are operators' acts (ADR 0003, ADR 0032)."""
    backup = {"module": "stdio", "tools": [tool("run")], "seat": "backup", "by_node": True}
    with registry.transaction() as session, pytest.raises(SeatNotPlaced):
        CatalogStore(session).put_assignment("web1", "backup", **backup)  # free: not taken
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.place_seat("backup", "web1", "backup")  # ahead of the node: added, no tools
        assert store.assignment("web1", "backup").tools == ()
        store.put_assignment("web1", "backup", **backup)  # placed here: served
        store.put_assignment("web1", "backup", **backup)  # again: kept
        with pytest.raises(SeatNotPlaced):
            store.put_assignment("web2", "backup", **backup)
        with pytest.raises(SeatNotPlaced):
            store.put_assignment("web1", "other", **backup)  # its machine, another role
    with registry.transaction() as session:
        store = CatalogStore(session)
        assert store.seats() == {"backup": ("web1", "backup")}
        store.retire_machine("web1")
    with registry.transaction() as session, pytest.raises(SeatNotPlaced):
        CatalogStore(session).put_assignment("web2", "backup", **backup)  # freed: still not
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("web3", "backup", module="stdio", tools=[tool("run")], seat="backup")
        assert store.seats() == {"backup": ("web3", "backup")}  # an operator moves it


def test_a_retired_machines_assignments_read_as_retired(registry: Registry) -> None:
    """Search, the seats and the views all read the catalogue rows: nothing of a retired machine
    is live in any of them."""
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("db1", "pg", module="postgres", tools=[tool("q")])
        store.put_assignment("web1", "notes", module="sqlite", tools=[tool("q")], seat="notes")
        store.retire_machine("web1")
    with registry.transaction() as session:
        rows = CatalogStore(session).catalog_rows()
    assert {(row.machine, bool(row.retired)) for row in rows} == {("db1", False), ("web1", True)}


def test_a_node_does_not_bring_back_a_machine_an_operator_retired(registry: Registry) -> None:
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("db1", "pg", module="postgres", tools=[tool("q")], by_node=True)
        store.retire_machine("db1")
    with registry.transaction() as session, pytest.raises(Conflict):
        CatalogStore(session).put_assignment(
            "db1", "pg", module="postgres", tools=[tool("q")], by_node=True
        )


def test_every_change_is_logged_by_machine(registry: Registry) -> None:
    with registry.transaction() as session:
        start = CatalogStore(session).last_change()
        store = CatalogStore(session)
        store.put_assignment("db1", "pg", module="postgres", tools=[tool("q")])
        store.put_assignment("db2", "pg", module="postgres", tools=[tool("q")])
        store.retire_assignment("db1", "pg")
    with registry.transaction() as session:
        changes = CatalogStore(session).changes_since(start)
    assert [m for _, m in changes] == ["db1", "db2", "db1"]
    assert [i for i, _ in changes] == sorted(i for i, _ in changes)


def test_change_log_ids_become_visible_in_the_order_they_were_given(registry: Registry) -> None:
    """A writer that took a log id first commits first: a navigator that read past a later id
    could otherwise never see the earlier one, committed after it (ADR 0008)."""
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("web1", "logs", module="logs", tools=[tool("q")])
        start = store.last_change()
    errors = _while_held(
        registry,
        lambda store: store.retire_assignment("web1", "logs"),  # holds its log id uncommitted
        lambda store: store.put_assignment("web2", "logs", module="logs", tools=[tool("q")]),
    )
    with registry.transaction() as session:
        changes = CatalogStore(session).changes_since(start)
    assert errors == []
    assert [machine for _, machine in changes] == ["web1", "web2"]


def _while_held(
    registry: Registry,
    first: Callable[[CatalogStore], object],
    then: Callable[[CatalogStore], object],
) -> list[str]:
    """``first`` in a transaction held open for a second after its change, and meanwhile
    ``then`` in a transaction of its own; the errors ``then`` met."""
    changed = threading.Event()
    errors: list[str] = []

    def holder() -> None:
        with registry.transaction() as session:
            first(CatalogStore(session))
            changed.set()
            time.sleep(1.0)

    def other() -> None:
        try:
            with registry.transaction() as session:
                then(CatalogStore(session))
        except Conflict as error:
            errors.append(str(error))

    held = threading.Thread(target=holder)
    held.start()
    assert changed.wait(10)
    second = threading.Thread(target=other)
    second.start()
    held.join(30)
    second.join(30)
    return errors


def test_a_re_registration_waiting_for_a_marks_commit_keeps_the_mark(registry: Registry) -> None:
    """A writer reads inside its transaction: on SQLite, pysqlite's own BEGIN came only at the
    first write, so a re-registration read the marks before a concurrent operator's mark
    committed, then wrote its tools back with the old ones."""
    tools = [tool("query"), tool("drop")]
    with registry.transaction() as session:
        CatalogStore(session).put_assignment("db1", "pg", module="postgres", tools=tools)
    errors = _while_held(
        registry,
        lambda store: store.mark_tool("db1", "pg", "drop", "always"),
        lambda store: store.put_assignment("db1", "pg", module="postgres", tools=tools),
    )
    with registry.transaction() as session:
        (assignment,) = CatalogStore(session).assignments()
    assert errors == []
    assert {t.name: t.confirmation for t in assignment.tools} == {
        "drop": "always",
        "query": "auto",
    }


def test_two_registrations_of_one_new_machine_at_once_both_succeed(registry: Registry) -> None:
    """The second registration reads the machine after the first committed it: on SQLite it
    read before (no transaction yet), found none, and its insert was a Conflict."""

    def register(store: CatalogStore) -> None:
        store.put_assignment("web1", "logs", module="logs", tools=[tool("q")])

    assert _while_held(registry, register, register) == []
    with registry.transaction() as session:
        assert [m.name for m in CatalogStore(session).machines()] == ["web1"]


def test_a_read_transaction_neither_waits_for_nor_holds_back_a_writer(registry: Registry) -> None:
    """Reads (a navigator's load and catch-up, the admin API's lists) take no write lock."""
    with registry.transaction() as session:
        CatalogStore(session).put_assignment("web1", "logs", module="logs", tools=[tool("q")])
    with registry.transaction() as writing:
        CatalogStore(writing).retire_assignment("web1", "logs")
        with registry.read_transaction() as session:  # while the writer holds its lock
            assert [a.retired for a in CatalogStore(session).assignments()] == [False]
    with registry.read_transaction() as reading:
        assert [a.retired for a in CatalogStore(reading).assignments()] == [True]
        with registry.transaction() as session:  # while the reader holds its snapshot
            CatalogStore(session).put_assignment("web1", "logs", module="logs", tools=[])
    with registry.read_transaction() as session:
        assert [a.retired for a in CatalogStore(session).assignments()] == [False]


def test_pruning_keeps_the_newest_entry_so_ids_are_never_reused(registry: Registry) -> None:
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("db1", "pg", module="postgres", tools=[tool("q")])
        store.put_assignment("db1", "pg", module="postgres", tools=[tool("q")])
        newest = store.last_change()
        store.prune_changes(datetime.now(UTC) + timedelta(days=1))
    with registry.transaction() as session:
        store = CatalogStore(session)
        assert store.last_change() == newest
        store.put_assignment("db1", "pg", module="postgres", tools=[tool("q")])
        assert store.last_change() == newest + 1


def test_pruning_forgets_old_changes_and_marks_how_far(registry: Registry) -> None:
    with registry.transaction() as session:
        store = CatalogStore(session)
        for role in ("pg", "sqlite", "pg"):
            store.put_assignment("db1", role, module=role, tools=[tool("q")])
        newest = store.last_change()
        assert store.prune_changes(datetime.now(UTC) - timedelta(hours=1)) == 0  # none that old
    assert registry.rows(PRUNED_THROUGH, {}) == [(0,)]
    with registry.transaction() as session:
        assert CatalogStore(session).prune_changes(datetime.now(UTC) + timedelta(days=1)) == 2
    assert registry.rows(PRUNED_THROUGH, {}) == [(newest - 1,)]
    with registry.transaction() as session:
        store = CatalogStore(session)
        assert store.changes_since(0) == [(newest, "db1")]  # the newest is always kept
        assert store.prune_changes(datetime.now(UTC) + timedelta(days=1)) == 0
    assert registry.rows(PRUNED_THROUGH, {}) == [(newest - 1,)]  # the mark never goes back


def test_heartbeat_records_the_time(registry: Registry) -> None:
    with registry.transaction() as session:
        CatalogStore(session).register_node("db1", advertise_url="http://h:1", heartbeat_s=5)
    with registry.transaction() as session:
        at = CatalogStore(session).heartbeat("db1")
    with registry.transaction() as session:
        seen = CatalogStore(session).machine("db1").last_heartbeat_at
    assert seen is not None and abs((seen - at).total_seconds()) < 1 and seen.tzinfo is not None


def test_the_streamed_catalogue_is_the_listed_one_in_small_batches(registry: Registry) -> None:
    with registry.transaction() as session:
        store = CatalogStore(session)
        for machine in ("m1", "m2", "m3"):
            store.put_assignment(
                machine, "app", module="app", tools=[tool(f"t{n}") for n in range(7)]
            )
    with registry.transaction() as session:
        store = CatalogStore(session)
        listed = store.catalog_rows()
        assert list(store.stream_catalog_rows(batch=4)) == listed
        assert len(listed) == 21
        first = next(iter(store.stream_catalog_rows(batch=2)))  # a reader stopping early
        assert first == listed[0]
        assert store.last_change() > 0  # and the transaction goes on


def test_rows_read_ahead_keep_their_order_and_raise_in_the_reader() -> None:
    import threading

    from registry.catalog_rows import _read_ahead

    chunks = [[(n, m) for m in range(3)] for n in range(50)]
    assert list(_read_ahead(iter(chunks))) == [row for chunk in chunks for row in chunk]

    def failing() -> Iterator[list[tuple[int, int]]]:
        yield [(1, 1)]
        raise RuntimeError("connection lost")

    with pytest.raises(RuntimeError, match="connection lost"):
        list(_read_ahead(failing()))
    reader = _read_ahead(iter(chunks))
    assert next(reader) == (0, 0)
    reader.close()  # stops and joins its thread
    assert not [t for t in threading.enumerate() if t.name == "meshnav-catalogue-rows"]


@pytest.mark.parametrize("machines", [0, 1])
def test_a_write_check_writes_pages_as_a_heartbeat_does(registry: Registry, machines: int) -> None:
    """A full disk refuses a heartbeat's page: the check must write one too, or it commits where
    heartbeats fail (SQLite writes no page for a value written onto itself). It changes no
    heartbeat and no pruning mark, with or without a machine."""
    if machines:
        with registry.transaction() as session:
            CatalogStore(session).register_node("db1", advertise_url="http://h:1", heartbeat_s=1.4)
    with registry.transaction() as session:
        before = (CatalogStore(session).machines(), session.execute(PRUNED_THROUGH).scalar())
    held = None if registry.is_postgres else sqlite3.connect(registry.engine.url.database or "")
    if held is not None:  # the log emptied, and kept open (the last connection closed ends it)
        held.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with registry.transaction() as session:
        CatalogStore(session).check_writes()
    with registry.transaction() as session:
        after = (CatalogStore(session).machines(), session.execute(PRUNED_THROUGH).scalar())
    assert after == before
    if held is not None:
        (_, frames, _), *_ = held.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        held.close()
        assert frames > 0  # pages went to the write-ahead log


def test_a_write_check_changes_nothing_and_fails_while_another_holds_the_row(
    registry: Registry,
) -> None:
    """``check_writes`` writes as a heartbeat would: it changes no heartbeat, and it is refused
    (``RegistryUnavailable``) while another transaction holds what a heartbeat would write."""
    with registry.transaction() as session:
        CatalogStore(session).register_node("db1", advertise_url="http://h:1", heartbeat_s=5)
    with registry.transaction() as session:
        before = CatalogStore(session).machine("db1").last_heartbeat_at
    with registry.transaction() as session:
        CatalogStore(session).check_writes()
    with registry.transaction() as session:
        assert CatalogStore(session).machine("db1").last_heartbeat_at == before
    holding = threading.Event()
    release = threading.Event()

    def hold() -> None:  # another process's writer, holding the heartbeat's row (or the file)
        with registry.transaction() as session:
            CatalogStore(session).heartbeat("db1")
            session.flush()
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)
        with pytest.raises(RegistryUnavailable) as refused, registry.transaction() as session:
            CatalogStore(session).check_writes()
        assert refused.value.writes  # "cannot be written": it may well be read meanwhile
        assert str(refused.value) == UNWRITABLE
    finally:
        release.set()
        holder.join()
