"""Principals and grants in the registry, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from registry import (
    AccessStore,
    CatalogStore,
    Conflict,
    NotFound,
    Registry,
    RegistryUnavailable,
    migrate,
    read_grant_revision,
    read_snapshot,
    read_token_holder,
)
from registry.models import utcnow

pytestmark = pytest.mark.xdist_group("postgres")


def test_a_grant_change_moves_row_and_registry_revision_together(registry: Registry) -> None:
    with registry.transaction() as session:
        first = AccessStore(session).grant("alice", "db1/*/*", effect="allow")
    with registry.transaction() as session:
        changed = AccessStore(session).grant("alice", "db1/*/*", effect="deny")
        revision = CatalogStore(session).revision("grants")
    assert changed.id == first.id
    assert changed.revision > first.revision
    assert changed.revision == revision


def test_rows_that_differ_in_scopes_stand_side_by_side(registry: Registry) -> None:
    """A scoped allow replaced an unscoped deny of the same target: the principal, without the
    scope, lost the deny that held it and was let through by a broader allow."""
    with registry.transaction() as session:
        store = AccessStore(session)
        deny = store.grant("carol", "db2/*/*", effect="deny")
        scoped = store.grant("carol", "db2/*/*", effect="allow", scopes=["ops:x"])
        again = store.grant("carol", "db2/*/*", effect="allow", scopes=["ops:x"])
        rows = store.grants("carol")
    assert scoped.id != deny.id
    assert again.id == scoped.id
    assert [(r.effect, r.scopes) for r in rows] == [("deny", ()), ("allow", ("ops:x",))]


def test_a_failed_transaction_moves_no_revision(registry: Registry) -> None:
    with registry.transaction() as session:
        before = CatalogStore(session).revision("grants")

    def abandoned() -> None:
        with registry.transaction() as session:
            AccessStore(session).grant("alice", "*/*/*", effect="allow")
            raise RuntimeError("abort")

    with pytest.raises(RuntimeError):
        abandoned()
    with registry.transaction() as session:
        assert CatalogStore(session).revision("grants") == before
        assert AccessStore(session).grants() == []


def test_revoking_a_grant_bumps_the_revision(registry: Registry) -> None:
    with registry.transaction() as session:
        row = AccessStore(session).grant("alice", "*/*/*", effect="allow")
    with registry.transaction() as session:
        AccessStore(session).revoke_grant(row.id)
        assert CatalogStore(session).revision("grants") == row.revision + 1
    with pytest.raises(NotFound), registry.transaction() as session:
        AccessStore(session).revoke_grant(row.id)


def test_a_grant_id_is_never_given_twice(registry: Registry) -> None:
    """The newest grant revoked, the next one gets a new id: a ``grant revoke ID`` repeated, or
    read from an old listing, finds nothing instead of the grant made since."""
    with registry.transaction() as session:
        AccessStore(session).grant("alice", "db1/*/*", effect="allow")
        newest = AccessStore(session).grant("alice", "db2/*/*", effect="allow")
    with registry.transaction() as session:
        AccessStore(session).revoke_grant(newest.id)
    with registry.transaction() as session:
        made_since = AccessStore(session).grant("bob", "db2/*/*", effect="allow")
    assert made_since.id > newest.id
    with pytest.raises(NotFound), registry.transaction() as session:
        AccessStore(session).revoke_grant(newest.id)


def test_two_operators_at_once_never_lose_a_revision(registry: Registry) -> None:
    per_thread = 15

    def operator(name: str) -> None:
        for i in range(per_thread):
            with registry.transaction() as session:
                AccessStore(session).grant(name, f"db{i}/*/*", effect="allow")

    threads = [threading.Thread(target=operator, args=(f"op{n}",)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with registry.transaction() as session:
        rows = AccessStore(session).grants()
        revision = CatalogStore(session).revision("grants")
    assert revision == 2 * per_thread
    assert sorted(r.revision for r in rows) == list(range(1, 2 * per_thread + 1))


@pytest.mark.parametrize("change", ["revoke", "scope holders"])
def test_a_grant_row_changed_while_another_writer_removes_it_deadlocks_neither(
    registry: Registry, change: str
) -> None:
    """A revocation (or a registration's scope holders' row) removed a grant row and then took
    the grant revision, which another writer held while it changed that row: on PostgreSQL each
    waited for the other, and one was answered ``registry_unavailable`` (a deadlock)."""
    with registry.transaction() as session:
        row = AccessStore(session).grant("*", "m1/a/*", effect="allow", scopes=["y"])
    holds, removing = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def changer() -> None:
        try:
            with registry.transaction() as session:
                store = AccessStore(session)
                store.grant("alice", "db2/*/*", effect="allow")  # holds the revision
                holds.set()
                assert removing.wait(10)
                time.sleep(0.5)  # the remover is waiting by now
                store.grant("*", "m1/a/*", effect="allow", scopes=["y"])  # the row again
        except BaseException as error:
            failed.append(error)

    def remover() -> None:
        assert holds.wait(10)
        removing.set()
        try:
            with registry.transaction() as session:
                if change == "revoke":
                    AccessStore(session).revoke_grant(row.id)
                else:
                    AccessStore(session).grant_scope_holders("m1/a/*", ["x"])
        except BaseException as error:
            failed.append(error)

    threads = [threading.Thread(target=changer), threading.Thread(target=remover)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failed == []
    with registry.transaction() as session:
        left = [(r.principal, r.target, r.scopes) for r in AccessStore(session).grants()]
    kept = [] if change == "revoke" else [("*", "m1/a/*", ("x",))]
    assert left == [("alice", "db2/*/*", ()), *kept]


def test_snapshot_reads_own_and_star_rows_with_the_revision(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        store.grant("alice", "db1/*/*", effect="allow")
        store.grant("*", "*/node/*", effect="allow", scopes=["ops"])
        store.grant("bob", "*/*/*", effect="allow")
    with registry.transaction() as session:
        snapshot = AccessStore(session).snapshot("alice", ["ops"], limit=4096)
    assert snapshot is not None
    assert snapshot.revision == 3
    assert [(r.principal, r.target) for r in snapshot.rows] == [
        ("alice", "db1/*/*"),
        ("*", "*/node/*"),
    ]


def test_snapshot_of_a_principal_without_rows(registry: Registry) -> None:
    with registry.transaction() as session:
        snapshot = AccessStore(session).snapshot("nobody", [], limit=4096)
    assert snapshot is not None and snapshot.rows == ()


def test_more_rows_than_the_limit_give_no_snapshot(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        for i in range(6):
            store.grant("alice", f"m{i}/*/*", effect="allow")
    with registry.transaction() as session:
        assert AccessStore(session).snapshot("alice", [], limit=5) is None
        assert AccessStore(session).snapshot("alice", [], limit=6) is not None


def test_a_token_holder_comes_with_its_grants_in_one_read(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("alice", scopes=["ops"], token_hash="a" * 64)
        store.add_principal("carol", scopes=[], token_hash="c" * 64)
        store.grant("alice", "db1/*/*", effect="allow")
        store.grant("*", "*/node/*", effect="allow", scopes=["ops"])
        store.grant("bob", "*/*/*", effect="allow")
    alice = read_token_holder(registry, "a" * 64, limit=4096)
    carol = read_token_holder(registry, "c" * 64, limit=4096)
    unknown = read_token_holder(registry, "f" * 64, limit=4096)
    with registry.transaction() as session:
        expected = AccessStore(session).snapshot("alice", ["ops"], limit=4096)
    assert alice is not None and alice.name == "alice" and alice.scopes == ("ops",)
    assert alice.grants == expected
    assert carol is not None and carol.grants is not None
    assert carol.grants.rows == ()  # the * row needs ops, which carol does not hold
    assert carol.grants.revision == expected.revision  # type: ignore[union-attr]
    assert unknown is None


def test_rows_for_scopes_a_principal_lacks_are_not_read_nor_counted(registry: Registry) -> None:
    """SPEC §4: a row applies only to a principal holding every one of its scopes, and at most
    4,096 rows *apply*: one team's scoped ``*`` rows (one per assignment registered with
    ``--grant-scope-holders``) must not lock every other principal out."""
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("alice", scopes=[], token_hash="a" * 64)
        store.add_principal("dana", scopes=["dba", "ops"], token_hash="d" * 64)
        store.grant("alice", "db1/pg/query", effect="allow")
        store.grant("*", "*/node/*", effect="allow", scopes=["ops", "audit"])
        for i in range(6):
            store.grant("*", f"m{i}/pg", effect="allow", scopes=["dba"])
    with registry.transaction() as session:
        alone = AccessStore(session).snapshot("alice", [], limit=5)
        both = AccessStore(session).snapshot("dana", ["ops", "dba"], limit=6)
        all_three = AccessStore(session).snapshot("erin", ["audit", "ops", "dba"], limit=7)
    assert alone is not None and [r.target for r in alone.rows] == ["db1/pg/query"]
    assert both is not None and len(both.rows) == 6  # not the row needing audit too
    assert all_three is not None and len(all_three.rows) == 7
    alice = read_token_holder(registry, "a" * 64, limit=5)
    dana = read_token_holder(registry, "d" * 64, limit=5)
    assert alice is not None and alice.grants == alone
    assert dana is not None and dana.grants is None  # six rows apply: more than five fails closed
    # the same read without a session (a stdio or JWT caller's, on the held SQLite connection)
    assert read_snapshot(registry, "dana", ["ops", "dba"], limit=6) == both
    assert read_snapshot(registry, "dana", ["ops", "dba"], limit=5) is None
    assert read_grant_revision(registry) == both.revision


def test_a_token_holder_with_too_many_rows_gets_no_grants(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("alice", scopes=[], token_hash="a" * 64)
        for i in range(6):
            store.grant("alice", f"m{i}/*/*", effect="allow")
    over = read_token_holder(registry, "a" * 64, limit=5)
    within = read_token_holder(registry, "a" * 64, limit=6)
    assert over is not None and over.grants is None
    assert within is not None and within.grants is not None and len(within.grants.rows) == 6


def test_a_revoked_token_has_no_holder(registry: Registry) -> None:
    with registry.transaction() as session:
        AccessStore(session).add_principal("alice", scopes=[], token_hash="a" * 64)
    with registry.transaction() as session:
        AccessStore(session).revoke_principal("alice")
    assert read_token_holder(registry, "a" * 64, limit=4096) is None


def test_each_token_read_sees_the_latest_commit(registry: Registry) -> None:
    """The per-request read (held open on SQLite) never answers from an older state."""
    with registry.transaction() as session:
        AccessStore(session).add_principal("alice", scopes=[], token_hash="a" * 64)
        grant = AccessStore(session).grant("alice", "db1/*/*", effect="allow")
    first = read_token_holder(registry, "a" * 64, limit=4096)
    assert first is not None and first.grants is not None and len(first.grants.rows) == 1
    with registry.transaction() as session:
        AccessStore(session).revoke_grant(grant.id)
    second = read_token_holder(registry, "a" * 64, limit=4096)
    assert second is not None and second.grants is not None and second.grants.rows == ()
    assert second.grants.revision > first.grants.revision
    with registry.transaction() as session:
        AccessStore(session).revoke_principal("alice")
    assert read_token_holder(registry, "a" * 64, limit=4096) is None


def test_a_failed_token_read_is_unavailable_and_the_next_one_reconnects(
    registry: Registry,
) -> None:
    with registry.transaction() as session:
        AccessStore(session).add_principal("alice", scopes=[], token_hash="a" * 64)
    assert read_token_holder(registry, "a" * 64, limit=4096) is not None
    held = registry._held
    if held is None:
        pytest.skip("only SQLite holds a connection for these reads")
    assert held._connection is not None
    held._connection.dbapi_connection.close()  # type: ignore[union-attr]  # the connection breaks
    with pytest.raises(RegistryUnavailable):
        read_token_holder(registry, "a" * 64, limit=4096)
    assert read_token_holder(registry, "a" * 64, limit=4096) is not None


def test_migrating_again_keeps_every_row(registry: Registry, database_url: str) -> None:
    with registry.transaction() as session:
        AccessStore(session).grant("alice", "*/*/*", effect="allow")
        AccessStore(session).add_principal("alice", scopes=["ops"], token_hash="h" * 64)
    migrate(database_url)
    migrate(database_url)
    with registry.transaction() as session:
        assert len(AccessStore(session).grants()) == 1
        assert AccessStore(session).principal_by_token("h" * 64) is not None
        assert CatalogStore(session).revision("grants") == 1


def test_principals_keep_only_a_hash_and_rotate(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("alice", scopes=["b", "a", "a"], token_hash="1" * 64)
        with pytest.raises(Conflict):
            store.add_principal("alice", scopes=[], token_hash="2" * 64)
    with registry.transaction() as session:
        store = AccessStore(session)
        assert store.principal("alice").scopes == ("a", "b")
        store.rotate_principal("alice", token_hash="3" * 64)
        assert store.principal_by_token("1" * 64) is None
        assert store.principal_by_token("3" * 64) is not None
        store.revoke_principal("alice")
        assert store.principal_by_token("3" * 64) is None


def test_rotating_keeps_the_expiry_and_never_brings_back_a_revoked_principal(
    registry: Registry,
) -> None:
    """Rotation brought a revoked principal back to life, and dropped its expiry."""
    later = utcnow() + timedelta(days=30)
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("gina", scopes=["mesh:call"], token_hash="1" * 64, expires_at=later)
        assert store.rotate_principal("gina", token_hash="2" * 64).expires_at == later
        sooner = utcnow() + timedelta(days=1)
        assert store.rotate_principal("gina", token_hash="3" * 64, expires_at=sooner).expires_at
        store.add_principal(
            "old", scopes=[], token_hash="4" * 64, expires_at=utcnow() - timedelta(days=1)
        )
        with pytest.raises(Conflict):  # its new token would be dead on arrival
            store.rotate_principal("old", token_hash="5" * 64)
        store.rotate_principal("old", token_hash="5" * 64, expires_at=later)
        store.revoke_principal("gina")
        with pytest.raises(Conflict):
            store.rotate_principal("gina", token_hash="6" * 64)
        assert store.principal_by_token("6" * 64) is None


def test_a_node_principal_is_bound_to_its_first_machine(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("node-a", scopes=["mesh:node"], token_hash="4" * 64)
        store.bind_machine("node-a", "db1")
        store.bind_machine("node-a", "db1")
        with pytest.raises(Conflict):
            store.bind_machine("node-a", "db2")


def test_an_unbound_node_principal_cannot_take_a_machine_another_speaks_for(
    registry: Registry,
) -> None:
    """Else a second node token could re-register db1, point its endpoints elsewhere and be given
    db1's call-token key."""
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("node-a", scopes=["mesh:node"], token_hash="4" * 64)
        store.add_principal("node-b", scopes=["mesh:node"], token_hash="5" * 64)
        store.bind_machine("node-a", "db1")
        with pytest.raises(Conflict):
            store.bind_machine("node-b", "db1")
        store.revoke_principal("node-a")
        with pytest.raises(Conflict):  # a revoked node's machine needs a principal made for it
            store.bind_machine("node-b", "db1")
        store.bind_machine("node-b", "db2")
        assert store.principal("node-b").machine == "db2"


def _register_while_another_does(
    registry: Registry, first: tuple[str, str], then: tuple[str, str]
) -> list[str]:
    """``first`` (principal, machine) binds and registers as ``Registrar.register_node`` does,
    holding its transaction open a second; meanwhile ``then`` does the same. ``then``'s
    refusals."""
    bound = threading.Event()
    refused: list[str] = []

    def register(principal: str, machine: str, hold: bool) -> None:
        try:
            with registry.transaction() as session:
                AccessStore(session).bind_machine(principal, machine)
                CatalogStore(session).register_node(
                    machine, advertise_url=f"http://{principal}:1", heartbeat_s=5
                )
                if hold:
                    bound.set()
                    time.sleep(1.0)
        except Conflict as error:
            refused.append(str(error))

    holder = threading.Thread(target=register, args=(*first, True))
    holder.start()
    assert bound.wait(10)
    other = threading.Thread(target=register, args=(*then, False))
    other.start()
    holder.join(30)
    other.join(30)
    return refused


def test_two_node_principals_binding_one_new_machine_at_once_bind_one(
    registry: Registry,
) -> None:
    """The second bind checked before the first committed, found the machine free, and was given
    its call-token key too."""
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("node-a", scopes=["mesh:node"], token_hash="4" * 64)
        store.add_principal("node-b", scopes=["mesh:node"], token_hash="5" * 64)
    refused = _register_while_another_does(registry, ("node-a", "db1"), ("node-b", "db1"))
    with registry.transaction() as session:
        bound = {p.name: p.machine for p in AccessStore(session).principals()}
    assert refused == ["Another node principal speaks for that machine."]
    assert bound == {"node-a": "db1", "node-b": None}


def test_one_node_principal_binding_two_machines_at_once_binds_one(registry: Registry) -> None:
    with registry.transaction() as session:
        AccessStore(session).add_principal("node-a", scopes=["mesh:node"], token_hash="4" * 64)
    refused = _register_while_another_does(registry, ("node-a", "db1"), ("node-a", "db2"))
    with registry.transaction() as session:
        assert AccessStore(session).principal("node-a").machine == "db1"
        assert [m.name for m in CatalogStore(session).machines()] == ["db1"]
    assert refused == ["This node principal is bound to another machine."]


def test_an_unbound_node_principal_cannot_take_a_machine_an_operator_registered(
    registry: Registry,
) -> None:
    """Else any node token could re-register web3, point its assignments at itself and be given
    web3's call-token key; a node for web3 needs a principal made for it."""
    with registry.transaction() as session:
        CatalogStore(session).put_assignment(
            "web3", "docs", module="docs", tools=[], endpoint="http://10.0.0.3/mcp"
        )
        store = AccessStore(session)
        store.add_principal("node-a", scopes=["mesh:node"], token_hash="4" * 64)
        with pytest.raises(Conflict):
            store.bind_machine("node-a", "web3")
        store.add_principal("node-web3", scopes=["mesh:node"], token_hash="5" * 64, machine="web3")
        store.bind_machine("node-web3", "web3")


@pytest.mark.parametrize("scope", ["\u0000", "\ud800"], ids=["nul", "lone-surrogate"])
def test_a_stored_scope_no_jsonb_holds_stops_no_ones_token_read(
    registry: Registry, scope: str
) -> None:
    """A registry may hold such a scope from before the API refused it: on PostgreSQL the
    comparison cast every row's scopes to JSONB, and every token's read failed with it."""
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("ops", scopes=["mesh:admin"], token_hash="1" * 64)
        store.grant("ops", "*/*/*", effect="allow")
        store.grant("*", "db9/*/*", effect="deny", scopes=[scope])
    holder = read_token_holder(registry, "1" * 64, limit=100)
    assert holder is not None and holder.grants is not None
    assert [row.target for row in holder.grants.rows] == ["*/*/*"]
    with registry.transaction() as session:
        snapshot = AccessStore(session).snapshot("ops", ["mesh:admin"], limit=100)
    assert snapshot is not None and [row.target for row in snapshot.rows] == ["*/*/*"]
