"""Issue 26 item 1: a SQLite statement's time limit bounds the node's work, and one caller does
not hold every turn. SQLite looks for an interrupt between its steps only, and one ``printf``
with a precision of two billion loops for seconds however short its value may be: a row of 127
of them answered "past its time limit" while the node's thread burned CPU for many times that,
and eight of them held all of a node's reads, so another principal's ``SELECT 1`` was refused.

The module is served here as a node serves it, behind ``CallTokenMiddleware``, with call tokens
signed for two principals; this process is the node, and its CPU counts its worker processes'."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest
from fastmcp import Client

from mesh.calltokens import META_KEY, CallTokenVerifier, sign_call_token
from mesh.digests import arguments_digest
from mesh.modules.sqlite import Workers, build_sqlite_module
from mesh.modules.turns import Turns
from mesh.server import CallTokenMiddleware

KEY = b"k" * 32
TIME_LIMIT_S = 1.5
SPIN = "length(printf('%.*c', 2147483647, 'a'))"
#: One row, 127 calls of ``printf`` each looping two billion times: SQLite checks its interrupt
#: before and after, never between them.
PRINTF_127 = "SELECT max(" + ", ".join([SPIN] * 127) + ")"


def cpu_seconds() -> float:
    """This process's CPU, its reaped children's and its live children's."""
    me = psutil.Process()
    times = me.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in me.children(recursive=True):
        try:
            child_times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += child_times.user + child_times.system
    return total


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[Client[Any]]:
    database = tmp_path / "shop.db"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    workers = Workers()
    server = build_sqlite_module(
        [database], time_limit_s=TIME_LIMIT_S, turns=Turns(), workers=workers
    )
    server.add_middleware(CallTokenMiddleware(CallTokenVerifier("db1", lambda: KEY), "sqlite"))
    try:
        async with Client(server) as client:
            yield client
    finally:
        workers.close()


async def query(client: Client[Any], principal: str, sql: str) -> Any:
    arguments = {"database": "shop", "sql": sql}
    token = sign_call_token(
        KEY,
        principal=principal,
        address="db1/sqlite/query",
        machine="db1",
        role="sqlite",
        tool="query",
        arguments_digest=arguments_digest(arguments),
    )
    return await client.call_tool_mcp("query", arguments, meta={META_KEY: token})


async def test_a_row_of_long_steps_costs_the_node_no_more_than_twice_its_time_limit(
    node: Client[Any],
) -> None:
    before = cpu_seconds()
    answer = await query(node, "alice", PRINTF_127)
    assert answer.is_error
    assert "time limit" in str(answer.content)
    await anyio.sleep(2 * TIME_LIMIT_S)  # a statement left running would go on costing
    assert cpu_seconds() - before <= 2 * TIME_LIMIT_S
    assert not (await query(node, "alice", "SELECT 1")).is_error  # the node reads on


async def test_another_principals_read_answers_while_one_sends_eight_long_ones(
    node: Client[Any],
) -> None:
    answers: dict[str, Any] = {}
    done: list[float] = []

    async def long_one(n: int) -> None:
        answers[f"alice{n}"] = await query(node, "alice", PRINTF_127)
        done.append(time.monotonic())

    async with anyio.create_task_group() as tasks:
        for n in range(8):
            tasks.start_soon(long_one, n)
        await anyio.sleep(0.3)  # alice's eight are in
        bob = await query(node, "bob", "SELECT 1")
        bob_at = time.monotonic()
    assert not bob.is_error, bob.content
    assert bob.structured_content["rows"] == [[1]]
    assert bob_at < max(done)  # while alice's were still running
    assert all(a.is_error for a in answers.values())
    busy = [a for a in answers.values() if "busy" in str(a.content)]
    assert len(busy) == 4  # alice's own four turns were taken: the rest wait, then hear why


NODE_ENDS_MID_STEP = """
import asyncio, os, sys
from pathlib import Path
from fastmcp import Client
from mesh.modules.sqlite import build_sqlite_module

async def main():
    async with Client(build_sqlite_module([Path(sys.argv[1])], time_limit_s=60)) as client:
        asyncio.get_running_loop().call_later(1.5, os._exit, 0)  # the node ends mid-step
        await client.call_tool_mcp("query", {"database": "shop", "sql": sys.argv[2]})

asyncio.run(main())
"""


def test_a_worker_ends_with_its_node(tmp_path: Path) -> None:
    """A worker in a long step has no one to answer once its node is gone: it is killed too,
    not left to burn the machine's CPU for the rest of its step."""
    database = tmp_path / "shop.db"
    sqlite3.connect(database).close()
    node = subprocess.Popen([sys.executable, "-c", NODE_ENDS_MID_STEP, str(database), PRINTF_127])
    try:
        workers: list[psutil.Process] = []
        deadline = time.monotonic() + 30
        while not workers and time.monotonic() < deadline:
            with contextlib.suppress(psutil.NoSuchProcess):
                workers = psutil.Process(node.pid).children()
            time.sleep(0.05)
        assert workers, "the node started no worker"
        node.wait(timeout=30)
        _, alive = psutil.wait_procs(workers, timeout=5)
        assert alive == []
    finally:
        node.kill()
