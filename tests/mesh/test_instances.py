"""A node's instance id and the route that answers it (SPEC §6, ADR 0050)."""

from __future__ import annotations

import httpx

from mesh.instances import INSTANCE_PATH, READY_PATH, instance_route, new_instance, ready_route


async def test_the_route_answers_the_instance_to_a_get_and_nothing_else() -> None:
    instance = new_instance()
    transport = httpx.ASGITransport(app=instance_route(instance))
    async with httpx.AsyncClient(transport=transport, base_url="http://node") as client:
        asked = await client.get(INSTANCE_PATH)
        posted = await client.post(INSTANCE_PATH, json={})
    assert asked.json() == {"instance": instance}
    assert asked.headers["cache-control"] == "no-store"
    assert posted.status_code == 405


def test_each_start_makes_a_new_instance_id() -> None:
    made = {new_instance() for _ in range(100)}
    assert len(made) == 100
    assert all(len(i) <= 64 and i.replace("-", "").replace("_", "").isalnum() for i in made)


async def test_the_ready_route_answers_503_until_the_node_has_registered() -> None:
    registered = False
    transport = httpx.ASGITransport(app=ready_route(lambda: registered))
    async with httpx.AsyncClient(transport=transport, base_url="http://n1") as client:
        before = await client.get(READY_PATH)
        registered = True
        after = await client.get(READY_PATH)
        posted = await client.post(READY_PATH)
    assert (before.status_code, before.json()) == (503, {"ready": False})
    assert (after.status_code, after.json()) == (200, {"ready": True})
    assert posted.status_code == 405
