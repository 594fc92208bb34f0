"""``meshnav audit verify`` finds the oldest events removed, all but the newest, or all of them
(issue 35, item 11; ADR 0045), on SQLite and on the real PostgreSQL.

Retention's pruning was indistinguishable from a deletion by hand: verify took the first event
kept as the chain's start. Retention now records on the chain's head where it pruned.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from alembic import command
from sqlalchemy import text

from registry import Registry, migrate
from registry.audit import GENESIS, AuditEntry, AuditStore, chain_hash
from registry.database import alembic_config
from registry.models import utcnow

pytestmark = pytest.mark.xdist_group("postgres")


def _chain(registry: Registry, *, old: int = 0, new: int = 5) -> None:
    """``old`` events past a 30-day retention, then ``new`` recent ones, on instance ``nav``."""
    then = utcnow() - timedelta(days=40)
    entries = [AuditEntry(then, "alice", "call", f"db1/x/t{n}", "ok") for n in range(old)]
    entries += [AuditEntry(utcnow(), "bob", "call", f"db1/x/t{n}", "ok") for n in range(new)]
    with registry.transaction() as session:
        AuditStore(session).append("nav", entries)


def _problems(registry: Registry) -> list[str]:
    with registry.read_transaction() as session:
        return list(AuditStore(session).verify()["problems"])


def _by_hand(registry: Registry, statement: str) -> None:
    with registry.engine.begin() as connection:
        connection.execute(text(statement))


def _prune(registry: Registry, days: float = 30) -> int:
    with registry.transaction() as session:
        return AuditStore(session).prune(utcnow() - timedelta(days=days))


@pytest.mark.parametrize(
    ("kept_from", "problem"),
    [
        (3, "nav #3: the events before it are missing"),  # the oldest two
        (5, "nav #5: the events before it are missing"),  # all but the newest
        (6, "nav #5: its events are missing"),  # every one
    ],
)
def test_events_removed_by_hand_from_the_start_are_found(
    registry: Registry, kept_from: int, problem: str
) -> None:
    _chain(registry)
    assert _problems(registry) == []
    _by_hand(registry, f"DELETE FROM audit_events WHERE seq < {kept_from}")
    assert _problems(registry) == [problem]


def test_retention_records_where_it_pruned_and_verify_holds_the_rest_to_it(
    registry: Registry,
) -> None:
    _chain(registry, old=3, new=2)
    assert _prune(registry) == 3
    assert _problems(registry) == []
    _by_hand(registry, "DELETE FROM audit_events WHERE seq = 4")  # the oldest kept
    assert _problems(registry) == ["nav #5: the events before it are missing"]


def test_a_chain_retention_emptied_is_intact_and_one_emptied_by_hand_is_not(
    registry: Registry,
) -> None:
    _chain(registry, old=4, new=0)
    assert _prune(registry) == 4
    assert _problems(registry) == []  # pruned up to its head
    _chain(registry, old=0, new=2)
    _by_hand(registry, "DELETE FROM audit_events")
    assert _problems(registry) == ["nav #6: its events are missing"]


def test_retention_prunes_a_prefix_of_the_chain_whatever_order_times_were_written_in(
    registry: Registry,
) -> None:
    """A batch's events are timed when recorded and chained when written, so an older time can
    follow a newer one in the chain: retention removes up to the newest old one, never a hole."""
    then = utcnow() - timedelta(days=40)
    entries = [
        AuditEntry(then, "a", "call", "t", "ok"),
        AuditEntry(utcnow(), "b", "call", "t", "ok"),
        AuditEntry(then, "c", "call", "t", "ok"),
        AuditEntry(utcnow(), "d", "call", "t", "ok"),
    ]
    with registry.transaction() as session:
        AuditStore(session).append("nav", entries)
    assert _prune(registry) == 3
    assert _problems(registry) == []


def test_a_chain_pruned_before_the_upgrade_starts_where_it_starts(database_url: str) -> None:
    """Migration 0010 takes a chain pruned before it as starting at its first kept event, and one
    left empty as pruned up to its head: they verify as they did."""
    command.upgrade(alembic_config(database_url), "0009")
    prev, rows = GENESIS, []
    for seq in range(1, 6):
        entry = AuditEntry(utcnow(), "a", "call", "t", "ok")
        rows.append({"at": entry.at, "seq": seq, "prev": prev})
        prev = rows[-1]["hash"] = chain_hash(prev, "nav", seq, entry)
    insert = (
        "INSERT INTO audit_events (at, instance, seq, principal, action, target, outcome, "
        "prev_hash, hash) VALUES (:at, 'nav', :seq, 'a', 'call', 't', 'ok', :prev, :hash)"
    )
    before = Registry(database_url)
    with before.engine.begin() as connection:
        connection.execute(text(insert), rows[2:])  # the first two pruned
        connection.execute(
            text(
                "INSERT INTO audit_heads (instance, seq, hash) VALUES ('nav', 5, :h), ('e', 7, :h)"
            ),
            {"h": prev},
        )
    before.dispose()
    migrate(database_url)
    after = Registry(database_url)
    try:
        assert _problems(after) == []
        _by_hand(after, "DELETE FROM audit_events WHERE seq = 3")
        assert _problems(after) == ["nav #4: the events before it are missing"]
    finally:
        after.dispose()
