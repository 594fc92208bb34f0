"""A call the caller's quota refuses is answered before the MCP machinery (ADR 0048): the same
SPEC §9 tool error with ``retryAfterS``, in either protocol era, audited as the walker audits it,
without a session's stream — while a call the quota admits, and every other request, goes on to
the MCP app as before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.catalog.registrar import AssignmentSpec
from navigator.settings import NavigatorSettings
from registry import AccessStore, Quota
from registry.audit import AuditFilter, AuditStore
from tests.harness import serving, tool_result
from tests.security.test_sessions import ACCEPT, INITIALIZE

CALL = {"address": "m1/r/t", "args": {}}


@asynccontextmanager
async def _navigator(tmp_path: Path) -> AsyncIterator[tuple[str, str, Any]]:
    """A navigator over real HTTP, and the token of ``alice``, limited to 2 calls a minute."""
    app = build_app(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}"))
    token = mint_token()

    def alice(session: Any) -> None:
        store = AccessStore(session)
        store.add_principal("alice", scopes=[], token_hash=hash_token(token), quota=Quota(2, None))
        store.grant("alice", "*/*/*", effect="allow")

    async with serving(app, lifespan="on") as port:
        services = app.state.meshnav
        await services.transact(alice)
        tool = {"name": "t", "inputSchema": {"type": "object"}}
        await services.registrar.put_assignment(
            "m1", AssignmentSpec(role="r", module="x", tools=[tool])
        )
        yield f"http://127.0.0.1:{port}", token, services


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_refused_call_is_the_same_tool_error_in_either_era(
    tmp_path: Path, mode: str
) -> None:
    async with _navigator(tmp_path) as (url, token, services):
        transport = StreamableHttpTransport(
            url + "/mcp", headers={"Authorization": f"Bearer {token}"}
        )
        with anyio.fail_after(30):
            async with Client(transport, mode=mode, timeout=30) as agent:  # type: ignore[arg-type]
                answers = [await agent.call_tool_mcp("call", CALL) for _ in range(4)]
                seats = await agent.call_tool_mcp("seats", {})  # not a call: not counted
        await services.audit.flush()
        with services.registry.read_transaction() as session:
            events = AuditStore(session).events(AuditFilter(principal="alice"))
    bodies = [tool_result(answer) for answer in answers]
    assert [body["error"] for body in bodies] == ["node_unavailable"] * 2 + ["rate_limited"] * 2
    for answer, body in zip(answers[2:], bodies[2:], strict=True):
        assert answer.is_error
        assert (answer.meta or {}).get("meshnav/error") == "rate_limited"
        assert body["status"] == 429
        assert 59 <= body["retryAfterS"] <= 60
    assert not seats.is_error
    calls = [e.entry for e in events if e.entry.action == "call"]
    assert sorted(e.outcome for e in calls) == ["node_unavailable"] * 2 + ["rate_limited"] * 2
    assert {e.target for e in calls} == {"m1/r/t"}


async def test_a_refused_call_takes_no_session_stream(tmp_path: Path) -> None:
    """The MCP SDK answers a legacy-era call over its session's event stream; a refused one is
    answered at once as one JSON body, its session never consulted."""
    async with (
        _navigator(tmp_path) as (url, token, _),
        httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {token}", **ACCEPT}, timeout=30
        ) as http,
    ):
        opened = await http.post("/mcp", json=INITIALIZE)
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
        await http.post(
            "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
        )
        call = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "call", "arguments": CALL},
        }
        admitted = [await http.post("/mcp", json=call, headers=session) for _ in range(2)]
        refused = await http.post("/mcp", json=call, headers=session)
        ping = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 8, "method": "ping"}, headers=session
        )
    assert all(a.headers["content-type"].startswith("text/event-stream") for a in admitted)
    assert refused.status_code == 200
    assert refused.headers["content-type"] == "application/json"
    answer = refused.json()
    assert answer["id"] == 7
    assert answer["result"]["isError"] is True
    assert answer["result"]["structuredContent"]["error"] == "rate_limited"
    assert ping.status_code == 200, "the session goes on"
