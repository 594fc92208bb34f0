"""The ``node`` module: host facts, read-only, with structured answers."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from typing import Any

import psutil
import pytest
from fastmcp import Client

from mesh.modules.node import PSEUDO_FILESYSTEMS, build_node_module

TOOLS = {"hostname", "uptime", "load", "memory", "disk_usage", "listening_ports"}


@pytest.fixture
async def client() -> AsyncIterator[Client[Any]]:
    async with Client(build_node_module()) as client:
        yield client


async def call(client: Client[Any], name: str) -> dict[str, Any]:
    result = await client.call_tool(name, {})
    assert not result.is_error
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_tools_are_the_host_facts(client: Client[Any]) -> None:
    assert {tool.name for tool in await client.list_tools()} == TOOLS


async def test_every_tool_is_read_only_and_closed_world(client: Client[Any]) -> None:
    for tool in await client.list_tools():
        hints = tool.annotations
        assert hints is not None, tool.name
        assert hints.read_only_hint is True
        assert hints.destructive_hint is False
        assert hints.idempotent_hint is True
        assert hints.open_world_hint is False


async def test_every_tool_has_a_title_a_one_line_description_and_an_output_schema(
    client: Client[Any],
) -> None:
    for tool in await client.list_tools():
        assert tool.title, tool.name
        assert tool.description, tool.name
        assert "\n" not in tool.description.strip(), tool.name
        assert tool.output_schema is not None, tool.name
        assert tool.output_schema["type"] == "object"


async def test_hostname_is_this_machines(client: Client[Any]) -> None:
    facts = await call(client, "hostname")
    assert facts["hostname"] == socket.gethostname()
    assert facts["os"]


async def test_uptime_counts_from_boot(client: Client[Any]) -> None:
    facts = await call(client, "uptime")
    assert facts["uptime_seconds"] > 0
    assert facts["boot_time"].endswith("Z") or "+00:00" in facts["boot_time"]


async def test_load_comes_with_the_cpu_count(client: Client[Any]) -> None:
    facts = await call(client, "load")
    assert facts["cpu_count"] == psutil.cpu_count()
    assert all(facts[key] >= 0 for key in ("load_1m", "load_5m", "load_15m"))


async def test_memory_adds_up(client: Client[Any]) -> None:
    facts = await call(client, "memory")
    assert 0 < facts["available_bytes"] <= facts["total_bytes"]
    assert 0 <= facts["percent"] <= 100
    assert facts["swap"]["used_bytes"] <= facts["swap"]["total_bytes"]


async def test_disk_usage_lists_real_filesystems_only(client: Client[Any]) -> None:
    filesystems = (await call(client, "disk_usage"))["filesystems"]
    assert filesystems
    mountpoints = [fs["mountpoint"] for fs in filesystems]
    assert len(mountpoints) == len(set(mountpoints))
    for fs in filesystems:
        assert fs["fstype"] not in PSEUDO_FILESYSTEMS
        assert fs["used_bytes"] <= fs["total_bytes"]


async def test_listening_ports_include_a_socket_this_test_opens(client: Client[Any]) -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        udp.bind(("127.0.0.1", 0))
        ports = (await call(client, "listening_ports"))["ports"]
        mine = {(p["protocol"], p["port"]): p for p in ports if p["pid"] == os.getpid()}
        for protocol, sock in (("tcp", tcp), ("udp", udp)):
            found = mine[(protocol, sock.getsockname()[1])]
            assert found["address"] == "127.0.0.1"
            assert found["process"] == psutil.Process().name()


async def test_a_connected_socket_is_not_listed(client: Client[Any]) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname()) as connected:
            ports = (await call(client, "listening_ports"))["ports"]
            local_port = connected.getsockname()[1]
            assert all(p["port"] != local_port for p in ports)
