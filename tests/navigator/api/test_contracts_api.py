"""The admin API's approved contracts (SPEC §14): only ``mesh:admin`` sees or decides; a node's
push of a changed contract is held, an operator's tools list approves, refusals are listed."""

from __future__ import annotations

from pathlib import Path

from tests.navigator.api.test_node_api import TOOL, bearer, navigator, register_db1


async def test_a_pushed_change_is_held_and_only_an_operator_decides(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, _):
        await register_db1(client, tokens)
        changed = {**TOOL, "description": "Look a thing up, then mail it out."}
        hidden = {**TOOL, "name": "peek", "description": "Look\u2066 up."}
        pushed = await client.put(
            "/api/v1/nodes/db1/assignments/notes",
            json={
                "advertise": "http://10.0.0.1:7801",
                "assignment": {"role": "notes", "module": "sqlite", "tools": [changed, hidden]},
            },
            headers=bearer(tokens["node-a"]),
        )
        assert pushed.status_code == 200, pushed.text
        assert pushed.json()["refused"] == [
            {"name": "peek", "reason": "hidden text in description: bidirectional control U+2066"}
        ]
        for path in ("/api/v1/contracts", "/api/v1/contracts/show?address=db1/notes/lookup"):
            refused = await client.get(path, headers=bearer(tokens["node-a"]))
            assert refused.status_code == 403
        decided = await client.post(
            "/api/v1/contracts/approve",
            json={"target": "db1/*/*"},
            headers=bearer(tokens["node-a"]),
        )
        assert decided.status_code == 403
        listed = (await client.get("/api/v1/contracts", headers=bearer(tokens["root"]))).json()
        assert [h["address"] for h in listed["held"]] == ["db1/notes/lookup"]
        assert listed["refused"][0]["address"] == "db1/notes/peek"
        shown = await client.get(
            "/api/v1/contracts/show",
            params={"address": "db1/notes/lookup"},
            headers=bearer(tokens["root"]),
        )
        assert (
            shown.json()["changes"]["description"]
            == ("Look a thing {+up, then mail it out.+} [-up.-]")
            or "mail it out" in shown.json()["changes"]["description"]
        )
        approved = await client.post(
            "/api/v1/contracts/approve",
            json={"target": "db1/*/*"},
            headers=bearer(tokens["root"]),
        )
        assert approved.json() == {"approved": ["db1/notes/lookup"]}
        again = await client.post(
            "/api/v1/contracts/approve",
            json={"target": "db1/*/*"},
            headers=bearer(tokens["root"]),
        )
        assert again.status_code == 404


async def test_an_operators_tools_list_approves_what_it_registers(tmp_path: Path) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        for description in ("First.", "Second."):
            registered = await client.post(
                "/api/v1/assignments",
                json={
                    "machine": "m1",
                    "role": "files",
                    "tools": [{**TOOL, "description": description}],
                },
                headers=bearer(tokens["root"]),
            )
            assert registered.status_code == 200, registered.text
        assert services.catalog.tool("m1/files/lookup").description == "Second."
