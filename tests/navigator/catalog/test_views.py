"""The operators' view of one machine, or of the assignments at one address, is what the whole
mesh's view lists of it — built without building the whole mesh (the console's machine and
assignment pages)."""

from __future__ import annotations

from pathlib import Path

import pytest

from navigator.addresses import parse_address
from navigator.catalog.overview import assignment_views, machine_view, mesh_view
from navigator.catalog.view import Catalog
from registry import CatalogStore, Registry, migrate
from tests.navigator.meshes import small_mesh, tools


@pytest.fixture
async def catalog(tmp_path: Path) -> Catalog:
    """``small_mesh``, with a mesh seat that moved (its old assignment still claims it) and a
    machine with nothing assigned."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    migrate(url)
    registry = Registry(url)
    with registry.transaction() as session:
        store = CatalogStore(session)
        small_mesh(store)
        store.put_assignment("web2", "backup", module="stdio", tools=tools("run"))
        store.add_machine("spare", advertise_url=None)
    view = Catalog(registry)
    await view.load()
    with registry.transaction() as session:
        CatalogStore(session).place_seat("backup", "web2", "backup")
    await view._reload_machine("web2")  # web1 not yet: both claim the seat for now
    return view


async def test_one_machine_is_the_mesh_views_entry_for_it(catalog: Catalog) -> None:
    whole = {machine["name"]: machine for machine in mesh_view(catalog)["machines"]}
    for name in [*whole, "nowhere"]:
        assert machine_view(catalog, name) == whole.get(name)


@pytest.mark.parametrize(
    "address",
    ["db1/pg", "db2/node", "web1/files", "db2/files", "mesh/backup", "mesh/reports", "web2/backup",
     "spare/pg", "nowhere/pg", "mesh/other"],
)  # fmt: skip
async def test_an_addresss_assignments_are_the_mesh_views_entries_for_it(
    catalog: Catalog, address: str
) -> None:
    listed = [a for m in mesh_view(catalog)["machines"] for a in m["assignments"]]
    named = assignment_views(catalog, parse_address(address))
    assert named == [a for a in listed if a["address"] == address]
