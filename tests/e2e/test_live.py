"""Nodes come and go while an agent stays connected (issue 2, acceptance 5)."""

from __future__ import annotations

import shlex
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from mesh.calltokens import META_KEY, sign_call_token
from mesh.digests import arguments_digest
from mesh.lifecycle import GRACE_S
from registry import CatalogStore
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


ECHO = Path(__file__).parents[1] / "mesh" / "fixtures" / "echo_server.py"
ECHO_MODULE = f"stdio:echo={shlex.quote(sys.executable)} {shlex.quote(str(ECHO))}"


@pytest.fixture
def own_mesh(tmp_path: Path) -> Iterator[MeshHarness]:
    """A mesh of the test's own: a stdio echo module left on the shared mesh would be found by
    the operators' tests, which register one and look for it."""
    harness = MeshHarness(tmp_path / "own")
    try:
        harness.agent_token = harness.principal("agent")  # type: ignore[attr-defined]
        harness.grant("agent", "*/*/*")
        harness.start_navigator()
        yield harness
    finally:
        harness.close()


def _last_heartbeat(mesh: MeshHarness, machine: str) -> float:
    with mesh.registry.transaction() as session:
        beat = CatalogStore(session).machine(machine).last_heartbeat_at
    assert beat is not None
    return beat.timestamp()


async def test_a_node_told_to_stop_stops_heartbeating_and_exits_within_its_grace(
    own_mesh: MeshHarness,
) -> None:
    """SIGTERM with a call in flight: uvicorn waited for that call (and any open connection)
    without limit while the agent went on heartbeating, so the navigator showed a machine that
    no longer listened as answering — for 28 s here, until the navigator's call deadline, and
    without end while a connection stayed open."""
    mesh = own_mesh
    node = await anyio.to_thread.run_sync(lambda: mesh.start_node("stop1", ["node", ECHO_MODULE]))
    agent = mcp_client(mesh.navigator_url, mesh.agent_token)  # type: ignore[attr-defined]
    async with agent as client, anyio.create_task_group() as tasks:
        arguments = {"address": "stop1/echo/nap", "args": {"seconds": 60}}
        tasks.start_soon(client.call_tool_mcp, "call", arguments)
        await anyio.sleep(1.5)  # the call reaches the node
        told = time.time()
        node.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(GRACE_S + 8):  # generous: a runaway took 28 s or for ever
            while node.process.poll() is None:
                await anyio.sleep(0.1)
        stopped = time.time() - told
        tasks.cancel_scope.cancel()
    assert node.process.returncode == 0, f"exit status {node.process.returncode}"
    assert stopped < GRACE_S + 8
    # one beat already on its way may land; they went on for 28 s
    assert _last_heartbeat(mesh, "stop1") < told + 1.5, "heartbeats went on after SIGTERM"


async def test_a_module_that_hangs_does_not_stop_its_machines_heartbeats(
    own_mesh: MeshHarness,
) -> None:
    """A module whose server stops answering ``tools/list`` held the agent's one loop, so its
    heartbeats stopped too and the whole machine read as not answering."""
    mesh = own_mesh
    await anyio.to_thread.run_sync(lambda: mesh.start_node("hang1", ["node", ECHO_MODULE]))
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        stalled = await client.call_tool_mcp("call", {"address": "hang1/echo/stall"})
        assert not stalled.is_error, stalled
        since = time.time()
        await anyio.sleep(5 * mesh.heartbeat_s)  # past three missed heartbeats
        machine = tool_result(await client.call_tool_mcp("seats", {"address": "hang1"}))
        uptime = await client.call_tool_mcp("call", {"address": "hang1/node/uptime"})
    assert _last_heartbeat(mesh, "hang1") > since + 2 * mesh.heartbeat_s
    assert machine["status"] == "answering", machine
    assert not uptime.is_error, uptime


async def test_a_token_a_node_accepted_does_not_run_again_after_it_restarts(
    mesh: MeshHarness,
) -> None:
    """A token seen on the wire (plain HTTP) ran its call again once the node restarted within
    the token's 30 s: nonces are remembered by the process, the key by the registry."""
    node = await anyio.to_thread.run_sync(lambda: mesh.start_node("replay1", ["node"]))
    with mesh.registry.transaction() as session:
        key = CatalogStore(session).node_key("replay1")
    assert key is not None
    signed = sign_call_token(
        key,
        principal="agent",
        address="replay1/node/hostname",
        machine="replay1",
        role="node",
        tool="hostname",
        arguments_digest=arguments_digest({}),
    )
    url = f"{node.url}/mcp/node"
    async with Client(StreamableHttpTransport(url), timeout=30) as direct:
        first = await direct.call_tool_mcp("hostname", {}, meta={META_KEY: signed})
        again = await direct.call_tool_mcp("hostname", {}, meta={META_KEY: signed})
    assert not first.is_error, first
    assert again.is_error
    mesh.kill_node("replay1")
    await anyio.to_thread.run_sync(lambda: mesh.restart_node("replay1"))
    async with Client(StreamableHttpTransport(url), timeout=30) as direct:
        replayed = await direct.call_tool_mcp("hostname", {}, meta={META_KEY: signed})
    assert replayed.is_error, "a token accepted before the restart ran again"
    assert (replayed.meta or {}).get("meshnav/error") == "node_unavailable"
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        through = await client.call_tool_mcp("call", {"address": "replay1/node/hostname"})
    assert not through.is_error, through


async def test_a_navigator_told_to_stop_exits_cleanly_with_agents_connected(
    tmp_path: Path,
) -> None:
    """SIGTERM with an agent's session open: the navigator drains within its grace and exits 0
    (uvicorn waited for every connection without limit, then raised the signal again)."""
    harness = MeshHarness(tmp_path / "stop")
    token = harness.principal("agent")
    try:
        await anyio.to_thread.run_sync(harness.start_navigator)
        navigator = harness.navigator
        assert navigator is not None
        async with mcp_client(harness.navigator_url, token) as client:
            await client.call_tool_mcp("seats", {})
            told = time.monotonic()
            navigator.send_signal(signal.SIGTERM)
            with anyio.fail_after(GRACE_S + 8):
                while navigator.poll() is None:
                    await anyio.sleep(0.1)
        assert navigator.returncode == 0
        assert time.monotonic() - told < GRACE_S + 8
        said = (harness.root / "navigator.log").read_text()
        assert f"meshnav navigator: MCP at {harness.navigator_url}/mcp" in said
        assert "Traceback" not in said
    finally:
        harness.close()
