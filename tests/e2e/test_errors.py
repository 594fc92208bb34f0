"""Structured errors on the real mesh (SPEC §9; issue 2, acceptance 4)."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.harness import MeshHarness, mcp_client, tool_result

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]

MALFORMED = [
    "",
    "db1//list_tables",
    "/db1/sqlite/query",
    "db1/sqlite/query/extra",
    "db1/sqlite/ query",
    "db1/sqlite/que\x00ry",
    "db1/sqlite/que\nry",
    "db1/../query",
    "db1/sqlite/..",
    "dé1/sqlite/query",
    "DB1/sqlite/query",
    "db1/SQLite/query",
    "mesh",
    "db1/sqlite",
    "x" * 300,
    "db1/-sqlite/query",
]


def _error(result: object) -> str:
    body = tool_result(result)
    assert result.is_error, body  # type: ignore[attr-defined]
    assert result.meta["meshnav/error"] == body["error"]  # type: ignore[attr-defined]
    assert set(body) >= {"error", "status", "message"}
    return str(body["error"])


@pytest.mark.parametrize("address", MALFORMED)
async def test_malformed_address_is_invalid_address(mesh: MeshHarness, address: str) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        result = await client.call_tool_mcp("call", {"address": address})
    assert _error(result) == "invalid_address"
    assert address not in tool_result(result)["message"] or not address


async def test_unknown_tool(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        assert (
            _error(await client.call_tool_mcp("call", {"address": "db1/sqlite/drop_everything"}))
            == "unknown_tool"
        )
        assert (
            _error(await client.call_tool_mcp("describe", {"address": "db9/sqlite/query"}))
            == "unknown_tool"
        )


async def test_tool_not_granted(mesh: MeshHarness) -> None:
    token = mesh.principal("stranger")
    mesh.grant("stranger", "db2/*/*")
    async with mcp_client(mesh.navigator_url, token) as client:
        assert (
            _error(await client.call_tool_mcp("call", {"address": "db1/node/uptime"}))
            == "tool_not_granted"
        )
        allowed = await client.call_tool_mcp("call", {"address": "db2/node/uptime"})
        seats = tool_result(await client.call_tool_mcp("seats", {}))
    assert not allowed.is_error
    assert [e["address"] for e in seats["entries"] if e["kind"] == "machine"] == ["db2"]


@pytest.mark.parametrize("args", [[1, 2], "text", 3, None, True])
async def test_arguments_that_are_not_an_object(mesh: MeshHarness, args: object) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        result = await client.call_tool_mcp("call", {"address": "db1/node/uptime", "args": args})
    assert _error(result) == "invalid_arguments"


async def test_unknown_walker_arguments_are_refused(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        result = await client.call_tool_mcp("seats", {"adress": "db1"})
        other = await client.call_tool_mcp("delete_everything", {"canary": "c4n4ry"})
    assert _error(result) == "invalid_arguments"
    assert _error(other) == "unknown_tool"
    assert "c4n4ry" not in str(other)


@pytest.mark.parametrize(
    "headers", [{}, {"Authorization": "Bearer mnv_not-a-token"}, {"Authorization": "Basic abc"}]
)
def test_missing_or_bad_token_is_401_with_the_error_body(
    mesh: MeshHarness, headers: dict[str, str]
) -> None:
    response = httpx.post(
        mesh.navigator_url + "/mcp",
        headers={**headers, "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
    )
    assert response.status_code == 401
    assert response.json() == {
        "error": "unauthenticated",
        "status": 401,
        "message": "Missing or invalid credentials.",
    }


async def test_stopped_node_is_unavailable_quickly_and_others_keep_answering(
    mesh: MeshHarness, tmp_path: object
) -> None:
    node = mesh.start_node("tmp1", ["node"])
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        assert not (await client.call_tool_mcp("call", {"address": "tmp1/node/uptime"})).is_error
        mesh.kill_node("tmp1")
        started = time.monotonic()
        result = await client.call_tool_mcp("call", {"address": "tmp1/node/uptime"})
        elapsed = time.monotonic() - started
        other = await client.call_tool_mcp("call", {"address": "db1/node/uptime"})
    assert _error(result) == "node_unavailable"
    assert elapsed < 10, "well within the 30 s deadline"
    assert not other.is_error
    del node
