"""After a navigator restarts, meshnav's own clients go on by themselves, and a legacy session
that is gone says how to recover (issue 31, item 5; ADR 0030)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from meshnav.walker import mesh_listing, walker_call
from tests.e2e.test_cli import meshnav
from tests.harness import MeshHarness
from tests.security.test_sessions import ACCEPT, INITIALIZE

pytestmark = [pytest.mark.e2e]


async def test_after_a_restart_the_cli_goes_on_and_a_lost_session_names_the_recovery(
    tmp_path: Path,
) -> None:
    harness = MeshHarness(tmp_path / "mesh")
    token = harness.principal("agent")
    harness.grant("agent", "*/*/*")
    try:
        await anyio.to_thread.run_sync(harness.start_navigator)
        url = harness.navigator_url
        port = int(url.rsplit(":", 1)[1])
        before = await mesh_listing(url, token, None)
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as http:
            opened = await http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
            session = opened.headers["mcp-session-id"]
            await anyio.to_thread.run_sync(harness.stop_navigator)
            await anyio.to_thread.run_sync(lambda: harness.start_navigator(port))
            ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
            lost = await http.post("/mcp", json=ping, headers={**ACCEPT, "Mcp-Session-Id": session})
        after = await mesh_listing(url, token, None)
        searched = await walker_call(url, token, "search", {"query": "uptime"})
        command = await anyio.to_thread.run_sync(lambda: meshnav(harness, token, "mesh", "--json"))
    finally:
        harness.close()
    assert after == before
    assert "results" in searched
    assert command.returncode == 0, command.stderr
    assert lost.status_code == 404
    assert "the navigator restarted" in lost.json()["error"]["message"]
    assert "Open a fresh session" in lost.json()["error"]["message"]
