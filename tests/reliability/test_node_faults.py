"""A node that stops answering fails fast, and answers again at once (issue 31, items 1 and 2)."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from navigator.errors import NodeUnavailable
from navigator.nodes.probes import Probes
from tests.harness import (
    MeshHarness,
    free_port,
    mcp_client,
    start_backend,
    start_two_machines,
    stop,
    tool_result,
    undeclared,
)

pytestmark = [pytest.mark.e2e]

ADDRESS = "db1/sqlite/list_databases"


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[MeshHarness]:
    mesh = MeshHarness(tmp_path / "run", heartbeat_s=0.5)
    # a call that waited out its deadline would still fail the test's bound, in far less time
    mesh.env["MESHNAV_CALL_DEADLINE_S"] = "4"
    try:
        start_two_machines(mesh, tmp_path)
        yield mesh
    finally:
        for node in mesh.nodes.values():  # a stopped process cannot act on SIGTERM
            if node.process.poll() is None:
                os.kill(node.process.pid, signal.SIGCONT)
        mesh.close()


async def _machine(client: Any, name: str) -> dict[str, Any]:
    answer = tool_result(await client.call_tool_mcp("seats", {}))
    return next(e for e in answer["entries"] if e["address"] == name)


async def _until_status(client: Any, name: str, status: str, within_s: float = 20) -> None:
    with anyio.fail_after(within_s):
        while (await _machine(client, name))["status"] != status:
            await anyio.sleep(0.1)


async def test_a_frozen_node_is_failed_fast_and_called_again_once_it_answers(
    harness: MeshHarness,
) -> None:
    node = harness.nodes["db1"].process
    async with mcp_client(harness.navigator_url, harness.agent_token) as client:  # type: ignore[attr-defined]
        assert not (await client.call_tool_mcp("call", {"address": ADDRESS})).is_error
        os.kill(node.pid, signal.SIGSTOP)
        await _until_status(client, "db1", "not answering")
        assert (await _machine(client, "db1"))["heartbeats"] == "missed"
        # the machine's own listing says so too, in a field its output schema declares
        declared = {tool.name: tool.output_schema for tool in await client.list_tools()}
        own = tool_result(await client.call_tool_mcp("seats", {"address": "db1"}))
        assert own["heartbeats"] == "missed"
        assert undeclared(declared["seats"], own) == [], own
        for _ in range(5):
            started = time.monotonic()
            result = await client.call_tool_mcp("call", {"address": ADDRESS})
            elapsed = time.monotonic() - started
            body = tool_result(result)
            assert body["error"] == "node_unavailable", body
            assert elapsed < 0.5, elapsed
            assert set(body) == {"error", "status", "message", "since"}
        other = await client.call_tool_mcp("call", {"address": "web1/node/uptime"})
        assert not other.is_error
        os.kill(node.pid, signal.SIGCONT)
        # "answers again": a heartbeat of it recorded since (or a probe it answered, ADR 0031)
        await _until_status(client, "db1", "answering")
        again = await client.call_tool_mcp("call", {"address": ADDRESS})
        assert not again.is_error, tool_result(again)


LOCK_HOLDER = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("ROLLBACK")
"""


async def test_a_registry_write_lock_does_not_turn_answering_nodes_not_answering(
    harness: MeshHarness,
) -> None:
    database = harness.database_url.removeprefix("sqlite:///")
    async with mcp_client(harness.navigator_url, harness.agent_token) as client:  # type: ignore[attr-defined]
        holder = subprocess.Popen(
            [sys.executable, "-c", LOCK_HOLDER, database, "10"], stdout=subprocess.PIPE
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
            held_until = time.monotonic() + 10
            saw_unwritable = False
            while time.monotonic() < held_until - 0.5:
                for name in ("db1", "web1"):
                    machine = await _machine(client, name)
                    assert machine["status"] == "answering", machine
                call = await client.call_tool_mcp("call", {"address": ADDRESS})
                assert not call.is_error, tool_result(call)
                async with httpx.AsyncClient() as http:
                    ready = (await http.get(harness.navigator_url + "/readyz")).json()
                if ready.get("registry") == "not writable":
                    saw_unwritable = True
                    assert "since" in ready
                    machine = await _machine(client, "db1")
                    assert machine.get("heartbeats") in (None, "unrecorded"), machine
                await anyio.sleep(0.25)
            assert saw_unwritable, "/readyz said the registry cannot be written"
        finally:
            holder.wait(timeout=30)
            assert holder.stdout is not None
            holder.stdout.close()
        await _until_status(client, "db1", "answering")
        async with httpx.AsyncClient() as http:
            with anyio.fail_after(20):
                while (await http.get(harness.navigator_url + "/readyz")).json().get(
                    "registry"
                ) != "writable":
                    await anyio.sleep(0.2)


async def test_a_probe_lets_calls_through_only_to_a_server_that_answers() -> None:
    """The probe (ADR 0031): a server that answers lets the call through; a port nobody serves
    refuses it at once, saying since when, and so does every call while that verdict holds."""
    backend, port = start_backend()
    probes = Probes(ssl.create_default_context())
    since = datetime(2026, 12, 2, 4, 0, tzinfo=UTC)
    try:
        await probes.admit(f"http://127.0.0.1:{port}/mcp", since)
        silent = f"http://127.0.0.1:{free_port()}/mcp"
        for _ in range(3):
            started = time.monotonic()
            with pytest.raises(NodeUnavailable) as refused:
                await probes.admit(silent, since)
            assert time.monotonic() - started < 0.5
            assert refused.value.extra == {"since": "2026-12-02T04:00:00+00:00"}
    finally:
        await probes.close()
        stop(backend)
