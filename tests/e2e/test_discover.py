"""``mesh.tools.discover`` answers as ``search`` with schemas, on the same endpoint (issue 4)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.harness import MeshHarness, mcp_client, tool_result

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _discover(mesh: MeshHarness, params: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(
        f"{mesh.navigator_url}/mcp",
        headers={
            "Authorization": f"Bearer {mesh.agent_token}",  # type: ignore[attr-defined]
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "mesh.tools.discover",
        },
        json={
            "jsonrpc": "2.0",
            "id": 7,
            "method": "mesh.tools.discover",
            "params": {**params, "_meta": META},
        },
        timeout=30,
    )
    body: dict[str, Any] = response.json()
    return body


async def test_discover_answers_as_search_with_schemas(mesh: MeshHarness) -> None:
    discovered = _discover(mesh, {"query": "list tables", "limit": 4})["result"]
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        searched = tool_result(
            await client.call_tool_mcp(
                "search", {"query": "list tables", "limit": 4, "schemas": True}
            )
        )
    assert [r["address"] for r in discovered["results"]] == [
        r["address"] for r in searched["results"]
    ]
    assert all("inputSchema" in r for r in discovered["results"])
    assert discovered["_meta"]["contract_digest"]


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"query": "tables", "c4n4ry": 1}, "invalid_arguments"),
        ({"query": "tables", "schemas": False}, "invalid_arguments"),
        ({"query": "tables", "within": "NOT/valid"}, "invalid_address"),
        ({"query": "tables", "cursor": "c4n4ry.c4n4ry"}, "invalid_cursor"),
        ({}, "invalid_arguments"),
    ],
)
def test_discover_errors_are_json_rpc_errors_with_the_spec_body(
    mesh: MeshHarness, params: dict[str, Any], code: str
) -> None:
    answer = _discover(mesh, params)
    assert answer["error"]["data"]["error"] == code
    assert answer["error"]["code"] == -32602
    assert "c4n4ry" not in str(answer)
