"""Nothing a caller sent, no schema's content and no storage exception's text reaches an error
message or a log line (SPEC §9, §10; issue 3, acceptance 6)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from navigator.access.grants import Caller
from registry import AccessStore, Registry, migrate
from tests.harness import MeshHarness, mcp_client
from tests.navigator.inprocess import navigator_at, walker_client
from tests.postgres_server import PostgresServer

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]

CANARIES = [f"c4n4ry{n}x" for n in range(10)]


def _assert_clean(text: str) -> None:
    for canary in CANARIES:
        assert canary not in text, f"{canary} leaked"


async def test_no_canary_reaches_an_answer_or_a_log(mesh: MeshHarness) -> None:
    c = CANARIES
    admin = mesh.principal("canary-admin", ["mesh:admin"])
    bad_schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "pattern": f"^{c[7]}(a+)+$"}},
        c[8]: True,
    }
    response = httpx.post(
        f"{mesh.navigator_url}/api/v1/assignments",
        headers={"Authorization": f"Bearer {admin}"},
        json={
            "machine": "canary1",
            "role": "tools",
            "tools": [{"name": "weird", "inputSchema": bad_schema}],
        },
    )
    assert response.status_code == 200, response.text
    mesh.grant("agent", "canary1/*/*")
    calls = [
        ("call", {"address": "db1/sqlite/query", "args": {"database": c[0], "sql": c[1]}}),
        (
            "call",
            {
                "address": "db1/sqlite/query",
                "args": {"database": "inventory", "sql": f"SELECT {c[1]} FROM nowhere"},
            },
        ),
        (
            "call",
            {"address": "db1/sqlite/list_tables", "args": {"database": "inventory", c[2]: c[2]}},
        ),
        ("call", {"address": "db1/sqlite/list_tables", "args": {"database": {"nested": c[3]}}}),
        ("call", {"address": f"db1/sqlite/{c[4]}"}),
        ("call", {"address": "canary1/tools/weird", "args": {"q": c[7]}}),
        ("search", {"query": f"{c[5]}\u0007"}),
        ("search", {"query": "tables", "within": f"{c[6].upper()}/*"}),
        ("search", {"query": "tables", "cursor": c[9]}),
        ("describe", {"address": f"{c[4]}/x/y/z"}),
        ("seats", {"address": c[9].upper()}),
        (c[2], {"args": c[3]}),
    ]
    answers = []
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        for tool, arguments in calls:
            result = await client.call_tool_mcp(tool, arguments)
            assert result.is_error, (tool, arguments)
            answers.append(result)
    for answer in answers:
        _assert_clean(answer.model_dump_json(by_alias=True))
    codes = [(a.structured_content or {}).get("error") for a in answers]
    assert "tool_validation_unavailable" in codes and "invalid_arguments" in codes
    await anyio.sleep(0.5)
    for log in Path(mesh.root).glob("*.log"):
        _assert_clean(log.read_text(errors="replace"))


async def test_a_failing_storage_layer_leaks_nothing(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    name = f"{CANARIES[0]}db"
    url = postgres_server.create_database(name)
    migrate(url)
    registry = Registry(url)
    with registry.transaction() as session:
        AccessStore(session).grant("alice", "*/*/*", effect="allow")
    registry.dispose()
    async with navigator_at(url, migrate_first=False) as services:
        postgres_server.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        async with walker_client(services, Caller("alice", frozenset())) as client:
            for tool, arguments in [
                ("seats", {}),
                ("search", {"query": "x"}),
                ("call", {"address": "db1/a/b"}),
            ]:
                result = await client.call_tool_mcp(tool, arguments)
                text = result.model_dump_json()
                _assert_clean(text)
                if tool != "call":
                    assert result.structured_content["error"] == "registry_unavailable", text
