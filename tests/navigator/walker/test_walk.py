"""``seats`` reads only the assignments its address names, and an assignment's tools one by one
only when a grant names some of them; its listings are those of deciding every tool of the mesh
(SPEC §3, §4)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import navigator.walker.seats as walk_module
from mesh.digests import digest
from navigator.access.grants import Caller, Permissions, compile_permissions
from navigator.addresses import Address, parse_walk_address
from navigator.catalog.machines import RETIRED
from navigator.catalog.records import contracts_fingerprint
from navigator.catalog.view import Catalog
from navigator.errors import UnknownTool
from registry import CatalogStore, GrantRecord, GrantSnapshot, Registry, migrate
from tests.navigator.meshes import small_mesh, tools

ALICE = Caller("alice", frozenset({"ops"}))
HOLDERS = ["db1", "db2", "web1", "mesh"]
ROLES = ["pg", "node", "backup", "files", "reports"]
TOOL_NAMES = ["query", "drop", "run", "status"]


def _targets() -> st.SearchStrategy[str]:
    holder, role, tool = (st.sampled_from([*names, "*"]) for names in (HOLDERS, ROLES, TOOL_NAMES))
    return st.one_of(
        holder, st.tuples(holder, role).map("/".join), st.tuples(holder, role, tool).map("/".join)
    )


_ROWS = st.lists(
    st.tuples(
        st.sampled_from(["alice", "*"]),
        _targets(),
        st.sampled_from(["allow", "deny"]),
        st.sampled_from([(), ("ops",), ("admin",)]),
    ),
    max_size=6,
)


def _permissions(rows: list[tuple[str, str, str, tuple[str, ...]]]) -> Permissions:
    records = tuple(
        GrantRecord(number, principal, target, scopes, effect, number)
        for number, (principal, target, effect, scopes) in enumerate(rows, start=1)
    )
    return compile_permissions(ALICE, GrantSnapshot(revision=len(records), rows=records))


@given(rows=_ROWS, holder=st.sampled_from(HOLDERS), role=st.sampled_from(ROLES))
def test_a_decision_for_every_tool_is_each_tools_decision(
    rows: list[tuple[str, str, str, tuple[str, ...]]], holder: str, role: str
) -> None:
    permissions = _permissions(rows)
    every = permissions.decide_all(holder, role)
    if every is not None:
        for tool in [*TOOL_NAMES, "never_named"]:
            assert permissions.decide(holder, role, tool) == every


@contextmanager
def small_mesh_view(
    folder: Path, more: Callable[[CatalogStore], object] | None = None
) -> Iterator[Catalog]:
    """``small_mesh`` in a registry in ``folder``, and ``more`` when given, loaded whole into a
    view."""
    url = f"sqlite:///{folder / 'r.db'}"
    migrate(url)
    registry = Registry(url)
    with registry.transaction() as session:
        small_mesh(CatalogStore(session))
        if more is not None:
            more(CatalogStore(session))
    view = Catalog(registry)
    asyncio.run(view.load())
    try:
        yield view
    finally:
        registry.dispose()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    """``small_mesh``, shared by the module's tests."""
    with small_mesh_view(tmp_path_factory.mktemp("walk")) as view:
        yield view


def every_tool_decided(
    catalog: Catalog, permissions: Permissions, address: Address | None
) -> list[walk_module._Holding]:
    """The walk's holdings as the navigator first made them: every assignment and every tool of
    the mesh looked at, each tool given to the assignment that placed it, and the assignments the
    address names picked out after."""
    holdings = {}
    for assignment in catalog.assignments():
        status = catalog.assignment_status(assignment)
        if status != RETIRED:
            key = (assignment.machine, assignment.role)
            holdings[key] = walk_module._Holding(assignment, status, [])
    for tool in catalog.tools():
        holding = holdings.get((tool.machine, tool.endpoint_role))
        if holding is not None and permissions.decide(tool.holder, tool.role, tool.name).allowed:
            holding.tools.append(tool)  # type: ignore[attr-defined]
    return [h for h in holdings.values() if h.tools and _names(address, h)]


def _names(address: Address | None, holding: walk_module._Holding) -> bool:
    """Whether the listing at ``address`` shows ``holding`` (SPEC §3)."""
    if address is None:
        return True
    if address.holder == "*":
        return holding.kind == "node seat" and holding.role == address.role
    if address.role is None:
        if address.holder == "mesh":
            return holding.kind == "seat"
        return holding.machine == address.holder and holding.kind != "seat"
    return (holding.holder, holding.address_role) == (address.holder, address.role)


ADDRESSES = [
    *(None, "db1", "db2", "web1", "mesh", "mesh/backup", "db1/pg", "db2/node", "web1/files"),
    *("web1/backup", "db2/files", "*/node", "*/pg", "mesh/reports", "mesh/other"),
]


def _listing(
    catalog: Catalog, permissions: Permissions, address: str | None, **walking: Any
) -> object:
    try:
        parsed = None if address is None else parse_walk_address(address)
        return walk_module.walk(catalog, permissions, parsed, **walking)
    except UnknownTool:
        return "nothing here"


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=150)
@given(rows=_ROWS)
def test_every_listing_is_that_of_deciding_every_tool(
    catalog: Catalog, rows: list[tuple[str, str, str, tuple[str, ...]]]
) -> None:
    permissions = _permissions(rows)
    quick = {address: _listing(catalog, permissions, address) for address in ADDRESSES}
    slow = {
        address: _listing(catalog, permissions, address, holdings_of=every_tool_decided)
        for address in ADDRESSES
    }
    assert quick == slow


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=150)
@given(rows=_ROWS)
def test_a_cursors_contract_digest_is_that_of_every_tool_the_caller_may_call(
    catalog: Catalog, rows: list[tuple[str, str, str, tuple[str, ...]]]
) -> None:
    """``authorised_contracts`` — read through the grants' reach, whole assignments by their
    kept fingerprints — is the digest of every live tool the caller may call, each decided,
    grouped by the assignment that placed it (SPEC §3 Cursors, ADR 0028)."""
    permissions = _permissions(rows)
    holdings = every_tool_decided(catalog, permissions, None)
    expected = digest(
        [
            [h.machine, h.role, h.kind, h.module, contracts_fingerprint(h.tools)]
            for h in sorted(holdings, key=lambda h: (h.machine, h.role))
        ]
    )
    assert walk_module.authorised_contracts(catalog, permissions) == expected


def test_a_load_makes_every_assignments_fingerprint(tmp_path: Path) -> None:
    """A whole load fingerprints every assignment beside the index build, so that the first
    cursor of a grant set does not (ADR 0028); each is what its tools give."""
    with small_mesh_view(tmp_path) as catalog:  # a view of its own: no test has read it yet
        placed = catalog._state.placed
    assert placed and set(catalog._state.fingerprints) == set(placed)
    for assignment in catalog.assignments():
        tools = catalog.assignment_tools(assignment)
        if tools:
            expected = contracts_fingerprint(tools.values())
            assert catalog.assignment_fingerprint(assignment) == expected


async def test_a_seat_moved_before_its_old_machine_is_read_again_is_listed_once(
    tmp_path: Path,
) -> None:
    """A catch-up can apply the machine a seat moved to before the one it left: the address is
    the new machine's from then on, and the old machine's assignment offers nothing of it."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    migrate(url)
    registry = Registry(url)
    with registry.transaction() as session:
        store = CatalogStore(session)
        store.put_assignment("web1", "backup", module="stdio", tools=tools("run"), seat="backup")
        store.put_assignment("web2", "backup", module="stdio", tools=tools("run"))
    view = Catalog(registry)
    await view.load()
    with registry.transaction() as session:
        CatalogStore(session).place_seat("backup", "web2", "backup")
    admin = _permissions([("alice", "*", "allow", ())])
    await view._reload_machine("web2")  # web1 not yet: its assignment still says it holds the seat
    seat = walk_module.walk(view, admin, parse_walk_address("mesh"))
    assert [(e["address"], e["tools"]) for e in seat["entries"]] == [("mesh/backup", 1)]
    with pytest.raises(UnknownTool):
        walk_module.walk(view, admin, parse_walk_address("web1"))
    await view._reload_machine("web1")
    with pytest.raises(UnknownTool):  # the seat's old instance is retired, not web1/backup
        walk_module.walk(view, admin, parse_walk_address("web1"))
    assert {t.address for t in view.tools()} == {"mesh/backup/run"}
    registry.dispose()


async def test_the_top_names_a_node_seats_module_whatever_the_order_of_registration(
    tmp_path: Path,
) -> None:
    """A node seat whose machines run it under different modules was listed at the top with the
    module of whichever machine this view happened to read first: a navigator that saw the
    registrations one by one and one that loaded the mesh whole answered differently, and the
    top disagreed with ``seats */node``. Both take the first holder by name."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    migrate(url)
    registry = Registry(url)
    live = Catalog(registry)
    await live.load()
    for machine, module in (("db2", "custom"), ("db1", "node")):
        with registry.transaction() as session:
            CatalogStore(session).put_assignment(
                machine, "node", module=module, kind="node_seat", tools=tools("status")
            )
        await live.catch_up()
    loaded = Catalog(registry)
    await loaded.load()
    admin = _permissions([("alice", "*", "allow", ())])
    tops = [walk_module.walk(view, admin, None) for view in (live, loaded)]
    assert tops[0] == tops[1]
    seat = walk_module.walk(live, admin, parse_walk_address("*/node"))
    assert [e["module"] for e in tops[0]["entries"] if e["kind"] == "node seat"] == [seat["module"]]
    registry.dispose()
