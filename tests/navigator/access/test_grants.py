"""The grant evaluator, rule by rule (SPEC §4; issue 3, acceptance 1)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from navigator.access.grants import Caller, Permissions, compile_permissions
from navigator.errors import GrantRowsUnusable
from registry import GrantRecord, GrantSnapshot

ALICE = Caller("alice", frozenset({"ops"}))
ADMIN = Caller("root", frozenset({"mesh:admin"}))


def rows(*specs: tuple[str, str, str] | tuple[str, str, str, tuple[str, ...]]) -> GrantSnapshot:
    records = []
    for number, spec in enumerate(specs, start=1):
        principal, effect, target = spec[:3]
        scopes = spec[3] if len(spec) > 3 else ()  # type: ignore[misc]
        records.append(GrantRecord(number, principal, target, tuple(scopes), effect, number))
    return GrantSnapshot(revision=len(records), rows=tuple(records))


CASES = [
    # (why, caller, rows, address, allowed)
    ("no row, no call", ALICE, rows(), "db1/pg/query", False),
    (
        "a new tool is denied by default",
        ALICE,
        rows(("alice", "allow", "db1/pg/query")),
        "db1/pg/drop",
        False,
    ),
    ("exact address allows", ALICE, rows(("alice", "allow", "db1/pg/query")), "db1/pg/query", True),
    ("pattern allows", ALICE, rows(("alice", "allow", "*/pg/*")), "db2/pg/query", True),
    (
        "prefix target covers what is below",
        ALICE,
        rows(("alice", "allow", "db1")),
        "db1/pg/query",
        True,
    ),
    (
        "pattern does not reach another role",
        ALICE,
        rows(("alice", "allow", "*/pg/*")),
        "db2/sqlite/query",
        False,
    ),
    (
        "more specific deny beats a broad allow",
        ALICE,
        rows(("alice", "allow", "*/*/*"), ("alice", "deny", "db1/pg/drop")),
        "db1/pg/drop",
        False,
    ),
    (
        "more specific allow beats a broad deny",
        ALICE,
        rows(("alice", "deny", "db1/*/*"), ("alice", "allow", "db1/pg/query")),
        "db1/pg/query",
        True,
    ),
    (
        "leftmost exact segment wins at equal wildcard count",
        ALICE,
        rows(("alice", "deny", "*/pg/query"), ("alice", "allow", "db1/*/query")),
        "db1/pg/query",
        True,
    ),
    (
        "leftmost exact segment wins, the other way round",
        ALICE,
        rows(("alice", "allow", "*/pg/query"), ("alice", "deny", "db1/*/query")),
        "db1/pg/query",
        False,
    ),
    (
        "deny wins at equal rank",
        ALICE,
        rows(("alice", "allow", "db1/*/*"), ("alice", "deny", "db1/*/*")),
        "db1/pg/query",
        False,
    ),
    (
        "deny wins at equal rank whatever the row order",
        ALICE,
        rows(("alice", "deny", "*/pg/*"), ("alice", "allow", "*/pg/*")),
        "db1/pg/query",
        False,
    ),
    (
        "exact principal beats a more specific * row",
        ALICE,
        rows(("*", "deny", "db1/pg/query"), ("alice", "allow", "*/*/*")),
        "db1/pg/query",
        True,
    ),
    (
        "* applies to everyone holding its scopes",
        ALICE,
        rows(("*", "allow", "*/*/*", ("ops",))),
        "db1/pg/q",
        True,
    ),
    (
        "* without the scope does not apply",
        ALICE,
        rows(("*", "allow", "*/*/*", ("dba",))),
        "db1/pg/q",
        False,
    ),
    (
        "an exact row needs its scopes too",
        ALICE,
        rows(("alice", "allow", "*/*/*", ("dba",))),
        "db1/pg/q",
        False,
    ),
    (
        "a row that does not apply cannot deny",
        ALICE,
        rows(("alice", "allow", "*/*/*"), ("alice", "deny", "db1/pg/q", ("dba",))),
        "db1/pg/q",
        True,
    ),
    ("mesh:admin bypasses nothing: no row", ADMIN, rows(), "db1/pg/query", False),
    (
        "an explicit deny stops an administrator",
        ADMIN,
        rows(("root", "allow", "*/*/*"), ("root", "deny", "db1/pg/drop")),
        "db1/pg/drop",
        False,
    ),
    (
        "mesh seats are addressed like any holder",
        ALICE,
        rows(("alice", "allow", "mesh/backup/*")),
        "mesh/backup/run",
        True,
    ),
]


@pytest.mark.parametrize(
    ("why", "caller", "snapshot", "address", "allowed"), CASES, ids=[c[0] for c in CASES]
)
def test_grant_rules(
    why: str, caller: Caller, snapshot: GrantSnapshot, address: str, allowed: bool
) -> None:
    assert compile_permissions(caller, snapshot).permits(address) is allowed, why


def test_the_deciding_row_is_named() -> None:
    snapshot = rows(("alice", "allow", "*/*/*"), ("alice", "deny", "db1/pg/drop"))
    decision = compile_permissions(ALICE, snapshot).decide("db1", "pg", "drop")
    assert decision.row is not None and decision.row.id == 2


def test_a_snapshot_that_is_too_large_fails_closed() -> None:
    with pytest.raises(GrantRowsUnusable) as refused:
        compile_permissions(ALICE, None)
    assert refused.value.code == "registry_unavailable"


@pytest.mark.parametrize(
    "bad",
    [("alice", "maybe", "*/*/*"), ("alice", "allow", "DB1/*/*"), ("mallory", "allow", "*/*/*")],
)
def test_a_malformed_snapshot_fails_closed(bad: tuple[str, str, str]) -> None:
    with pytest.raises(GrantRowsUnusable) as refused:
        compile_permissions(ALICE, rows(bad))
    assert refused.value.code == "registry_unavailable"


def test_fingerprint_moves_with_any_applicable_row() -> None:
    one = compile_permissions(ALICE, rows(("alice", "allow", "*/*/*")))
    two = compile_permissions(
        ALICE, rows(("alice", "allow", "*/*/*"), ("alice", "deny", "db1/*/*"))
    )
    assert one.rows_fingerprint != two.rows_fingerprint
    # the same row changed in place (its id kept, its revision moved): a deny where an allow was
    (row,) = rows(("alice", "allow", "*/*/*")).rows
    changed = GrantSnapshot(
        revision=2, rows=(GrantRecord(row.id, "alice", "*/*/*", (), "deny", row.revision + 1),)
    )
    assert compile_permissions(ALICE, changed).rows_fingerprint != one.rows_fingerprint


SEGMENTS = (["db1", "db2", "mesh"], ["pg", "node"], ["query", "drop"])
_target = st.tuples(*(st.sampled_from([*names, "*"]) for names in SEGMENTS)).map("/".join)
_SPECS = st.lists(
    st.tuples(
        st.sampled_from(["alice", "*"]),
        st.sampled_from(["allow", "deny"]),
        st.one_of(_target, _target.map(lambda t: t.rsplit("/", 1)[0])),
        st.sampled_from([(), ("ops",), ("admin",)]),
    ),
    max_size=8,
)


def _first_rule(permissions: Permissions, holder: str, role: str, tool: str) -> Any:
    """SPEC §4 read literally: the first rule in order whose target matches the address."""
    return next((r for r in permissions._rules if r.pattern.matches(holder, role, tool)), None)


@settings(max_examples=300)
@given(_SPECS)
def test_every_decision_is_the_first_matching_rule_in_order(
    specs: list[tuple[str, str, str, tuple[str, ...]]],
) -> None:
    """The rules are looked up in buckets, not read in order; the decisions are those of reading
    them in order: ``decide`` and ``permits`` for each address, ``decide_all`` for every tool of
    a holder's role, ``permits_every_holder`` for every holder of a tool."""
    permissions = compile_permissions(ALICE, rows(*specs))
    holders = [*SEGMENTS[0], "web9"]
    for role in [*SEGMENTS[1], "other"]:
        tools = [*SEGMENTS[2], "other"]
        for holder in holders:
            verdicts = set()
            for tool in tools:
                rule = _first_rule(permissions, holder, role, tool)
                expected = rule is not None and rule.allow
                decision = permissions.decide(holder, role, tool)
                assert (decision.allowed, decision.row) == (
                    expected,
                    None if rule is None else rule.row,
                )
                assert permissions.permits(f"{holder}/{role}/{tool}") is expected
                verdicts.add(expected)
            every = permissions.decide_all(holder, role)
            first = next(
                (
                    r
                    for r in permissions._rules
                    if r.pattern.holder in (None, holder) and r.pattern.role in (None, role)
                ),
                None,
            )
            if first is not None and first.pattern.tool is not None:
                assert every is None
            else:
                assert every is not None and every.allowed is (first is not None and first.allow)
                assert verdicts == {every.allowed}
        for tool in tools:
            answers = {
                _first_rule(permissions, holder, role, tool) for holder in [*holders, "web8"]
            }
            allowed = {rule is not None and rule.allow for rule in answers}
            every_holder = permissions.permits_every_holder(role, tool)
            assert every_holder is None or allowed == {every_holder}
            if len(allowed) == 2:
                assert every_holder is None


@settings(max_examples=300)
@given(_SPECS, _SPECS)
def test_the_bounds_a_search_reads_hold_for_every_address(
    specs: list[tuple[str, str, str, tuple[str, ...]]],
    others: list[tuple[str, str, str, tuple[str, ...]]],
) -> None:
    """What a search asks of the grants instead of asking tool by tool (ADR 0007): every
    permitted tool matches a ``reach`` pattern; every refused tool a reach covers matches a
    ``refusals`` pattern; a holder ``holder_exceptions`` does not name gets its answer; and two
    callers with one ``key`` get the same answers."""
    permissions = compile_permissions(ALICE, rows(*specs))
    other = compile_permissions(ALICE, rows(*others))
    reach, refusals = permissions.reach, permissions.refusals
    for holder in [*SEGMENTS[0], "web9"]:
        for role in [*SEGMENTS[1], "other"]:
            for tool in [*SEGMENTS[2], "other"]:
                address = f"{holder}/{role}/{tool}"
                allowed = permissions.permits(address)
                reached = reach is None or any(p.matches_address(address) for p in reach)
                if allowed:
                    assert reached
                elif reached:
                    assert any(p.matches_address(address) for p in refusals)
                answer, named = permissions.holder_exceptions(role, tool)
                if holder not in named:
                    assert allowed is answer
                if other.key == permissions.key:
                    assert other.permits(address) is allowed
