"""A node serves a mesh seat only where an operator placed it (issue 26, item 5; SPEC §6).

A node bound to ``evil1`` registered ``{"seat": "backup"}`` and became ``mesh/backup/…``, which
broad grants (``mesh/*/*``, ``*/*/*``) then cover.
"""

from __future__ import annotations

from pathlib import Path

from registry import CatalogStore
from registry.errors import SEAT_NOT_PLACED
from tests.navigator.api.test_node_api import (
    bearer,
    navigator,
    node_principal,
    place_seat,
    registration,
)


async def test_a_node_claiming_a_free_seat_is_refused_and_told_the_next_step(
    tmp_path: Path,
) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        claim = registration("evil1", "http://10.0.0.9:7801", seat="backup")
        claim["assignments"].append({"role": "files", "module": "sqlite", "tools": []})
        claimed = await client.post(
            "/api/v1/nodes/register", json=claim, headers=bearer(tokens["node-a"])
        )
        pushed = await client.put(
            "/api/v1/nodes/evil1/assignments/notes",
            json={"advertise": "http://10.0.0.9:7801", "assignment": claim["assignments"][0]},
            headers=bearer(tokens["node-a"]),
        )
        seats = await services.transact(lambda session: CatalogStore(session).seats())
        held = services.catalog.find_tool("mesh/backup/lookup")
    assert claimed.status_code == 200, claimed.text
    assert claimed.json()["registered"] == []
    assert claimed.json()["refused"] == [{"name": "mesh/backup", "reason": SEAT_NOT_PLACED}]
    assert pushed.status_code == 409, pushed.text
    assert pushed.json() == {"error": "conflict", "status": 409, "message": SEAT_NOT_PLACED}
    assert seats == {}
    assert held is None


async def test_an_operator_places_the_seat_ahead_of_its_node_which_then_serves_it(
    tmp_path: Path,
) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        await place_seat(client, tokens["root"], "backup", "web1")
        # placing added the machine: its node's principal is made for it (SPEC §6)
        web1 = await node_principal(services, "web1")
        body = registration("web1", "http://10.0.0.1:7801", seat="backup")
        body["assignments"][0]["role"] = "backup"
        served = await client.post("/api/v1/nodes/register", json=body, headers=bearer(web1))
        body = registration("evil1", "http://10.0.0.9:7801", seat="backup")
        body["assignments"][0]["role"] = "backup"
        claimed = await client.post(
            "/api/v1/nodes/register", json=body, headers=bearer(tokens["node-b"])
        )
        seats = await services.transact(lambda session: CatalogStore(session).seats())
    assert served.status_code == 200, served.text
    assert served.json()["registered"] == ["mesh/backup/lookup"]
    assert served.json()["refused"] == []
    assert claimed.json()["refused"] == [{"name": "mesh/backup", "reason": SEAT_NOT_PLACED}]
    assert seats == {"backup": ("web1", "backup")}


async def test_a_placement_outside_the_grammar_adds_nothing(tmp_path: Path) -> None:
    """Placing adds the assignment when new: its names must be ones an address can hold."""
    async with navigator(tmp_path) as (client, tokens, services):
        answers = [
            await client.put(
                f"/api/v1/seats/{seat}",
                json={"machine": machine, "role": "backup"},
                headers=bearer(tokens["root"]),
            )
            for seat, machine in (("backup", "mesh"), ("backup", "Web1"), ("Backup", "web1"))
        ]
        machines = await services.transact(lambda session: CatalogStore(session).machines())
    assert [a.json()["error"] for a in answers] == ["invalid_address"] * 3
    assert machines == []
