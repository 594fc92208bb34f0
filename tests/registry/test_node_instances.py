"""One node instance serves a machine (SPEC §6, ADR 0050): the registry's side, on SQLite and
PostgreSQL — who may take a machine over, and what the old instance is told after."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from alembic import command

from registry import CatalogStore, Conflict, MachineRecord, Registry, Replaced, migrate
from registry.audit import AuditFilter, AuditStore
from registry.database import alembic_config

URL_A, URL_B = "http://127.0.0.1:7801", "http://127.0.0.1:7802"


def register(
    registry: Registry,
    instance: str | None,
    url: str = URL_A,
    *,
    judged: str | None = None,
    replace: bool = False,
) -> None:
    with registry.transaction() as session:
        CatalogStore(session).register_node(
            "db1",
            advertise_url=url,
            heartbeat_s=5,
            instance=instance,
            judged=judged,
            replace=replace,
        )


def machine(registry: Registry) -> MachineRecord:
    with registry.read_transaction() as session:
        return CatalogStore(session).machine("db1")


def takeovers(registry: Registry) -> list[str]:
    with registry.read_transaction() as session:
        events = AuditStore(session).events(AuditFilter(action="node.takeover"))
    return [e.entry.outcome for e in events]


def test_a_registration_records_its_instance_and_since_when(registry: Registry) -> None:
    register(registry, "a")
    first = machine(registry)
    register(registry, "a")  # the same instance again: still since its first registration
    again = machine(registry)
    assert (first.instance, again.instance) == ("a", "a")
    assert first.instance_since == again.instance_since is not None
    assert again.stopped_at is None


def test_another_instance_takes_over_only_from_the_one_judged(registry: Registry) -> None:
    register(registry, "a")
    with pytest.raises(Conflict):  # judged before "a" registered: not the one registered now
        register(registry, "b", URL_B, judged=None)
    assert machine(registry).instance == "a"
    register(registry, "b", URL_B, judged="a")
    taken = machine(registry)
    assert (taken.instance, taken.advertise_url) == ("b", URL_B)
    assert takeovers(registry) == ["not answering"]


def test_the_replaced_instance_is_told_so_on_its_heartbeats_and_pushes(registry: Registry) -> None:
    register(registry, "a")
    register(registry, "b", URL_B, judged="a", replace=True)
    with registry.transaction() as session, pytest.raises(Replaced) as refused:
        CatalogStore(session).heartbeat("db1", "a")
    assert URL_B in str(refused.value)
    with registry.transaction() as session, pytest.raises(Replaced):
        CatalogStore(session).check_node_instance("db1", "a")
    with registry.transaction() as session:
        CatalogStore(session).heartbeat("db1", "b")
        assert not CatalogStore(session).stop_node("db1", "a"), "a replaced one stops nothing"
    assert machine(registry).instance == "b"
    assert takeovers(registry) == ["replaced"]


def test_a_clean_stop_frees_the_machine_and_its_next_node_takes_it(registry: Registry) -> None:
    register(registry, "a")
    with registry.transaction() as session:
        assert CatalogStore(session).stop_node("db1", "a")
    stopped = machine(registry)
    assert stopped.instance is None and stopped.stopped_at is not None
    with registry.transaction() as session, pytest.raises(Conflict) as late:
        CatalogStore(session).heartbeat("db1", "a")  # a beat on its way as it stopped
    assert not isinstance(late.value, Replaced), "it registers again, it is not replaced"
    register(registry, "b")
    assert machine(registry).stopped_at is None
    assert takeovers(registry) == [], "nothing served it: nothing was taken over"


def test_a_node_without_an_instance_id_is_served_as_before(registry: Registry) -> None:
    register(registry, None)
    register(registry, None, URL_B)
    with registry.transaction() as session:
        CatalogStore(session).heartbeat("db1")
    record = machine(registry)
    assert (record.instance, record.stopped_at) == (None, None)


def test_a_machine_from_before_instance_ids_keeps_its_node_and_the_step_reverses(
    database_url: str,
) -> None:
    config = alembic_config(database_url)
    command.upgrade(config, "0010")
    engine = sa.create_engine(database_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "INSERT INTO machines (name, advertise_url, heartbeat_s, created_at) "
                    "VALUES ('db1', :url, 5, CURRENT_TIMESTAMP)"
                ),
                {"url": URL_A},
            )
    finally:
        engine.dispose()
    migrate(database_url)
    registry = Registry(database_url)
    try:
        before = machine(registry)
        assert (before.advertise_url, before.instance, before.stopped_at) == (URL_A, None, None)
        register(registry, "a")  # nothing registered to take over from
        assert machine(registry).instance == "a"
    finally:
        registry.dispose()
    command.downgrade(config, "0010")  # and back: the step is reversible, the machine kept
    command.upgrade(config, "head")
    registry = Registry(database_url)
    try:
        assert machine(registry).advertise_url == URL_A
    finally:
        registry.dispose()
