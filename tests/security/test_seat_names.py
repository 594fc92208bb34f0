"""No mesh seat takes a node seat's name (issue 35, item 19).

A mesh seat named ``node`` was placed, and every ``*/node/*`` grant — meant for the node seat every
machine holds — then covered ``mesh/node/…`` too. Placing a seat named as a node seat's role (the
``node`` module's, or any role a machine registered as a node seat) is refused with the reason,
through the admin API and the CLI alike, and nothing is placed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from meshnav.cli import app
from registry import CatalogStore, Registry
from registry.errors import SEAT_IS_NODE_SEAT, SeatIsNodeSeat
from tests.navigator.api.test_node_api import bearer, navigator, registration
from tests.registry.conftest import database_url, registry

__all__ = ["database_url", "registry"]  # the registry's fixtures: SQLite and PostgreSQL


async def test_the_api_refuses_a_seat_named_as_a_node_seat(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        body = registration("web1", "http://10.0.0.1:7801")
        body["assignments"].append(
            {"role": "fail2ban", "module": "stdio", "kind": "node_seat", "tools": []}
        )
        registered = await client.post(
            "/api/v1/nodes/register", json=body, headers=bearer(tokens["node-a"])
        )
        answers = {
            seat: await client.put(
                f"/api/v1/seats/{seat}",
                json={"machine": "web1", "role": "notes"},
                headers=bearer(tokens["root"]),
            )
            for seat in ("node", "fail2ban")
        }
        seats = await services.transact(lambda session: CatalogStore(session).seats())
    assert registered.status_code == 200, registered.text
    node, fail2ban = answers["node"], answers["fail2ban"]
    assert node.status_code == 400, node.text
    assert node.json() == {"error": "invalid_address", "status": 400, "message": SEAT_IS_NODE_SEAT}
    assert fail2ban.status_code == 409, fail2ban.text
    assert fail2ban.json() == {"error": "conflict", "status": 409, "message": SEAT_IS_NODE_SEAT}
    assert seats == {}


def test_the_cli_refuses_a_seat_named_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("MESHNAV_NAVIGATOR_URL", "MESHNAV_TOKEN", "MESHNAV_DATABASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    database = f"sqlite:///{tmp_path / 'registry.db'}"
    runner = CliRunner()

    def run(*arguments: str) -> Any:
        return runner.invoke(app, [*arguments, "--database", database])

    assert run("migrate", "--json").exit_code == 0
    refused = run("seat", "place", "node", "web1", "files")
    assert refused.exit_code != 0
    assert "node seat's role" in refused.output
    registry = Registry(database)
    with registry.transaction() as session:
        assert CatalogStore(session).seats() == {}


@pytest.mark.parametrize("seat", ["node", "fail2ban"])
def test_the_registry_refuses_a_seat_named_as_a_node_seat(registry: Registry, seat: str) -> None:
    """On SQLite and PostgreSQL, whoever writes (the API, the CLI's direct path, a test)."""
    with registry.transaction() as session:
        CatalogStore(session).put_assignment(
            "web1", "fail2ban", module="stdio", tools=[], kind="node_seat"
        )
    with pytest.raises(SeatIsNodeSeat), registry.transaction() as session:
        CatalogStore(session).place_seat(seat, "web1", "files")
    with registry.transaction() as session:
        CatalogStore(session).place_seat("backup", "web1", "files")  # any other name: placed
        assert set(CatalogStore(session).seats()) == {"backup"}
