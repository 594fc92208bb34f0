"""Operators change the mesh while an agent uses it; nodes stop and return (issue 5, acceptance 1–4)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from openapi_spec_validator import validate

from tests.harness import MeshHarness, mcp_client, start_backend, stop, tool_result
from tests.postgres_server import PostgresServer

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]

ROOT = Path(__file__).resolve().parents[2]
ECHO_SERVER = ROOT / "tests" / "mesh" / "fixtures" / "echo_server.py"


@pytest.fixture(scope="module")
def http_mcp_server() -> Iterator[str]:
    """Any MCP server already running on HTTP (here: a FastMCP one with an `echo` tool)."""
    process, port = start_backend()
    yield f"http://127.0.0.1:{port}/mcp"
    stop(process)


def _admin(mesh: MeshHarness) -> dict[str, str]:
    token = getattr(mesh, "admin_token", None) or mesh.principal("operator", ["mesh:admin"])
    mesh.admin_token = token  # type: ignore[attr-defined]
    return {"Authorization": f"Bearer {token}"}


async def test_operator_registers_http_and_stdio_servers_then_retires_one(
    mesh: MeshHarness, http_mcp_server: str
) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        before = tool_result(
            await client.call_tool_mcp("search", {"query": "echo text", "limit": 16})
        )
        mine = {"ext1/echo/echo", "tools1/echoer/echo"}  # the session's mesh holds others' tools
        assert not mine & {r["address"] for r in before["results"]}
        registered = httpx.post(
            f"{mesh.navigator_url}/api/v1/assignments",
            headers=_admin(mesh),
            json={"machine": "ext1", "role": "echo", "endpoint": http_mcp_server},
        )
        assert registered.status_code == 200, registered.text
        assert registered.json()["registered"] == ["ext1/echo/echo"]
        await anyio.to_thread.run_sync(
            lambda: mesh.start_node(
                "tools1", ["node", f"stdio:echoer={sys.executable} {ECHO_SERVER}"]
            )
        )
        found = tool_result(
            await client.call_tool_mcp("search", {"query": "echo text", "limit": 16})
        )
        addresses = {r["address"] for r in found["results"]}
        assert mine <= addresses
        by_url = await client.call_tool_mcp(
            "call", {"address": "ext1/echo/echo", "args": {"text": "one"}}
        )
        by_stdio = await client.call_tool_mcp(
            "call", {"address": "tools1/echoer/echo", "args": {"text": "two"}}
        )
        assert by_url.structured_content == {"text": "one"}
        assert by_stdio.structured_content == {"text": "two"}
        # a tool that answers text only: call still answers structured content, as its
        # outputSchema promises, so a client that checks it (the SDK's, here) takes the answer
        shouted = await client.call_tool(
            "call", {"address": "tools1/echoer/shout", "args": {"text": "hi"}}
        )
        assert shouted.structured_content == {"content": [{"type": "text", "text": "HI"}]}
        assert [block.text for block in shouted.content] == ["HI"]  # type: ignore[union-attr]

        retired = httpx.post(
            f"{mesh.navigator_url}/api/v1/retire",
            headers=_admin(mesh),
            json={"address": "ext1/echo"},
        )
        assert retired.status_code == 200, retired.text
        after = tool_result(
            await client.call_tool_mcp("search", {"query": "echo text", "limit": 16})
        )
        gone = tool_result(
            await client.call_tool_mcp("call", {"address": "ext1/echo/echo", "args": {"text": "x"}})
        )
    assert "ext1/echo/echo" not in {r["address"] for r in after["results"]}
    assert "tools1/echoer/echo" in {r["address"] for r in after["results"]}
    assert gone["error"] == "unknown_tool"


async def test_killed_node_stops_answering_then_returns_without_duplicates(
    mesh: MeshHarness,
) -> None:
    await anyio.to_thread.run_sync(lambda: mesh.start_node("flaky1", ["node"]))
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        mesh.kill_node("flaky1")
        killed = time.monotonic()
        status = "answering"
        while status == "answering" and time.monotonic() - killed < 10:
            listing = tool_result(await client.call_tool_mcp("seats", {"address": "flaky1"}))
            status = listing["status"]
            await anyio.sleep(0.1)
        noticed = time.monotonic() - killed
        assert status == "not answering"
        assert noticed <= 3 * mesh.heartbeat_s + 1.5, noticed
        found = tool_result(
            await client.call_tool_mcp("search", {"query": "uptime", "within": "flaky1"})
        )
        # every result is on flaky1 ("uptime" also reaches memory's "available", further down)
        assert found["results"][0]["address"] == "flaky1/node/uptime"
        assert {r["status"] for r in found["results"]} == {"not answering"}
        started = time.monotonic()
        failed = tool_result(await client.call_tool_mcp("call", {"address": "flaky1/node/uptime"}))
        assert failed["error"] == "node_unavailable" and time.monotonic() - started < 5

        await anyio.to_thread.run_sync(lambda: mesh.restart_node("flaky1"))
        listing = tool_result(await client.call_tool_mcp("seats", {"address": "flaky1"}))
        again = tool_result(
            await client.call_tool_mcp("search", {"query": "uptime", "within": "flaky1"})
        )
    assert listing["status"] == "answering"
    assert [e["address"] for e in listing["entries"]] == ["flaky1/node"]
    # the same tools as before it was killed, each once
    assert [r["address"] for r in again["results"]] == [r["address"] for r in found["results"]]
    assert {r["status"] for r in again["results"]} == {"answering"}


def test_admin_api_needs_mesh_admin(mesh: MeshHarness) -> None:
    response = httpx.get(
        f"{mesh.navigator_url}/api/v1/mesh", headers={"Authorization": f"Bearer {mesh.agent_token}"}
    )  # type: ignore[attr-defined]
    assert response.status_code == 403
    assert response.json()["error"] == "tool_not_granted"
    assert httpx.get(f"{mesh.navigator_url}/api/v1/mesh").status_code == 401
    # its description too: part of the admin API (SPEC §7); any principal read it before
    described = httpx.get(
        f"{mesh.navigator_url}/api/v1/openapi.json",
        headers={"Authorization": f"Bearer {mesh.agent_token}"},  # type: ignore[attr-defined]
    )
    assert described.status_code == 403
    assert described.json()["error"] == "tool_not_granted"


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        (b"{not json", None),
        (b"[1, 2]", None),
        (b'{"machine": "m1", "role": "r1", "tools": [], "surprise": 1}', ""),
        (b'{"machine": "m1", "role": 7, "tools": []}', "/role"),
    ],
)
def test_admin_api_answers_bad_bodies_with_spec_errors(
    mesh: MeshHarness, body: bytes, pointer: str | None
) -> None:
    response = httpx.post(
        f"{mesh.navigator_url}/api/v1/assignments",
        headers={**_admin(mesh), "Content-Type": "application/json"},
        content=body,
    )
    assert response.status_code == 400
    answer = response.json()
    assert answer["error"] == "invalid_arguments"
    assert "surprise" not in answer["message"]
    if pointer is not None:
        assert answer["pointer"] == pointer


def test_openapi_document_validates(mesh: MeshHarness) -> None:
    document = httpx.get(f"{mesh.navigator_url}/api/v1/openapi.json", headers=_admin(mesh)).json()
    validate(document)
    assert "/assignments" in document["paths"] and "/grants/check" in document["paths"]
    audit = document["paths"]["/audit"]["get"]["parameters"]
    assert {p["name"] for p in audit} == {
        "principal",
        "address",
        "action",
        "outcome",
        "since",
        "limit",
        "before",
    }
    check = document["paths"]["/grants/check"]["get"]["parameters"]
    assert {(p["name"], p["in"], p["required"]) for p in check} == {
        ("principal", "query", True),
        ("address", "query", True),
    }


def test_health_ready_and_metrics(mesh: MeshHarness) -> None:
    assert httpx.get(f"{mesh.navigator_url}/healthz").json() == {"status": "alive"}
    ready = httpx.get(f"{mesh.navigator_url}/readyz").json()
    assert ready == {"status": "ready", "registry": "writable"}
    metrics = httpx.get(f"{mesh.navigator_url}/metrics").text
    assert "meshnav_tool_requests_total" in metrics
    assert 'meshnav_machines{status="answering"}' in metrics


async def test_postgres_module_on_two_servers_returns_each_servers_databases(
    mesh: MeshHarness, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    from tests.postgres_server import start_postgres

    second = await anyio.to_thread.run_sync(start_postgres, tmp_path / "second")
    try:
        postgres_server.execute("CREATE DATABASE orders_east")
        second.execute("CREATE DATABASE billing_west")
        for server in (postgres_server, second):  # a module refuses a superuser (issue 26)
            server.execute("CREATE ROLE e2e_reader LOGIN")
        one_dsn, two_dsn = (s.dsn(user="e2e_reader") for s in (postgres_server, second))
        await anyio.to_thread.run_sync(lambda: mesh.start_node("pg1", [f"postgres:{one_dsn}"]))
        await anyio.to_thread.run_sync(lambda: mesh.start_node("pg2", [f"postgres:{two_dsn}"]))
        async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
            one = await client.call_tool_mcp("call", {"address": "pg1/postgres/list_databases"})
            two = await client.call_tool_mcp("call", {"address": "pg2/postgres/list_databases"})
        names_one = {d["name"] for d in one.structured_content["databases"]}
        names_two = {d["name"] for d in two.structured_content["databases"]}
        assert "orders_east" in names_one and "orders_east" not in names_two
        assert "billing_west" in names_two and "billing_west" not in names_one
    finally:
        await anyio.to_thread.run_sync(second.stop)


async def _confirmed(
    client: object, address: str, args: dict[str, object], **kwargs: object
) -> object:
    first = await client.call_tool_mcp("call", {"address": address, "args": args})  # type: ignore[attr-defined]
    token = tool_result(first)["confirm"]
    return await client.call_tool_mcp(
        "call", {"address": address, "args": args, "confirm": token}, **kwargs
    )  # type: ignore[attr-defined]


async def test_progress_passes_through_and_a_changed_tool_list_is_reindexed(
    mesh: MeshHarness,
) -> None:
    await anyio.to_thread.run_sync(
        lambda: mesh.start_node("tools2", [f"stdio:echoer={sys.executable} {ECHO_SERVER}"])
    )
    seen: list[tuple[float, float | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        seen.append((value, total))

    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        slow = await _confirmed(
            client, "tools2/echoer/slow", {"steps": 3}, progress_handler=progress
        )
        assert not slow.is_error, slow  # type: ignore[attr-defined]
        assert seen == [(1, 3), (2, 3), (3, 3)]
        grown = await _confirmed(client, "tools2/echoer/grow", {})
        assert not grown.is_error  # type: ignore[attr-defined]
        found: list[str] = []
        deadline = time.monotonic() + 3 * mesh.heartbeat_s + 5
        approved = httpx.Response(404)
        while approved.status_code != 200 and time.monotonic() < deadline:
            # an added tool is held until an operator approves it (SPEC §14)
            approved = httpx.post(
                f"{mesh.navigator_url}/api/v1/contracts/approve",
                json={"target": "tools2/echoer/grown"},
                headers=_admin(mesh),
            )
            await anyio.sleep(0.2)
        assert approved.json() == {"approved": ["tools2/echoer/grown"]}
        while "tools2/echoer/grown" not in found and time.monotonic() < deadline:
            answer = tool_result(
                await client.call_tool_mcp("search", {"query": "grown", "within": "tools2"})
            )
            found = [r["address"] for r in answer["results"]]
            await anyio.sleep(0.2)
    assert found[0] == "tools2/echoer/grown"
