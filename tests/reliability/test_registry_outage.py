"""Legacy-era MCP sessions outlive a registry outage, and the outage's refusals are audited
(issue 37, items 2 and 6; ADR 0056).

During a PostgreSQL outage a call on an existing legacy-era session was answered HTTP 404
"Session not found: the navigator restarted…" (false: the same session worked again after), and
a legacy session opened during the outage had no owner, so it was refused 404 forever after.
Every request refused for the outage left no audit event.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from tests.e2e.test_audit import api_audit
from tests.e2e.test_multi_navigator import own_postgres
from tests.harness import MeshHarness, tool_result
from tests.postgres_server import PostgresServer
from tests.security.test_sessions import ACCEPT, INITIALIZE

__all__ = ["own_postgres"]  # the outage tests' fixture: a PostgreSQL of the test's own

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.xdist_group("postgres")]

SEATS = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "seats"}}


def _legacy(mesh: MeshHarness, token: str) -> Client[StreamableHttpTransport]:
    transport = StreamableHttpTransport(
        mesh.navigator_url + "/mcp", headers={"Authorization": f"Bearer {token}"}
    )
    return Client(transport, mode="legacy", timeout=30)  # type: ignore[arg-type]


async def _open(http: httpx.AsyncClient) -> httpx.Response:
    return await http.post("/mcp", json=INITIALIZE, headers=ACCEPT)


async def _seats(http: httpx.AsyncClient, session: str) -> httpx.Response:
    return await http.post("/mcp", json=SEATS, headers={**ACCEPT, "Mcp-Session-Id": session})


def _refused_for_the_outage(answer: httpx.Response) -> None:
    assert answer.status_code == 503, (answer.status_code, answer.text)
    assert answer.json()["error"] == "registry_unavailable", answer.text


async def test_legacy_sessions_outlive_a_registry_outage_and_its_refusals_are_audited(
    own_postgres: PostgresServer, tmp_path: Path
) -> None:
    mesh = MeshHarness(tmp_path / "mesh", database_url=own_postgres.create_database("outage"))
    mesh.env["MESHNAV_AUDIT_FLUSH_S"] = "0.2"
    mesh.env["MESHNAV_AUDIT_REFUSAL_WINDOW_S"] = "0.5"
    mesh.start_navigator()
    admin = mesh.principal("ops", ["mesh:admin"])
    agent = mesh.principal("agent")
    mesh.grant("agent", "*/*/*")
    mesh.registry.dispose()
    headers = {"Authorization": f"Bearer {agent}"}
    failures: list[BaseException] = []
    try:
        async with (
            httpx.AsyncClient(base_url=mesh.navigator_url, headers=headers, timeout=30) as http,
            _legacy(mesh, agent) as client,
        ):
            assert not (await client.call_tool_mcp("seats", {})).is_error
            opened = await _open(http)
            session = opened.headers["mcp-session-id"]
            await anyio.to_thread.run_sync(own_postgres.pause)

            _refused_for_the_outage(await _seats(http, session))  # was 404 "Session not found"
            _refused_for_the_outage(await _open(http))  # was a session of no one's
            try:
                await client.call_tool_mcp("seats", {})
            except Exception as error:  # the SDK's client: an error response, its session kept
                failures.append(error)
            try:
                async with _legacy(mesh, agent) as during:
                    await during.call_tool_mcp("seats", {})
            except Exception as error:
                failures.append(error)

            await anyio.to_thread.run_sync(own_postgres.resume)
            again = await _seats(http, session)
            after = await client.call_tool_mcp("seats", {})
            reopened = await _open(http)
            async with _legacy(mesh, agent) as fresh:
                fresh_seats = await fresh.call_tool_mcp("seats", {})
        events = await _outage_events(mesh, admin)
    finally:
        mesh.close()
    assert len(failures) == 2, failures
    assert again.status_code == 200, again.text
    assert '"isError":false' in again.text and '"kind":"mesh"' in again.text, again.text
    assert not after.is_error, tool_result(after)
    assert reopened.status_code == 200 and reopened.headers["mcp-session-id"]
    assert not fresh_seats.is_error, tool_result(fresh_seats)
    assert events, "the requests refused for the outage left no audit event"
    for event in events:
        assert event["action"] == "request", event
        assert event["target"].startswith("/mcp from 127.0.0.1: token "), event
        assert event["principal"] == "", event
    # each refused request is counted: two raw, the legacy client's call, and the opening attempt
    assert sum(event["count"] for event in events) >= 4, events


async def _outage_events(mesh: MeshHarness, admin: str) -> list[dict[str, Any]]:
    """The audit's events of requests refused ``registry_unavailable``, once written."""
    deadline = time.monotonic() + 15
    while True:
        events = await anyio.to_thread.run_sync(
            lambda: api_audit(mesh.navigator_url, admin, outcome="registry_unavailable")
        )
        if events or time.monotonic() > deadline:
            return events
        await anyio.sleep(0.3)
