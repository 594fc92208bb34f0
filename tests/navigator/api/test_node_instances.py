"""One node per machine through the node API (SPEC §6, ADR 0050): a registration from another
node instance is refused only while the registered one answers at its URL with its own id —
asked within the URL policy — and the instance replaced is told ``replaced``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from mesh.instances import instance_route
from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.settings import NavigatorSettings
from registry import AccessStore
from tests.harness import free_port, serving
from tests.navigator.api.test_node_api import bearer, navigator, registration

REGISTER = "/api/v1/nodes/register"


def claim(url: str, instance: str, *, replace: bool = False) -> dict[str, Any]:
    return {**registration("db1", url), "instance": instance, "replace": replace}


async def status(client: httpx.AsyncClient, tokens: dict[str, str]) -> dict[str, Any]:
    mesh = (await client.get("/api/v1/mesh", headers=bearer(tokens["root"]))).json()
    return next(m for m in mesh["machines"] if m["name"] == "db1")


async def test_another_instance_is_refused_while_the_registered_one_answers(
    tmp_path: Path,
) -> None:
    async with navigator(tmp_path) as (client, tokens, _), serving(instance_route("a")) as port:
        url = f"http://127.0.0.1:{port}"
        first = await client.post(REGISTER, json=claim(url, "a"), headers=bearer(tokens["node-a"]))
        refused = await client.post(
            REGISTER, json=claim("http://127.0.0.1:1", "b"), headers=bearer(tokens["node-a"])
        )
        again = await client.post(REGISTER, json=claim(url, "a"), headers=bearer(tokens["node-a"]))
        shown = await status(client, tokens)
    assert first.status_code == 200, first.text
    assert refused.status_code == 409
    body = refused.json()
    assert body["error"] == "conflict"
    assert url in body["message"] and "--replace" in body["message"]
    assert body["answering"] == url and body["since"] in body["message"]
    assert "key" not in body
    assert again.status_code == 200, "the registered instance registers again as it likes"
    assert (shown["status"], shown["advertise"]) == ("answering", url)


async def test_an_instance_that_does_not_answer_is_taken_over_at_once(tmp_path: Path) -> None:
    """Nothing at its URL, or another instance there (a node restarted on the same port)."""
    async with navigator(tmp_path) as (client, tokens, _):
        gone = f"http://127.0.0.1:{free_port()}"
        await client.post(REGISTER, json=claim(gone, "a"), headers=bearer(tokens["node-a"]))
        async with serving(instance_route("c")) as port:
            same_port = f"http://127.0.0.1:{port}"
            taken = await client.post(
                REGISTER, json=claim(same_port, "b"), headers=bearer(tokens["node-a"])
            )
            await client.post(
                REGISTER, json=claim(same_port, "b"), headers=bearer(tokens["node-a"])
            )
            again = await client.post(
                REGISTER, json=claim(gone, "c"), headers=bearer(tokens["node-a"])
            )
    assert taken.status_code == 200, taken.text
    assert again.status_code == 200, "the instance at the registered URL is another: c, not b"


async def test_the_replaced_instance_is_refused_as_replaced(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, _), serving(instance_route("a")) as port:
        old, new = f"http://127.0.0.1:{port}", "http://127.0.0.1:2"
        node = bearer(tokens["node-a"])
        await client.post(REGISTER, json=claim(old, "a"), headers=node)
        taken = await client.post(REGISTER, json=claim(new, "b", replace=True), headers=node)
        beat = await client.post(
            "/api/v1/nodes/db1/heartbeat", json={"instance": "a"}, headers=node
        )
        push = await client.put(
            "/api/v1/nodes/db1/assignments/notes",
            json={
                "advertise": old,
                "assignment": claim(old, "a")["assignments"][0],
                "instance": "a",
            },
            headers=node,
        )
        stop = await client.post("/api/v1/nodes/db1/stop", json={"instance": "a"}, headers=node)
        current = await client.post(
            "/api/v1/nodes/db1/heartbeat", json={"instance": "b"}, headers=node
        )
        shown = await status(client, tokens)
        assignments = await client.get("/api/v1/assignments", headers=bearer(tokens["root"]))
    assert taken.status_code == 200, taken.text
    for refused in (beat, push):
        assert refused.status_code == 409
        assert refused.json()["error"] == "replaced"
        assert new in refused.json()["message"]
    assert stop.json()["stopped"] is False
    assert current.status_code == 200
    assert (shown["status"], shown["advertise"]) == ("answering", new)
    endpoints = {a["endpoint"] for a in assignments.json()}
    assert endpoints == {f"{new}/mcp/notes"}, "the replaced instance's push changed nothing"


async def test_a_clean_stop_is_not_answering_at_once(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, _):
        node = bearer(tokens["node-a"])
        await client.post(REGISTER, json=claim("http://127.0.0.1:3", "a"), headers=node)
        before = await status(client, tokens)
        stop = await client.post("/api/v1/nodes/db1/stop", json={"instance": "a"}, headers=node)
        after = await status(client, tokens)
        late = await client.post(
            "/api/v1/nodes/db1/heartbeat", json={"instance": "a"}, headers=node
        )
        other = await client.post(
            "/api/v1/nodes/db1/stop", json={"instance": "a"}, headers=bearer(tokens["node-b"])
        )
    assert before["status"] == "answering"
    assert stop.json() == {"machine": "db1", "stopped": True}
    assert after["status"] == "not answering"
    assert (late.status_code, late.json()["error"]) == (409, "conflict")
    assert other.status_code == 403, "a node token stops only its own machine"


async def test_the_probe_connects_only_where_the_url_policy_allows(tmp_path: Path) -> None:
    """A name that resolves outside ``MESHNAV_ENDPOINT_NETWORKS`` is stored (a name is judged
    when connected to) and never probed: the instance there is taken for not answering."""
    settings = NavigatorSettings(
        database_url=f"sqlite:///{tmp_path / 'r.db'}", endpoint_networks="10.0.0.0/8"
    )
    app = build_app(settings)
    async with app.router.lifespan_context(app), serving(instance_route("a")) as port:
        token = mint_token()
        await app.state.meshnav.transact(
            lambda s: AccessStore(s).add_principal(
                "node-a", scopes=["mesh:node"], token_hash=hash_token(token)
            )
        )
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            url = f"http://localhost:{port}"
            first = await client.post(REGISTER, json=claim(url, "a"), headers=bearer(token))
            taken = await client.post(
                REGISTER, json=claim("http://10.0.0.2:7801", "b"), headers=bearer(token)
            )
    assert first.status_code == 200, first.text
    assert taken.status_code == 200, "the probe reached past the policy"
