"""An agent walks the real mesh and calls tools by their full address (issue 2, acceptance 3)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.harness import MeshHarness, mcp_client, tool_result, undeclared

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]


async def test_top_level_shows_machines_seat_and_node_seats(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        listing = tool_result(await client.call_tool_mcp("seats", {}))
    addresses = {entry["address"]: entry for entry in listing["entries"]}
    assert {"db1", "db2", "web1", "mesh/notes", "*/node"} <= set(addresses)
    assert addresses["db1"]["status"] == "answering"
    assert addresses["*/node"]["holderCount"] >= 3  # other tests add nodes to this mesh


async def test_machine_shows_its_node_seat_and_assignment(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        listing = tool_result(await client.call_tool_mcp("seats", {"address": "db1"}))
    kinds = {entry["address"]: entry["kind"] for entry in listing["entries"]}
    assert kinds == {"db1/node": "node seat", "db1/sqlite": "assignment"}


async def test_assignment_lists_tools_without_schemas(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        listing = tool_result(await client.call_tool_mcp("seats", {"address": "db1/sqlite"}))
    tools = {entry["address"] for entry in listing["entries"]}
    assert "db1/sqlite/list_tables" in tools
    assert all(
        set(entry) == {"address", "kind", "title", "summary", "status"}
        for entry in listing["entries"]
    )


async def test_describe_gives_the_full_input_schema(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        contract = tool_result(
            await client.call_tool_mcp("describe", {"address": "db1/sqlite/list_tables"})
        )
    assert contract["inputSchema"]["properties"]["database"]["type"] == "string"
    assert contract["inputSchema"]["required"] == ["database"]
    assert contract["confirmation"] == "none"
    assert len(contract["contractDigest"]) == 64


async def test_same_tool_on_two_machines_returns_each_machines_data(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        one = await client.call_tool_mcp("call", {"address": "db1/sqlite/list_databases"})
        two = await client.call_tool_mcp("call", {"address": "db2/sqlite/list_databases"})
        rows = await client.call_tool_mcp(
            "call",
            {
                "address": "db1/sqlite/query",
                "args": {
                    "database": "inventory",
                    "sql": "SELECT name FROM products WHERE id <= 2 ORDER BY id",
                },
            },
        )
    assert not one.is_error and not two.is_error
    assert [d["name"] for d in one.structured_content["databases"]] == ["inventory"]
    assert [d["name"] for d in two.structured_content["databases"]] == ["customers"]
    assert rows.structured_content["rows"] == [["anvil"], ["rope"]]


async def test_mesh_seat_is_called_by_its_mesh_address(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        result = await client.call_tool_mcp("call", {"address": "mesh/notes/list_databases"})
        direct = await client.call_tool_mcp("call", {"address": "web1/notes/list_databases"})
    assert [d["name"] for d in result.structured_content["databases"]] == ["notes"]
    assert tool_result(direct)["error"] == "unknown_tool"


async def test_search_finds_tools_across_machines(mesh: MeshHarness) -> None:
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        found = tool_result(
            await client.call_tool_mcp("search", {"query": "list tables", "limit": 16})
        )
    addresses = [r["address"] for r in found["results"]]
    assert any(a.endswith("/list_tables") for a in addresses)
    assert "_meta" not in found


async def test_every_walker_answer_is_what_its_output_schema_declares(mesh: MeshHarness) -> None:
    """Issue 29: each answer of a walk over the whole mesh — seats at every level, search
    (with and without schemas), describe of every tool listed, and calls — validates against
    its tool's own declared ``outputSchema`` and declares every field it holds, so that a typed
    client keeps them."""
    answers: list[tuple[str, dict[str, Any]]] = []
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        declared = {tool.name: tool.output_schema for tool in await client.list_tools()}

        async def ask(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool_mcp(tool, arguments)
            assert not result.is_error, result
            answer = tool_result(result)
            answers.append((tool, answer))
            return answer

        pending: list[str | None] = [None]
        tools: list[str] = []
        while pending:  # the whole walk, level by level
            address = pending.pop()
            listing = await ask("seats", {} if address is None else {"address": address})
            for entry in listing["entries"]:
                if entry["kind"] == "tool":
                    tools.append(entry["address"])
                else:
                    pending.append(entry["address"])
        assert len(tools) >= 10
        for query in ("list tables", "uptime", "notes"):
            await ask("search", {"query": query, "limit": 16})
            await ask("search", {"query": query, "schemas": True, "limit": 4})
        for address in tools:
            if not address.startswith("*/"):
                await ask("describe", {"address": address})
        await ask("call", {"address": "db1/sqlite/list_databases"})
        await ask("call", {"address": "db1/node/uptime"})
    assert {tool for tool, _ in answers} == {"seats", "search", "describe", "call"}
    for tool, answer in answers:
        jsonschema.validate(answer, declared[tool])
        assert undeclared(declared[tool], answer) == [], (tool, answer)


async def test_a_typed_client_keeps_every_field_describe_answers(mesh: MeshHarness) -> None:
    """FastMCP's client builds ``.data`` from the declared ``outputSchema``: a field the schema
    did not declare (``inputSchema`` was one) was dropped from it."""
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        result = await client.call_tool("describe", {"address": "db1/sqlite/query"})
    data = result.data
    assert data.inputSchema["required"] == ["database", "sql"]
    assert data.inputSchema["properties"]["max_rows"]["maximum"] == 1000
    assert len(data.contractDigest) == 64
    assert data.annotations["readOnlyHint"] is True
    assert data.outputSchema["type"] == "object"
    assert (data.status, data.confirmation) == ("answering", "none")
