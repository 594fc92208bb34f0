"""The audit writer holds whatever it is given (issue 35, item 2; ADR 0045), on SQLite and on
the real PostgreSQL.

A 132-character JWT subject failed PostgreSQL's ``String(128)`` principal column, and the writer
put the whole batch back, forever: no event of anyone's was written again. Every text is now
stored bounded; a batch the registry refuses is written event by event, an event it refuses alone
is dropped, counted and logged without its content; and while the registry is down, events wait
in a bounded queue.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from navigator.access.auditing import AuditLog, open_export
from navigator.metrics import Metrics
from registry import Registry, migrate
from registry.audit import AuditFilter, AuditRecord, AuditStore

pytestmark = pytest.mark.xdist_group("postgres")


def _events(registry: Registry) -> list[AuditRecord]:
    with registry.read_transaction() as session:
        return list(reversed(AuditStore(session).events(AuditFilter(limit=1000))))


def _verify(registry: Registry) -> dict[str, object]:
    with registry.read_transaction() as session:
        return AuditStore(session).verify()


async def test_a_subject_past_the_column_is_stored_as_a_prefix_and_a_hash(
    registry: Registry,
) -> None:
    audit = AuditLog(registry, "nav", retention_days=30, metrics=Metrics())
    long_a, long_b = "a" * 131 + "1", "a" * 131 + "2"  # 132 characters, one prefix
    audit.event(long_a, "call", "db1/sqlite/query", "ok")
    audit.event(long_b, "call", "db1/sqlite/query", "ok")
    audit.event("bob\x1b[2J\x00\udc80", "call", "t" * 300 + "\x00", "ok")
    audit.event("carol", "call", "db1/sqlite/query", "ok")
    await audit.flush()
    events = _events(registry)
    assert [e.entry.principal[:5] for e in events] == ["aaaaa", "aaaaa", "bob\\x", "carol"]
    first, second = events[0].entry.principal, events[1].entry.principal
    assert len(first) == len(second) == 128 and first != second
    assert re.fullmatch(r"a{111}~[0-9a-f]{16}", first)
    assert events[2].entry.principal == "bob\\x1b[2J\\x00\\udc80"  # shown, never run
    assert len(events[2].entry.target) == 256 and "\x00" not in events[2].entry.target
    assert audit.dropped == 0 and not audit._pending
    assert _verify(registry)["problems"] == []


async def test_one_event_the_registry_refuses_is_dropped_and_the_rest_written(
    registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    metrics = Metrics()
    audit = AuditLog(registry, "nav", retention_days=30, metrics=metrics)
    audit.event("alice", "call", "db1/sqlite/query", "ok")
    # out of the column's range on either database: refused alone, whatever the writer bounds
    audit.event("secret-holder", "call", "db1/sqlite/query", "ok", grant_id=2**70)
    audit.event("bob", "call", "db1/sqlite/query", "ok")
    with caplog.at_level(logging.WARNING, logger="meshnav.navigator.audit"):
        await audit.flush()
    assert [e.entry.principal for e in _events(registry)] == ["alice", "bob"]
    assert audit.dropped_by == {"queue_full": 0, "rejected": 1} and not audit._pending
    assert 'meshnav_audit_events_dropped_total{reason="rejected"} 1' in metrics.render()
    logged = caplog.text
    assert "refused by the registry and dropped" in logged
    assert "secret-holder" not in logged and str(2**70) not in logged
    audit.event("carol", "call", "db1/sqlite/query", "ok")
    await audit.flush()  # the writer goes on
    assert [e.entry.principal for e in _events(registry)][-1] == "carol"
    assert _verify(registry)["problems"] == []


async def test_events_wait_in_a_bounded_queue_while_the_registry_is_down(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    migrate(url)
    registry = Registry(url)
    metrics = Metrics()
    audit = AuditLog(registry, "nav", retention_days=30, queue_max=3, metrics=metrics)
    try:
        registry.engine.dispose()
        (tmp_path / "r.db").rename(tmp_path / "away.db")  # unreachable
        (tmp_path / "r.db").mkdir()
        for n in range(2):
            audit.event(f"p{n}", "call", "db1/sqlite/query", "ok")
        await audit.flush()  # refused: held
        for n in range(2, 5):
            audit.event(f"p{n}", "call", "db1/sqlite/query", "ok")
        await audit.flush()
        assert audit.dropped_by == {"queue_full": 2, "rejected": 0}
        assert 'meshnav_audit_events_dropped_total{reason="queue_full"} 2' in metrics.render()
        (tmp_path / "r.db").rmdir()
        (tmp_path / "away.db").rename(tmp_path / "r.db")
        registry.engine.dispose()
        await audit.flush()
        assert [e.entry.principal for e in _events(registry)] == ["p0", "p1", "p2"]
    finally:
        registry.dispose()


def test_an_export_file_readable_by_others_is_made_the_owners_alone(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text("")
    path.chmod(0o644)
    export = open_export(str(path))
    assert export is not None
    export.close()
    assert path.stat().st_mode & 0o777 == 0o600
