"""Nodes come and go while an agent stays connected (issue 2, acceptance 5)."""

from __future__ import annotations

import anyio
import pytest

from tests.harness import MeshHarness, mcp_client, tool_result

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]


async def test_node_started_after_connect_shows_up_without_reconnecting(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        before = tool_result(await client.call_tool_mcp("seats", {}))
        assert "late1" not in {e["address"] for e in before["entries"]}
        await anyio.to_thread.run_sync(lambda: mesh.start_node("late1", ["node"]))
        after = tool_result(await client.call_tool_mcp("seats", {}))
        found = tool_result(
            await client.call_tool_mcp("search", {"query": "uptime", "within": "late1"})
        )
    assert "late1" in {e["address"] for e in after["entries"]}
    assert found["results"][0]["address"] == "late1/node/uptime"


async def test_restarted_node_answers_the_first_call(mesh: MeshHarness) -> None:
    await anyio.to_thread.run_sync(lambda: mesh.start_node("bounce1", ["node"]))
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        assert not (
            await client.call_tool_mcp("call", {"address": "bounce1/node/hostname"})
        ).is_error
        mesh.kill_node("bounce1")
        await anyio.to_thread.run_sync(lambda: mesh.restart_node("bounce1"))
        first = await client.call_tool_mcp("call", {"address": "bounce1/node/hostname"})
    assert not first.is_error, first
