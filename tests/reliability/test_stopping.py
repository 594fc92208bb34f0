"""A navigator told to stop hands over what it finished (issue 31, item 4; ADR 0030).

Five calls finished during the drain and the navigator sent each answer, yet all five clients
raised "Connection closed": after a result the MCP SDK's client asks ``tools/list`` to check it,
and the stopping navigator no longer listened. An idle legacy session held the exit for 11 s.
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from mesh.lifecycle import GRACE_S
from tests.e2e.test_audit import audit_json
from tests.harness import MeshHarness, tool_result

pytestmark = [pytest.mark.e2e]

ECHO = Path(__file__).parents[1] / "mesh" / "fixtures" / "echo_server.py"
ECHO_MODULE = f"stdio:echo={shlex.quote(sys.executable)} {shlex.quote(str(ECHO))}"
IN_FLIGHT = 5
NAP_S = 3.0


@pytest.fixture
def mesh(tmp_path: Path) -> Iterator[MeshHarness]:
    harness = MeshHarness(tmp_path / "mesh")
    harness.agent_token = harness.principal("agent")  # type: ignore[attr-defined]
    harness.grant("agent", "*/*/*")
    try:
        harness.start_navigator()
        harness.start_node("slow1", ["node", ECHO_MODULE])
        yield harness
    finally:
        harness.close()


def _client(mesh: MeshHarness, mode: str) -> Client[StreamableHttpTransport]:
    transport = StreamableHttpTransport(
        mesh.navigator_url + "/mcp",
        headers={"Authorization": f"Bearer {mesh.agent_token}"},  # type: ignore[attr-defined]
    )
    return Client(transport, mode=mode, timeout=60)  # type: ignore[arg-type]


async def _exited(mesh: MeshHarness, within_s: float) -> float:
    """Seconds from now until the navigator process has exited (0 is its status)."""
    navigator = mesh.navigator
    assert navigator is not None
    began = time.monotonic()
    with anyio.fail_after(within_s):
        while navigator.poll() is None:
            await anyio.sleep(0.05)
    assert navigator.returncode == 0, navigator.returncode
    return time.monotonic() - began


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_calls_in_flight_at_sigterm_reach_their_clients(mesh: MeshHarness, mode: str) -> None:
    results: list[Any] = []
    failures: list[BaseException] = []

    async def call(client: Client[StreamableHttpTransport]) -> None:
        try:
            arguments = {"address": "slow1/echo/nap", "args": {"seconds": NAP_S}}
            results.append(await client.call_tool_mcp("call", arguments))
        except Exception as error:  # what the clients raised: "Connection closed"
            failures.append(error)

    navigator = mesh.navigator
    assert navigator is not None
    async with contextlib.AsyncExitStack() as clients, anyio.create_task_group() as tasks:
        for _ in range(IN_FLIGHT):  # sessions open first: every call is sent at once
            tasks.start_soon(call, await clients.enter_async_context(_client(mesh, mode)))
        await anyio.sleep(NAP_S / 2)  # every call has reached the node
        navigator.send_signal(signal.SIGTERM)
        await anyio.sleep(0.3)
        async with _client(mesh, mode) as late:
            refused = tool_result(
                await late.call_tool_mcp("call", {"address": "slow1/echo/echo", "args": {}})
            )
            listed = await late.list_tools()
    await _exited(mesh, GRACE_S + 5)
    assert not failures, failures
    assert len(results) == IN_FLIGHT
    for result in results:
        assert not result.is_error, result
        assert result.structured_content["slept"] == NAP_S, result
    assert refused["error"] == "navigator_stopping", refused
    assert refused["retryAfterS"] > 0
    assert {tool.name for tool in listed} >= {"seats", "search", "describe", "call"}


async def test_an_idle_legacy_session_does_not_hold_the_exit(mesh: MeshHarness) -> None:
    """Its open GET stream held the navigator for its whole grace, 11 s."""
    navigator = mesh.navigator
    assert navigator is not None
    async with _client(mesh, "legacy") as client:
        tool_result(await client.call_tool_mcp("seats", {}))
        await anyio.sleep(0.5)
        navigator.send_signal(signal.SIGTERM)
        took = await _exited(mesh, GRACE_S + 5)
    assert took < 3.0, f"the navigator took {took:.1f} s to exit"


async def test_a_call_refused_for_the_stop_is_audited_with_its_principal(
    mesh: MeshHarness,
) -> None:
    """Refused before the audited path, such calls left no event (issue 37, item 6)."""
    navigator = mesh.navigator
    assert navigator is not None
    async with (
        _client(mesh, "auto") as busy,
        _client(mesh, "auto") as late,
        anyio.create_task_group() as tasks,  # a call in flight holds the drain open
    ):
        arguments = {"address": "slow1/echo/nap", "args": {"seconds": NAP_S}}
        tasks.start_soon(busy.call_tool_mcp, "call", arguments)
        await anyio.sleep(NAP_S / 2)
        navigator.send_signal(signal.SIGTERM)
        await anyio.sleep(0.3)
        for _ in range(2):
            refused = await late.call_tool_mcp("call", {"address": "slow1/echo/echo"})
            assert tool_result(refused)["error"] == "navigator_stopping", refused
    await _exited(mesh, GRACE_S + 5)
    events = audit_json(mesh.database_url, "--outcome", "navigator_stopping")
    assert [(e["action"], e["principal"], e["target"], e["count"]) for e in events] == [
        ("request", "agent", "/mcp from 127.0.0.1: tools/call", 2)
    ], events


@pytest.mark.xfail(
    reason="racy: on a quiet machine the drain closes the legacy session as idle before its call "
    "ends, so the call is never cut and is recorded ok (ADR 0056 names the gap)",
    strict=False,
)
async def test_a_call_answered_after_the_grace_is_recorded_as_its_client_received_it(
    mesh: MeshHarness,
) -> None:
    """Its node answered once the drain's grace had ended: no answer reached the client, yet
    the audit recorded ``ok`` (issue 37, item 6)."""
    navigator = mesh.navigator
    assert navigator is not None
    received: list[Any] = []
    nap_s = 0.5 + GRACE_S + 0.4  # ends after the grace, before uvicorn's last second is over
    try:
        async with _client(mesh, "legacy") as client, anyio.create_task_group() as tasks:

            async def call() -> None:
                arguments = {"address": "slow1/echo/nap", "args": {"seconds": nap_s}}
                try:
                    received.append(await client.call_tool_mcp("call", arguments))
                except Exception as error:
                    received.append(error)

            tasks.start_soon(call)
            await anyio.sleep(0.5)
            navigator.send_signal(signal.SIGTERM)
            await _exited(mesh, GRACE_S + 10)
            tasks.cancel_scope.cancel()
    except Exception as error:  # leaving a client whose navigator is gone raises
        received.append(error)
    events = audit_json(mesh.database_url, "--action", "call")
    assert [(e["target"], e["outcome"]) for e in events] == [("slow1/echo/nap", "cancelled")], (
        events,
        received,
    )
    assert not any(getattr(r, "structured_content", None) for r in received), received
