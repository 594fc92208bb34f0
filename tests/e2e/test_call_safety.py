"""Every call is safe: grants read now, confirmation for tools that change things, and nodes that
obey only the navigator's call tokens (issue 3, acceptance 3–5)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx
import mcp_types as mt
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from mesh.calltokens import META_KEY, sign_call_token
from mesh.digests import arguments_digest
from registry import CatalogStore
from tests.harness import MeshHarness, mcp_client, tool_result

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]


def _insert(name: str) -> dict[str, Any]:
    return {
        "database": "inventory",
        "sql": "INSERT INTO products (name) VALUES (?)",
        "params": [name],
    }


async def _count(client: Client[Any], name: str) -> int:
    result = await client.call_tool_mcp(
        "call",
        {
            "address": "db1/sqlite/query",
            "args": {
                "database": "inventory",
                "sql": "SELECT count(*) FROM products WHERE name = ?",
                "params": [name],
            },
        },
    )
    assert not result.is_error, result
    return int(result.structured_content["rows"][0][0])


async def test_destructive_tool_needs_the_one_time_confirm_token(mesh: MeshHarness) -> None:
    name = f"widget-{uuid.uuid4().hex[:8]}"
    call = {"address": "db1/sqlite/execute", "args": _insert(name)}
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        first = tool_result(await client.call_tool_mcp("call", call))
        assert first["error"] == "confirmation_required" and first["status"] == 428
        assert await _count(client, name) == 0
        other = tool_result(
            await client.call_tool_mcp(
                "call", {**call, "args": _insert("x"), "confirm": first["confirm"]}
            )
        )
        assert other["error"] == "confirmation_required", "a token is bound to the arguments"
        assert "spent, expired, or for another call" in other["message"]
        assert "spent" not in first["message"]  # no token given: nothing was refused
        done = await client.call_tool_mcp("call", {**call, "confirm": first["confirm"]})
        assert not done.is_error, done
        again = tool_result(
            await client.call_tool_mcp("call", {**call, "confirm": first["confirm"]})
        )
        assert again["error"] == "confirmation_required", "a token is good once"
        assert "spent, expired, or for another call" in again["message"]
        assert await _count(client, name) == 1


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("answer", ["accept", "decline"])
async def test_elicitation_asks_the_person_in_both_protocol_eras(
    mesh: MeshHarness, mode: str, answer: str
) -> None:
    asked: list[str] = []

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append(message)
        if answer == "accept":
            return {"allow": True} if mode == "auto" else response_type(allow=True)
        return mt.ElicitResult(action="decline")

    name = f"elicited-{uuid.uuid4().hex[:8]}"
    transport = StreamableHttpTransport(
        mesh.navigator_url + "/mcp",
        headers={"Authorization": f"Bearer {mesh.agent_token}"},  # type: ignore[attr-defined]
    )
    async with Client(transport, elicitation_handler=handler, mode=mode, timeout=60) as client:  # type: ignore[arg-type]
        result = await client.call_tool_mcp(
            "call", {"address": "db1/sqlite/execute", "args": _insert(name)}
        )
        count = await _count(client, name)
    assert asked and "db1/sqlite/execute" in asked[0]
    if answer == "accept":
        assert not result.is_error, result
        assert count == 1
    else:
        assert tool_result(result)["error"] == "confirmation_required"
        assert "confirm" not in tool_result(result)
        assert count == 0


@pytest.mark.parametrize("failure", ["the client fails", "the answer has another shape"])
async def test_a_legacy_elicitation_gone_wrong_is_a_no(mesh: MeshHarness, failure: str) -> None:
    """The call does not run, the answer is SPEC's ``confirmation_required`` (it was
    ``internal_error``), and the navigator's log holds nothing the client sent."""
    secret = f"client-secret-{uuid.uuid4().hex}"

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        if failure == "the client fails":
            raise RuntimeError(secret)
        return mt.ElicitResult(action="accept", content={"value": secret})

    name = f"elicited-{uuid.uuid4().hex[:8]}"
    transport = StreamableHttpTransport(
        mesh.navigator_url + "/mcp",
        headers={"Authorization": f"Bearer {mesh.agent_token}"},  # type: ignore[attr-defined]
    )
    async with Client(transport, elicitation_handler=handler, mode="legacy", timeout=60) as client:  # type: ignore[arg-type]
        result = await client.call_tool_mcp(
            "call", {"address": "db1/sqlite/execute", "args": _insert(name)}
        )
        count = await _count(client, name)
    assert tool_result(result)["error"] == "confirmation_required"
    assert count == 0
    assert secret not in (mesh.root / "navigator.log").read_text(errors="replace")


async def test_grant_revoked_between_search_and_call_stops_the_call(mesh: MeshHarness) -> None:
    name = f"fickle-{uuid.uuid4().hex[:6]}"
    token = mesh.principal(name)
    grant = mesh.grant(name, "db1/node/*")
    async with mcp_client(mesh.navigator_url, token) as client:
        found = tool_result(await client.call_tool_mcp("search", {"query": "uptime"}))
        assert found["results"][0]["address"] == "db1/node/uptime"
        mesh.revoke_grant(grant)
        result = tool_result(await client.call_tool_mcp("call", {"address": "db1/node/uptime"}))
    assert result["error"] == "tool_not_granted"


def _key(mesh: MeshHarness, machine: str) -> bytes:
    with mesh.registry.transaction() as session:
        key = CatalogStore(session).node_key(machine)
    assert key is not None
    return key


def _token(mesh: MeshHarness, arguments: dict[str, Any], **overrides: Any) -> str:
    claims: dict[str, Any] = {
        "principal": "agent",
        "address": "db1/sqlite/execute",
        "machine": "db1",
        "role": "sqlite",
        "tool": "execute",
        "arguments_digest": arguments_digest(arguments),
    }
    key = overrides.pop("key", _key(mesh, "db1"))
    claims.update(overrides)
    return sign_call_token(key, **claims)


async def test_a_node_refuses_calls_without_a_valid_token_and_runs_nothing(
    mesh: MeshHarness,
) -> None:
    node = mesh.nodes["db1"]
    name = f"direct-{uuid.uuid4().hex[:8]}"
    arguments = _insert(name)
    good = _token(mesh, arguments)
    attempts = {
        "no token": None,
        "garbage": "not.a-token",
        "expired": _token(mesh, arguments, now=time.time() - 60),
        "wrong key": _token(mesh, arguments, key=b"k" * 32),
        "other arguments": _token(mesh, _insert("something else")),
        "other tool": _token(mesh, arguments, tool="query"),
        "other machine": _token(mesh, arguments, machine="db2"),
    }
    async with Client(StreamableHttpTransport(f"{node.url}/mcp/sqlite"), timeout=30) as direct:
        for why, token in attempts.items():
            meta = None if token is None else {META_KEY: token}
            result = await direct.call_tool_mcp("execute", arguments, meta=meta)
            assert result.is_error, why
            assert result.structured_content["error"] == "tool_not_granted", why
        first = await direct.call_tool_mcp("execute", arguments, meta={META_KEY: good})
        replayed = await direct.call_tool_mcp("execute", arguments, meta={META_KEY: good})
    assert not first.is_error, "the control: a good token works exactly once"
    assert replayed.structured_content["error"] == "tool_not_granted"
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        assert await _count(client, name) == 1


def test_a_node_principal_may_not_speak_for_another_machine(mesh: MeshHarness) -> None:
    token = mesh.nodes["db1"].token  # type: ignore[attr-defined]
    response = httpx.post(
        f"{mesh.navigator_url}/api/v1/nodes/db2/heartbeat",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 403
    assert response.json()["error"] == "tool_not_granted"
