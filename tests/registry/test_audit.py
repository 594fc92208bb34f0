"""The audit trail's store, on SQLite and PostgreSQL: chains per instance, changes recorded in
their own transactions, filters, retention, and a verify that finds rows altered by hand."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import text

from registry import AccessStore, CatalogStore, NotFound, Registry
from registry.audit import ACTOR, GENESIS, AuditEntry, AuditFilter, AuditStore
from registry.models import utcnow

pytestmark = pytest.mark.xdist_group("postgres")


def _entry(
    principal: str = "alice", target: str = "db1/postgres/query", **kw: object
) -> AuditEntry:
    return AuditEntry(utcnow(), principal, "call", target, "ok", **kw)  # type: ignore[arg-type]


def _verify(registry: Registry) -> dict[str, object]:
    with registry.read_transaction() as session:
        return AuditStore(session).verify()


def test_events_chain_per_instance_and_verify(registry: Registry) -> None:
    with registry.transaction() as session:
        first = AuditStore(session).append("nav-a", [_entry(), _entry(duration_ms=1.25)])
    with registry.transaction() as session:
        AuditStore(session).append("nav-b", [_entry("bob")])
        later = AuditStore(session).append("nav-a", [_entry(grant_id=3, grant_revision=7)])
    assert first[0].prev_hash == GENESIS and first[1].prev_hash == first[0].hash
    assert later[0].seq == 3 and later[0].prev_hash == first[1].hash
    assert _verify(registry) == {"instances": {"nav-a": 3, "nav-b": 1}, "problems": []}


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        ("UPDATE audit_events SET outcome = 'ok' WHERE seq = 3", "nav #3: the event was changed"),
        ("DELETE FROM audit_events WHERE seq = 2", "nav #3: an event before it is missing"),
        ("DELETE FROM audit_events WHERE seq = 3", "nav #2: events after it are missing"),
    ],
)
def test_verify_finds_a_row_altered_by_hand(
    registry: Registry, statement: str, problem: str
) -> None:
    with registry.transaction() as session:
        AuditStore(session).append("nav", [_entry(), _entry()])
        AuditStore(session).append(
            "nav", [AuditEntry(utcnow(), "alice", "call", "db1/x/y", "tool_not_granted")]
        )
    with registry.engine.begin() as connection:
        connection.execute(text(statement))
    assert problem in _verify(registry)["problems"]  # type: ignore[operator]


def test_changes_are_recorded_in_their_transaction_by_instance_and_actor(
    registry: Registry,
) -> None:
    with registry.transaction() as session:  # the command line's direct path: instance cli
        grant = AccessStore(session).grant("alice", "db1/*/*", effect="allow")
    registry.audit_instance = "nav-1"
    token = ACTOR.set("root")
    try:
        with registry.transaction() as session:
            AccessStore(session).revoke_grant(grant.id)
            CatalogStore(session).add_machine("db1")
    finally:
        ACTOR.reset(token)
    # a change rolled back leaves no event
    with pytest.raises(NotFound), registry.transaction() as session:
        AccessStore(session).revoke_grant(grant.id)
    with registry.read_transaction() as session:
        events = AuditStore(session).events(AuditFilter())
    seen = [(e.instance, e.entry.principal[:3], e.entry.action, e.entry.grant_id) for e in events]
    assert seen == [
        ("nav-1", "roo", "machine.add", None),
        ("nav-1", "roo", "grant.revoke", grant.id),
        ("cli", "os:", "grant.add", grant.id),
    ]
    assert events[-1].entry.grant_revision == grant.revision
    assert _verify(registry)["problems"] == []


def test_filters_patterns_and_paging(registry: Registry) -> None:
    with registry.transaction() as session:
        AuditStore(session).append(
            "nav",
            [
                _entry("alice", "db1/postgres/query"),
                _entry("bob", "db1/postgres/query"),
                _entry("alice", "web1/shell/run"),
                AuditEntry(utcnow(), "alice", "describe", "db1_x/a/b", "tool_not_granted"),
            ],
        )

    def targets(**wanted: object) -> list[str]:
        with registry.read_transaction() as session:
            found = AuditStore(session).events(AuditFilter(**wanted))  # type: ignore[arg-type]
        return [f"{e.entry.principal} {e.entry.target}" for e in found]

    assert targets(principal="alice", target="db1/*") == ["alice db1/postgres/query"]
    assert targets(target="db1_*") == ["alice db1_x/a/b"]  # '_' is no wildcard
    assert targets(action="describe", outcome="tool_not_granted") == ["alice db1_x/a/b"]
    newest = targets(limit=2)
    assert newest == ["alice db1_x/a/b", "alice web1/shell/run"]
    with registry.read_transaction() as session:
        last_id = AuditStore(session).events(AuditFilter(limit=2))[-1].id
    assert targets(before=last_id) == ["bob db1/postgres/query", "alice db1/postgres/query"]
    assert targets(since=utcnow() + timedelta(minutes=1)) == []


def test_prune_keeps_the_chain_verifiable(registry: Registry) -> None:
    old = AuditEntry(utcnow() - timedelta(days=40), "alice", "call", "a/b/c", "ok")
    with registry.transaction() as session:
        AuditStore(session).append("nav", [old, old, _entry()])
    with registry.transaction() as session:
        assert AuditStore(session).prune(utcnow() - timedelta(days=30)) == 2
    assert _verify(registry) == {"instances": {"nav": 1}, "problems": []}


def test_concurrent_writers_of_one_instance_extend_one_chain(registry: Registry) -> None:
    """Two processes of the command line (instance ``cli``) at once: the head's lock orders them."""
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for _ in range(10):
                with registry.transaction() as session:
                    AuditStore(session).append("cli", [_entry(f"p{n}")])
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    assert _verify(registry) == {"instances": {"cli": 30}, "problems": []}
