"""What the navigator's log says a node registered: counted as the tree shows them. ``web1
registered 11 tools`` sat beside a tree of 6 under web1: its node seat's tools were counted in."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.navigator.api.test_node_api import TOOL, bearer, navigator, node_principal, place_seat


async def test_a_registration_is_logged_as_the_tree_counts_its_tools(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    other = {**TOOL, "name": "other"}
    body = {
        "machine": "web1",
        "advertise": "http://10.0.0.1:7801",
        "heartbeatS": 5,
        "assignments": [
            {"role": "files", "module": "files", "tools": [TOOL]},
            {"role": "notes", "module": "sqlite", "seat": "notes", "tools": [TOOL, other]},
            {"role": "node", "module": "node", "kind": "node_seat", "tools": [TOOL, other]},
        ],
    }
    async with navigator(tmp_path) as (client, tokens, services):
        node = await node_principal(services, "web1")
        await place_seat(client, tokens["root"], "notes", "web1")
        caplog.set_level("INFO", logger="meshnav")
        registered = await client.post("/api/v1/nodes/register", json=body, headers=bearer(node))
    assert registered.status_code == 200, registered.text
    said = [r.getMessage() for r in caplog.records if "registered" in r.getMessage()]
    assert said == [
        "node web1 registered 5 tools: 1 in assignments, 2 in mesh seats, 2 in node seats"
    ]
