"""A node's instance id and the route that answers it (SPEC §6, ADR 0050)."""

from __future__ import annotations

import httpx

from mesh.instances import INSTANCE_PATH, instance_route, new_instance


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
