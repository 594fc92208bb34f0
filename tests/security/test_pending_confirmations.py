"""Calls waiting on a person cannot fill the navigator's connections (issue 35, item 7).

A legacy-era question (``elicitation/create``) holds its call, its request and its connection
open until the person answers or the confirm token's lifetime ends: one principal held 300
connections by never answering, and ``/healthz`` then failed. A principal now has at most
``MESHNAV_PENDING_CONFIRMATIONS`` questions waiting: past them, a call that needs confirmation is
answered at once with a confirm token, and an ``elicit-only`` call — which never runs without a
person — is ``rate_limited`` with ``retryAfterS``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.harness import MeshHarness
from tests.reliability.test_stopping import ECHO_MODULE
from tests.security.test_sessions import ACCEPT
from tests.security.test_sessions import INITIALIZE as OPENING

pytestmark = [pytest.mark.e2e]

PENDING = 3
#: The navigator's connections: fewer than the calls one principal leaves waiting on a person.
CONNECTIONS = 12
CALLS = 16
#: A legacy-era client that can show forms (and will never answer one).
INITIALIZE = {
    **OPENING,
    "params": {**OPENING["params"], "capabilities": {"elicitation": {"form": {}}}},  # type: ignore[dict-item]
}


@pytest.fixture
def mesh(tmp_path: Path) -> Iterator[MeshHarness]:
    harness = MeshHarness(tmp_path / "mesh")
    harness.env["MESHNAV_PENDING_CONFIRMATIONS"] = str(PENDING)
    harness.env["MESHNAV_MAX_CONNECTIONS"] = str(CONNECTIONS)
    harness.agent = harness.principal("agent")  # type: ignore[attr-defined]
    harness.operator = harness.principal("root", ["mesh:admin"])  # type: ignore[attr-defined]
    harness.grant("agent", "*/*/*")
    try:
        harness.start_navigator()
        harness.start_node("slow1", ["node", ECHO_MODULE])
        yield harness
    finally:
        harness.close()


def _call(request_id: int, tool: str) -> dict[str, Any]:
    arguments = {"address": f"slow1/echo/{tool}", "args": {}}
    params = {"name": "call", "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


#: The streams read so far, each kept referenced: a client that never answers holds its
#: connection (a line iterator let go is closed when collected, and its connection with it).
_HELD: list[Any] = []


async def _first_message(answer: httpx.Response) -> dict[str, Any]:
    """The first JSON-RPC message of an answer: its one JSON body, or its stream's first event,
    the stream left open."""
    if answer.headers["content-type"].startswith("application/json"):
        return json.loads(await answer.aread())  # type: ignore[no-any-return]
    lines = answer.aiter_lines()
    _HELD.append(lines)
    while (line := await anext(lines, None)) is not None:
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])  # type: ignore[no-any-return]
    raise AssertionError("the stream ended with no message")


async def _session(http: httpx.AsyncClient) -> dict[str, str]:
    opened = await http.post("/mcp", json=INITIALIZE, headers=ACCEPT)
    assert opened.status_code == 200, opened.text
    session = {**ACCEPT, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post("/mcp", json=ready, headers=session)
    return session


async def _asked(
    stack: AsyncExitStack, http: httpx.AsyncClient, session: dict[str, str], request: Any
) -> dict[str, Any]:
    """Send ``request`` and read its first message: a question is left open, never answered (its
    connection held); an answer is read and closed, as any client does."""
    sent = http.build_request("POST", "/mcp", json=request, headers=session)
    answer = await http.send(sent, stream=True)
    first = await _first_message(answer)
    if "method" in first:
        stack.push_async_callback(answer.aclose)
    else:
        await answer.aclose()
    return first


@pytest.fixture
async def agent(mesh: MeshHarness) -> AsyncIterator[httpx.AsyncClient]:
    token = mesh.agent  # type: ignore[attr-defined]
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=0)
    async with httpx.AsyncClient(
        base_url=mesh.navigator_url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
        limits=limits,
    ) as http:
        yield http


async def test_questions_past_the_bound_are_not_asked_and_health_answers(
    mesh: MeshHarness, agent: httpx.AsyncClient
) -> None:
    root = {"Authorization": f"Bearer {mesh.operator}"}  # type: ignore[attr-defined]
    marked = httpx.put(
        mesh.navigator_url + "/api/v1/tools/slow1/echo/fail/confirmation",
        json={"confirmation": "elicit-only"},
        headers=root,
    )
    assert marked.status_code == 200, marked.text
    session = await _session(agent)
    async with AsyncExitStack() as stack:
        with anyio.fail_after(60):
            # one after another, each read before the next is sent, as a client retrying would
            firsts = [
                await _asked(stack, agent, session, _call(request_id, "count"))
                for request_id in range(1, CALLS + 1)
            ]
            only_a_person = await _asked(stack, agent, session, _call(99, "fail"))
            async with httpx.AsyncClient(base_url=mesh.navigator_url, timeout=10) as probe:
                health = await probe.get("/healthz")
    _HELD.clear()
    questions = [m for m in firsts if m.get("method") == "elicitation/create"]
    tokens = [m["result"]["structuredContent"] for m in firsts if "result" in m]
    assert len(questions) == PENDING, firsts
    assert len(tokens) == CALLS - PENDING
    assert all(t["error"] == "confirmation_required" and t["confirm"] for t in tokens), tokens
    refused = only_a_person["result"]["structuredContent"]
    assert refused["error"] == "rate_limited", refused
    assert 1 <= refused["retryAfterS"] <= 120
    assert health.status_code == 200
