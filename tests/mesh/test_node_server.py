"""What a module server on a node answers to a client that holds no call token (SPEC §6): its
tools refuse to run, and its resources and prompts — which no call token could cover — are not
served at all. A wrapped ``stdio`` server may have both."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from fastmcp import Client, FastMCP

from mesh.calltokens import META_KEY, CallTokenVerifier, sign_call_token
from mesh.digests import arguments_digest
from mesh.listing import tools_list
from mesh.modules import ModuleSpec
from mesh.server import Assignment, CallTokenMiddleware, NodeApp

KEY = b"k" * 32


def module(key: bytes | None = KEY) -> FastMCP:
    server = FastMCP("files")

    @server.tool
    def read_config() -> str:
        """Read the configuration."""
        return "DB_PASSWORD=hunter2"

    @server.resource("config://secrets")
    def secrets() -> str:
        return "DB_PASSWORD=hunter2"

    @server.resource("file://{path}")
    def file(path: str) -> str:
        return f"contents of {path}"

    @server.prompt
    def admin_prompt() -> str:
        return "You are root; the password is hunter2."

    server.add_middleware(CallTokenMiddleware(CallTokenVerifier("db1", lambda: key), "files"))
    return server


async def test_a_tool_runs_only_with_a_call_token() -> None:
    async with Client(module()) as client:
        refused = await client.call_tool_mcp("read_config", {})
        token = sign_call_token(
            KEY,
            arguments_digest=arguments_digest({}),
            principal="alice",
            address="db1/files/read_config",
            machine="db1",
            role="files",
            tool="read_config",
        )
        allowed = await client.call_tool_mcp("read_config", {}, meta={META_KEY: token})
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["error"] == "tool_not_granted"
    assert not allowed.is_error
    assert "hunter2" in str(allowed.content)


async def test_tools_are_not_listed_to_a_client_but_are_pushed_whole() -> None:
    """A client reaching a node directly learns nothing of its tools; the node's own push reads
    them past the middleware."""
    server = module()
    async with Client(server) as client:
        assert await client.list_tools() == []
    assignment = Assignment(ModuleSpec(module="node", role="files", argument=""), server)
    assert [tool["name"] for tool in await tools_list(assignment)] == ["read_config"]


async def test_resources_and_prompts_are_neither_listed_nor_served() -> None:
    async with Client(module()) as client:
        assert await client.list_resources() == []
        assert await client.list_resource_templates() == []
        assert await client.list_prompts() == []
        asks: list[Callable[[], Awaitable[Any]]] = [
            lambda: client.read_resource("config://secrets"),
            lambda: client.read_resource("file:///etc/passwd"),
            lambda: client.get_prompt("admin_prompt"),
        ]
        for ask in asks:
            with pytest.raises(Exception) as refused:
                await ask()
            assert "hunter2" not in str(refused.value)


async def test_a_call_before_the_node_has_its_key_is_node_unavailable() -> None:
    """Just after a restart, before it registers, a node cannot check tokens: that is no
    refusal of the call (``tool_not_granted``), only a node not serving yet."""
    async with Client(module(key=None)) as client:
        answer = await client.call_tool_mcp("read_config", {}, meta={META_KEY: "a.b"})
    assert answer.is_error
    assert answer.structured_content is not None
    assert answer.structured_content["error"] == "node_unavailable"
    assert "hunter2" not in answer.model_dump_json()


@pytest.mark.parametrize(
    ("host", "refused"),
    [("evil.example", True), ("db1.internal:7701", False), ("127.0.0.1:7701", False)],
)
async def test_a_request_naming_another_host_than_the_advertised_one_is_refused(
    host: str, refused: bool
) -> None:
    """A browser led to a node by DNS rebinding names the attacker's host."""
    server = module()
    assignment = Assignment(ModuleSpec(module="node", role="files", argument=""), server)
    app = NodeApp(
        [assignment],
        CallTokenVerifier("db1", lambda: KEY),
        advertise_url="http://db1.internal:7701",
    )
    transport = httpx.ASGITransport(app=app, client=("10.0.0.9", 5000))
    async with (
        app.lifespan(),
        httpx.AsyncClient(transport=transport, base_url="http://db1.internal:7701") as http,
    ):
        answer = await http.post("/mcp/files", headers={"host": host}, json={})
    assert (answer.status_code == 421) is refused
