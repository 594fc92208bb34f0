"""Calls reusing a connection the node closes just then are not lost (issue 31, item 3).

A server closes a connection idle for its keep-alive; a client that takes the connection from its
pool at that moment sends a request nobody reads. The navigator sends such a request again, once,
on a fresh connection: the node never read it (SPEC §3). The node here keeps idle connections for
``KEEP_ALIVE_S`` only (whatever the nodes' own setting), and calls come at gaps swept across it.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import httpx
import pytest

from navigator.nodes.connections import NodeConnections
from tests.harness import STARTUP_S, free_port, stop

pytestmark = [pytest.mark.e2e]

KEEP_ALIVE_S = 0.1
CALLS = 2000
WORKERS = 10
#: Gaps from 12 ms under the keep-alive to 12 ms past it, in steps of 1 ms.
GAPS_S = [KEEP_ALIVE_S + step / 1000 for step in range(-12, 13)]

SERVER = """
import sys
import uvicorn
from fastmcp import FastMCP

server = FastMCP("keep-alive")

@server.tool(annotations={"readOnlyHint": True})
def echo(text: str) -> dict[str, str]:
    return {"text": text}

uvicorn.run(
    server.http_app(path="/mcp"),
    host="127.0.0.1",
    port=int(sys.argv[1]),
    log_level="warning",
    timeout_keep_alive=float(sys.argv[2]),
)
"""


@pytest.fixture
def endpoint() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(KEEP_ALIVE_S)])
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


@pytest.mark.timeout(300)
async def test_calls_at_gaps_across_the_keep_alive_are_never_lost(endpoint: str) -> None:
    connections = NodeConnections()
    failures: list[str] = []
    answered = 0

    async def worker(first: int) -> None:
        nonlocal answered
        for n in range(first, CALLS, WORKERS):
            await anyio.sleep(GAPS_S[n % len(GAPS_S)])
            text = f"call {n}"
            try:
                result = await connections.call(
                    endpoint, "echo", {"text": text}, token=None, deadline_s=10
                )
            except Exception as error:  # every failure counted, none hidden
                failures.append(type(error).__name__)
                continue
            assert result.structured_content == {"text": text}
            answered += 1

    try:
        with anyio.fail_after(240):
            async with anyio.create_task_group() as tasks:
                for first in range(WORKERS):
                    tasks.start_soon(worker, first)
    finally:
        await connections.close()
    assert failures == []
    assert answered == CALLS
