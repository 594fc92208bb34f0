"""An assignment whose node cannot list its tools (its upstream down at the node's start, a 401,
a timeout) is ``not listing`` with the cause, never retired — retired is an operator's act — and
comes back by itself when its node lists the tools (ADR 0057)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.navigator.api.test_node_api import TOOL, bearer, navigator, node_principal


def _registration(assignment: dict[str, Any]) -> dict[str, Any]:
    return {
        "machine": "web1",
        "advertise": "http://10.0.0.1:7801",
        "heartbeatS": 5,
        "assignments": [assignment],
    }


async def test_an_assignment_that_cannot_list_is_not_listing_with_its_cause(
    tmp_path: Path,
) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        node = bearer(await node_principal(services, "web1"))
        root = bearer(tokens["root"])
        down = {"role": "up", "module": "http", "tools": [], "notListing": "connection refused"}
        first = await client.post("/api/v1/nodes/register", json=_registration(down), headers=node)
        before = (await client.get("/api/v1/assignments", headers=root)).json()
        bad = {**down, "notListing": "refused\u001b[2J"}
        refused = await client.post("/api/v1/nodes/register", json=_registration(bad), headers=node)
        listing = {"role": "up", "module": "http", "tools": [TOOL]}
        again = await client.post(
            "/api/v1/nodes/register", json=_registration(listing), headers=node
        )
        after = (await client.get("/api/v1/assignments", headers=root)).json()
    assert first.status_code == again.status_code == 200, first.text
    assert refused.status_code == 400
    ((shown,),) = [before]
    assert (shown["status"], shown["notListing"], shown["tools"]) == (
        "not listing",
        "connection refused",
        0,
    )
    ((back,),) = [after]
    assert (back["status"], back["tools"]) == ("answering", 1)
    assert "notListing" not in back
