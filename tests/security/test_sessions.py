"""One principal cannot take the legacy era's sessions from the others (issue 26, item 3).

The MCP SDK holds 10,000 stateful sessions for everyone together: a principal with no grants
opened 9,999 in 48 s, and every other principal's legacy ``initialize`` was then refused 503.
A principal now holds at most ``MESHNAV_SESSIONS_PER_PRINCIPAL``; at its cap, its own session
idle longest is closed to make room.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.harness import MeshHarness, tool_result
from tests.reliability.test_stopping import ECHO_MODULE

pytestmark = [pytest.mark.e2e]

PER_PRINCIPAL = 3
#: The navigator's cap for everyone: one principal's sessions alone would fill it twice over.
SESSIONS_MAX = 6
OPENED = 2 * SESSIONS_MAX

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "filler", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def navigator(tmp_path: Path) -> Iterator[MeshHarness]:
    harness = MeshHarness(tmp_path / "mesh")
    harness.env["MESHNAV_SESSIONS_PER_PRINCIPAL"] = str(PER_PRINCIPAL)
    harness.env["MESHNAV_SESSIONS_MAX"] = str(SESSIONS_MAX)
    harness.filler = harness.principal("filler")  # type: ignore[attr-defined]
    harness.agent = harness.principal("agent")  # type: ignore[attr-defined]
    try:
        harness.start_navigator()
        yield harness
    finally:
        harness.close()


async def _open_session(http: httpx.AsyncClient) -> str:
    answer = await http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
    assert answer.status_code == 200, answer.text
    return answer.headers["mcp-session-id"]


async def _ping(http: httpx.AsyncClient, session: str) -> httpx.Response:
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    return await http.post("/mcp", json=ping, headers={**ACCEPT, "Mcp-Session-Id": session})


async def test_a_principal_at_its_session_cap_leaves_room_for_another(
    navigator: MeshHarness,
) -> None:
    filler = navigator.filler  # type: ignore[attr-defined]
    async with httpx.AsyncClient(
        base_url=navigator.navigator_url, headers={"Authorization": f"Bearer {filler}"}, timeout=30
    ) as http:
        sessions = [await _open_session(http) for _ in range(OPENED)]
        oldest = await _ping(http, sessions[0])
        newest = await _ping(http, sessions[-1])
    transport = StreamableHttpTransport(
        navigator.navigator_url + "/mcp",
        headers={"Authorization": f"Bearer {navigator.agent}"},  # type: ignore[attr-defined]
    )
    with anyio.fail_after(30):
        async with Client(transport, mode="legacy", timeout=30) as agent:  # type: ignore[arg-type]
            seats = tool_result(await agent.call_tool_mcp("seats", {}))
    assert "entries" in seats, seats
    assert oldest.status_code == 404, "the principal's session idle longest is closed first"
    assert "Open a fresh session" in oldest.text
    assert newest.status_code == 200, newest.text


async def test_a_principal_whose_sessions_are_all_answering_is_told_to_wait(
    navigator: MeshHarness,
) -> None:
    """No session answering a request is closed to make room: the new one is ``rate_limited``."""
    navigator.grant("filler", "*/*/*")
    await anyio.to_thread.run_sync(lambda: navigator.start_node("slow1", ["node", ECHO_MODULE]))
    filler = navigator.filler  # type: ignore[attr-defined]
    headers = {"Authorization": f"Bearer {filler}"}
    nap = {"address": "slow1/echo/nap", "args": {"seconds": 4}}
    async with (
        contextlib.AsyncExitStack() as clients,
        anyio.create_task_group() as tasks,
        httpx.AsyncClient(base_url=navigator.navigator_url, headers=headers, timeout=30) as http,
    ):
        for _ in range(PER_PRINCIPAL):
            transport = StreamableHttpTransport(navigator.navigator_url + "/mcp", headers=headers)
            client = await clients.enter_async_context(
                Client(transport, mode="legacy", timeout=30)  # type: ignore[arg-type]
            )
            tasks.start_soon(client.call_tool_mcp, "call", nap)
        await anyio.sleep(2)  # every call is in flight
        refused = await http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"] == "rate_limited"
    assert refused.json()["retryAfterS"] >= 1
