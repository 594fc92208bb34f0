"""The ``stdio`` module with a real MCP server subprocess (fixtures/echo_server.py): tools pass
through unchanged, every call rides one long-lived session, progress and errors come back to the
caller, the node's environment stays out, and the subprocess lives exactly as long as the server.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
import pytest_asyncio
from fastmcp import Client, FastMCP
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from mesh.agent import NodeAgent
from mesh.calltokens import CallTokenVerifier
from mesh.errors import ModuleSpecError
from mesh.modules import ModuleSpec
from mesh.modules.stdio import build_stdio_module
from mesh.server import Assignment, NodeApp
from mesh.settings import NodeSettings

# One event loop for the module, so that most tests share one subprocess: starting a Python MCP
# server takes seconds. Tests that crash or stop it make their own (``server``).
pytestmark = pytest.mark.asyncio(loop_scope="module")

ECHO = Path(__file__).parent / "fixtures" / "echo_server.py"
COMMAND = f"{shlex.quote(sys.executable)} {shlex.quote(str(ECHO))}"


@pytest.fixture
def server() -> FastMCP:
    return build_stdio_module("echo", COMMAND)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client() -> AsyncIterator[Client[Any]]:
    async with Client(build_stdio_module("echo", COMMAND)) as client:
        yield client


async def count(client: Client[Any]) -> dict[str, int]:
    result = await client.call_tool("count", {})
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_tools_pass_through_unchanged(client: Client[Any]) -> None:
    async with Client(StdioTransport(sys.executable, [str(ECHO)])) as direct:
        expected = {t.name: t.model_dump(exclude={"meta"}) for t in await direct.list_tools()}
    proxied = {t.name: t.model_dump(exclude={"meta"}) for t in await client.list_tools()}
    assert proxied == expected
    assert proxied["echo"]["annotations"]["read_only_hint"] is True


async def test_calls_share_one_long_lived_session(client: Client[Any]) -> None:
    first, second, third = [await count(client) for _ in range(3)]
    assert [second["calls"], third["calls"]] == [first["calls"] + 1, first["calls"] + 2]
    assert first["pid"] == second["pid"] == third["pid"]


async def test_overlapping_calls_share_the_session_too(client: Client[Any]) -> None:
    start = await count(client)
    answers: list[dict[str, int]] = []

    async def one() -> None:
        answers.append(await count(client))

    async with anyio.create_task_group() as tasks:
        for _ in range(10):
            tasks.start_soon(one)
    assert sorted(a["calls"] for a in answers) == [start["calls"] + n for n in range(1, 11)]
    assert {a["pid"] for a in answers} == {start["pid"]}


async def test_an_answer_comes_back_whole(client: Client[Any]) -> None:
    result = await client.call_tool("echo", {"text": "hello"})
    assert result.structured_content == {"text": "hello"}


async def test_the_servers_own_error_comes_back_as_its_error(client: Client[Any]) -> None:
    result = await client.call_tool("fail", {}, raise_on_error=False)
    assert result.is_error
    assert "echo failed on purpose" in str(result.content[0].text)  # type: ignore[union-attr]


async def test_progress_reaches_the_caller_that_made_it(client: Client[Any]) -> None:
    seen: dict[int, list[tuple[float, float | None, str | None]]] = {2: [], 3: []}

    async def slow(steps: int) -> None:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen[steps].append((progress, total, message))

        result = await client.call_tool("slow", {"steps": steps}, progress_handler=on_progress)
        assert result.structured_content == {"steps": steps}

    async with anyio.create_task_group() as tasks:  # two overlapping calls on one session
        tasks.start_soon(slow, 2)
        tasks.start_soon(slow, 3)
    assert seen[2] == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert seen[3] == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_a_tool_list_change_is_seen_at_once(server: FastMCP) -> None:
    async with Client(server) as client:
        assert "grown" not in {tool.name for tool in await client.list_tools()}
        await client.call_tool("grow", {})
        result = await client.call_tool("grown", {})  # no list in between
    assert result.data == "grown"


async def test_the_nodes_environment_stays_out(
    client: Client[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MESHNAV_TOKEN", "node-secret")
    result = await client.call_tool("env", {"name": "MESHNAV_TOKEN"})
    assert result.structured_content == {"value": None}


async def test_a_crashed_subprocess_is_started_again(server: FastMCP) -> None:
    async with Client(server) as client:
        before = await count(client)
        crashed = await client.call_tool("exit_now", {}, raise_on_error=False)
        assert crashed.is_error
        after = await count(client)
    assert after["pid"] != before["pid"]
    assert after["calls"] == 1


async def test_an_endless_line_ends_the_session_not_the_node(server: FastMCP) -> None:
    """The SDK's reader keeps a line until its newline comes: unbounded, a server that writes
    one endless line would take the node's memory with it. Past ``LINE_CHARS`` (8 Mi) the
    session ends."""
    node = psutil.Process(os.getpid())
    async with Client(server) as client:
        before = await count(client)
        resident = node.memory_info().rss
        started = time.monotonic()
        failed = await client.call_tool("endless", {}, raise_on_error=False)
        assert failed.is_error
        assert time.monotonic() - started < 30  # not the call's 60 s deadline
        assert node.memory_info().rss - resident < 64 << 20
        after = await count(client)
    assert after["pid"] != before["pid"]  # the next call started the subprocess again


async def test_a_line_that_is_not_utf_8_does_not_wedge_the_session() -> None:
    """The SDK's reader decoded strictly, and its decoding error ended the reader without ending
    the session: that call and every later one waited out the deadline, for good, with the
    subprocess alive. Such a line is read as any other line that is not JSON."""
    async with Client(build_stdio_module("echo", COMMAND, call_deadline_s=5.0)) as client:
        before = await count(client)
        stray = await client.call_tool("stray", {}, raise_on_error=False)
        after = await count(client)
    assert not stray.is_error, stray
    assert after["pid"] == before["pid"]
    assert after["calls"] == before["calls"] + 1


async def test_the_subprocess_ends_with_the_server(server: FastMCP) -> None:
    async with Client(server) as client:
        pid = (await count(client))["pid"]
        assert psutil.pid_exists(pid)
    deadline = time.monotonic() + 10
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the subprocess outlived its server"
        await anyio.sleep(0.05)


@pytest.mark.parametrize("command", ["", "   ", 'python "unbalanced'])
async def test_a_bad_command_is_refused(command: str) -> None:
    with pytest.raises(ModuleSpecError):
        build_stdio_module("echo", command)


async def test_building_starts_nothing() -> None:
    before = {p.pid for p in psutil.Process(os.getpid()).children()}
    build_stdio_module("echo", COMMAND)
    assert {p.pid for p in psutil.Process(os.getpid()).children()} == before


async def test_a_call_the_subprocess_does_not_answer_is_given_up() -> None:
    """The navigator gives up after its own deadline without the node seeing it go: a call the
    subprocess never answers would hold the node's call (and a synchronous server's thread)."""
    server = build_stdio_module("echo", COMMAND, call_deadline_s=3.0)
    async with Client(server) as deadline_client:
        await count(deadline_client)  # started: the handshake is not the call's to wait for
        started = time.monotonic()
        with pytest.raises(ToolError, match=r"did not answer within 3 s"):
            await deadline_client.call_tool("slow", {"steps": 1200})  # 60 s
        assert time.monotonic() - started < 30
        assert (await count(deadline_client))["calls"] >= 2  # the session still serves


async def test_a_call_without_a_token_starts_no_subprocess() -> None:
    """The node's token check runs before anything the module adds (its deadline opens the
    session, and so starts the subprocess)."""
    server = build_stdio_module("echo", COMMAND)
    spec = ModuleSpec(module="stdio", role="echo", argument=COMMAND)
    NodeApp([Assignment(spec, server)], CallTokenVerifier("db1", lambda: b"k" * 32))
    before = {p.pid for p in psutil.Process(os.getpid()).children()}
    async with Client(server) as client:
        refused = await client.call_tool_mcp("count", {})
        assert await client.list_tools() == []
        assert {p.pid for p in psutil.Process(os.getpid()).children()} == before
    assert refused.is_error


async def test_a_subprocess_that_cannot_start_keeps_its_tools_on_the_mesh() -> None:
    """It listed no tools, and the node pushed that empty list: its tools left the catalogue,
    where they should stay and answer node_unavailable."""
    server = build_stdio_module("broken", "false")
    with pytest.raises(Exception):  # whatever the MCP client raises
        await server.list_tools(run_middleware=False)
    assignment = Assignment(ModuleSpec(module="stdio", role="broken", argument="false"), server)
    agent = NodeAgent(NodeSettings(name="n1"), [assignment])
    try:
        assert await agent._tools(assignment) is None  # never listed: not registered yet
        agent._listed["broken"] = [{"name": "lookup"}]
        assert await agent._tools(assignment) == [{"name": "lookup"}]
    finally:
        await agent.http.aclose()
