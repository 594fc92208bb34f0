"""Several navigators on one PostgreSQL registry behave as one, and a navigator rides out a
registry outage (issue 6, acceptance 1 and 2)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.harness import MeshHarness, mcp_client, tool_result
from tests.postgres_server import PostgresServer, start_postgres

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.xdist_group("postgres")]

TOOLS = [
    {
        "name": "rotate_logs",
        "description": "Rotate the web server's access logs.",
        "inputSchema": {"type": "object"},
    }
]


@pytest.fixture
def own_postgres(tmp_path: Path) -> Iterator[PostgresServer]:
    """A server of this test's own: the outage test stops it."""
    server = start_postgres(tmp_path / "pg")
    try:
        yield server
    finally:
        server.stop()


def _second_navigator(mesh: MeshHarness) -> MeshHarness:
    other = MeshHarness(mesh.root / "b", database_url=mesh.database_url)
    other.start_navigator()
    return other


async def test_a_change_through_one_navigator_reaches_the_other(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    url = postgres_server.create_database("multi_nav")
    mesh = MeshHarness(tmp_path / "a", database_url=url)
    mesh.start_navigator()
    other = _second_navigator(mesh)
    admin = mesh.principal("ops", ["mesh:admin"])
    agent = mesh.principal("agent")
    allow = mesh.grant("agent", "*/*/*")
    try:
        async with mcp_client(other.navigator_url, agent) as client:
            started = time.monotonic()
            response = httpx.post(
                f"{mesh.navigator_url}/api/v1/assignments",
                headers={"Authorization": f"Bearer {admin}"},
                json={"machine": "web9", "role": "logs", "tools": TOOLS},
            )
            assert response.status_code == 200, response.text
            found: list[str] = []
            while time.monotonic() - started < 10 and not found:
                answer = tool_result(await client.call_tool_mcp("search", {"query": "rotate logs"}))
                found = [r["address"] for r in answer["results"]]
            registration_delay = time.monotonic() - started
            assert found == ["web9/logs/rotate_logs"]

            httpx.post(
                f"{mesh.navigator_url}/api/v1/grants",
                headers={"Authorization": f"Bearer {admin}"},
                json={"principal": "agent", "target": "web9/logs/rotate_logs", "effect": "deny"},
            ).raise_for_status()
            denied = tool_result(
                await client.call_tool_mcp("call", {"address": "web9/logs/rotate_logs"})
            )
            assert denied["error"] == "tool_not_granted", (
                "a deny through one stops calls through the other at once"
            )
        print(
            f"\nregistration through A searchable through B after {registration_delay * 1000:.0f} ms"
        )
        assert registration_delay < 5
        del allow
    finally:
        other.close()
        mesh.close()


async def test_a_registry_outage_answers_registry_unavailable_then_recovers(
    own_postgres: PostgresServer, tmp_path: Path
) -> None:
    url = own_postgres.create_database("outage")
    mesh = MeshHarness(tmp_path / "a", database_url=url)
    mesh.start_navigator()
    admin = mesh.principal("ops", ["mesh:admin"])
    agent = mesh.principal("agent")
    mesh.grant("agent", "*/*/*")
    mesh.registry.dispose()
    try:
        async with mcp_client(mesh.navigator_url, agent) as client:
            assert not (await client.call_tool_mcp("seats", {})).is_error
            await anyio.to_thread.run_sync(own_postgres.pause)
            for tool, arguments in [
                ("seats", {}),
                ("search", {"query": "x"}),
                ("call", {"address": "a1/b/c"}),
            ]:
                with pytest.raises(MCPError):  # an HTTP 503 the client keeps its session after
                    await client.call_tool_mcp(tool, arguments)
            down = httpx.post(
                f"{mesh.navigator_url}/mcp", headers={"Authorization": f"Bearer {agent}"}
            )
            assert (down.status_code, down.json()["error"]) == (503, "registry_unavailable")
            ready = httpx.get(f"{mesh.navigator_url}/readyz")
            assert ready.status_code == 503
            await anyio.to_thread.run_sync(own_postgres.resume)
            httpx.post(
                f"{mesh.navigator_url}/api/v1/assignments",
                headers={"Authorization": f"Bearer {admin}"},
                json={"machine": "web9", "role": "logs", "tools": TOOLS},
            ).raise_for_status()
            back = tool_result(await client.call_tool_mcp("search", {"query": "rotate logs"}))
        assert [r["address"] for r in back["results"]] == ["web9/logs/rotate_logs"]
        assert mesh.navigator is not None and mesh.navigator.poll() is None, (
            "the navigator never crashed"
        )
        assert httpx.get(f"{mesh.navigator_url}/readyz").status_code == 200
    finally:
        mesh.close()
