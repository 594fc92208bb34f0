"""One node per machine (SPEC §6, ADR 0050), with real processes: a second node started with an
existing machine's name re-registered it with its own URL, every call went to a dead URL, and the
mesh still said ``answering`` while the first node heartbeated on."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from registry import CatalogStore
from registry.audit import AuditFilter, AuditStore
from tests.e2e.test_cli import meshnav
from tests.harness import MeshHarness, NodeProcess, free_port, mcp_client, stop, tool_result

pytestmark = [pytest.mark.e2e]

#: How long a test waits for a process to do what it must (a loaded machine is slow).
WAIT_S = 30.0


@pytest.fixture
def own_mesh(tmp_path: Path) -> Iterator[MeshHarness]:
    harness = MeshHarness(tmp_path / "mesh")
    extra: list[subprocess.Popen[bytes]] = []
    try:
        harness.agent_token = harness.principal("agent")  # type: ignore[attr-defined]
        harness.admin_token = harness.principal("admin", ["mesh:admin"])  # type: ignore[attr-defined]
        harness.grant("agent", "*/*/*")
        harness.extra = extra  # type: ignore[attr-defined]
        harness.start_navigator()
        yield harness
    finally:
        for process in extra:
            stop(process)
        harness.close()


def another_node(
    mesh: MeshHarness,
    first: NodeProcess,
    log: str,
    options: list[str] = (),  # type: ignore[assignment]
) -> tuple[subprocess.Popen[bytes], str]:
    """A second node process for ``first``'s machine, with its token, on a port of its own."""
    port = free_port()
    arguments = list(first.arguments)
    arguments[arguments.index("--listen") + 1] = f"127.0.0.1:{port}"
    process = mesh._spawn(  # a second process under one machine name
        [*arguments, *options],
        log,
        {"MESHNAV_TOKEN": first.token},  # type: ignore[attr-defined]
    )
    mesh.extra.append(process)  # type: ignore[attr-defined]
    return process, f"http://127.0.0.1:{port}"


def machine_row(mesh: MeshHarness, name: str) -> Any:
    with mesh.registry.transaction() as session:
        return CatalogStore(session).machine(name)


async def wait_for(check: Any, what: str) -> None:
    with anyio.fail_after(WAIT_S):
        while not check():
            await anyio.sleep(0.05)


def console_machine(mesh: MeshHarness, name: str) -> dict[str, Any]:
    """The machine as ``GET /api/v1/mesh`` (the console's data) shows it."""
    answer = httpx.get(
        f"{mesh.navigator_url}/api/v1/mesh",
        headers={"Authorization": f"Bearer {mesh.admin_token}"},  # type: ignore[attr-defined]
        timeout=30,
    )
    answer.raise_for_status()
    return next(m for m in answer.json()["machines"] if m["name"] == name)


def listed_status(mesh: MeshHarness, name: str) -> str:
    """The machine's status as ``meshnav mesh`` lists it."""
    command = meshnav(mesh, mesh.agent_token, "mesh", "--json")  # type: ignore[attr-defined]
    entries = json.loads(command.stdout)["entries"]
    return str(next(e for e in entries if e["address"] == name)["status"])


def takeovers(mesh: MeshHarness, machine: str) -> list[str]:
    with mesh.registry.transaction() as session:
        events = AuditStore(session).events(AuditFilter(action="node.takeover", target=machine))
    return [e.entry.outcome for e in events]


async def call_hostname(mesh: MeshHarness, machine: str) -> Any:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        return await client.call_tool_mcp("call", {"address": f"{machine}/node/hostname"})


def answering_url_is_live(mesh: MeshHarness, name: str, live: str) -> None:
    """Whenever the console says the machine answers, it is at ``live``'s URL."""
    shown = console_machine(mesh, name)
    if shown["status"] == "answering":
        assert shown["advertise"] == live, shown


async def test_a_second_node_is_refused_while_the_first_answers_and_replace_takes_over(
    own_mesh: MeshHarness,
) -> None:
    mesh = own_mesh
    first = await anyio.to_thread.run_sync(lambda: mesh.start_node("tools1", ["node"]))
    assert not (await call_hostname(mesh, "tools1")).is_error

    second, _ = another_node(mesh, first, "second.log")
    with anyio.fail_after(WAIT_S):
        while second.poll() is None:
            await anyio.sleep(0.05)
    said = (mesh.root / "second.log").read_text()
    assert second.returncode == 1, said
    assert "(conflict)" in said and first.url in said and "--replace" in said, said
    assert machine_row(mesh, "tools1").advertise_url == first.url
    assert console_machine(mesh, "tools1")["status"] == "answering"
    assert not (await call_hostname(mesh, "tools1")).is_error, "the refusal changed nothing"

    third, third_url = another_node(mesh, first, "third.log", ["--replace"])
    await wait_for(lambda: machine_row(mesh, "tools1").advertise_url == third_url, "takeover")
    assert not (await call_hostname(mesh, "tools1")).is_error
    with anyio.fail_after(WAIT_S):  # its next heartbeat is refused as replaced
        while first.process.poll() is None:
            answering_url_is_live(mesh, "tools1", third_url)
            await anyio.sleep(0.1)
    assert first.process.returncode == 1
    assert "replaced" in (mesh.root / "node-tools1.log").read_text()
    await anyio.sleep(3 * mesh.heartbeat_s)  # the old instance's beats kept it answering
    shown = await anyio.to_thread.run_sync(lambda: console_machine(mesh, "tools1"))
    assert (shown["status"], shown["advertise"]) == ("answering", third_url)
    assert await anyio.to_thread.run_sync(lambda: listed_status(mesh, "tools1")) == "answering"
    assert not (await call_hostname(mesh, "tools1")).is_error
    assert third.poll() is None
    assert takeovers(mesh, "tools1") == ["replaced"]


async def test_a_node_killed_and_started_again_takes_over_at_once(own_mesh: MeshHarness) -> None:
    mesh = own_mesh
    first = await anyio.to_thread.run_sync(lambda: mesh.start_node("crash1", ["node"]))
    assert not (await call_hostname(mesh, "crash1")).is_error
    mesh.kill_node("crash1")
    killed = time.monotonic()
    again, again_url = another_node(mesh, first, "again.log")  # on another port: a dead URL
    await wait_for(lambda: machine_row(mesh, "crash1").advertise_url == again_url, "takeover")
    # within its start, not after the dead node's three missed heartbeats
    assert time.monotonic() - killed < WAIT_S
    await anyio.sleep(0.5)  # the navigator's catalogue follows within one poll
    first_call = await call_hostname(mesh, "crash1")
    assert not first_call.is_error, first_call
    for _ in range(10):
        answering_url_is_live(mesh, "crash1", again_url)
        await anyio.sleep(0.2)
    assert await anyio.to_thread.run_sync(lambda: listed_status(mesh, "crash1")) == "answering"
    assert again.poll() is None
    assert takeovers(mesh, "crash1") == ["not answering"]


async def test_a_node_stopped_cleanly_is_not_answering_at_once_and_comes_back(
    own_mesh: MeshHarness,
) -> None:
    mesh = own_mesh
    mesh.heartbeat_s = 5.0  # this node's: silence would take 15 s to tell
    node = await anyio.to_thread.run_sync(lambda: mesh.start_node("calm1", ["node"]))
    assert not (await call_hostname(mesh, "calm1")).is_error
    node.process.send_signal(signal.SIGTERM)
    with anyio.fail_after(WAIT_S):
        while node.process.poll() is None:
            await anyio.sleep(0.05)
    stopped = time.monotonic()
    assert node.process.returncode == 0
    shown = await anyio.to_thread.run_sync(lambda: console_machine(mesh, "calm1"))
    refused = await call_hostname(mesh, "calm1")
    assert time.monotonic() - stopped < 2 * mesh.heartbeat_s, "judged before it could go silent"
    assert shown["status"] == "not answering", shown
    assert "heartbeats" not in shown, "its node said it stopped: no heartbeat was missed"
    assert tool_result(refused)["error"] == "node_unavailable"
    assert await anyio.to_thread.run_sync(lambda: listed_status(mesh, "calm1")) == "not answering"

    await anyio.to_thread.run_sync(lambda: mesh.restart_node("calm1"))
    first_call = await call_hostname(mesh, "calm1")
    assert not first_call.is_error, first_call
    assert console_machine(mesh, "calm1")["status"] == "answering"
    assert takeovers(mesh, "calm1") == [], "it left the machine free: nothing was taken over"
