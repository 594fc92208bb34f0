"""Issue 26 (8): the MCP SDK's "Method not found" named the unknown method back in its ``data``;
meshnav's MCP servers — the navigator's, and each module's on a node — repeat nothing of the
request, on both protocol eras."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from mesh.calltokens import CallTokenVerifier
from mesh.modules import ModuleSpec
from mesh.server import Assignment, NodeApp
from tests.mesh.test_node_server import KEY, module
from tests.navigator.console.test_console import console_app
from tests.navigator.mcp.test_walker_arguments import CLIENT_META, SESSIONLESS

CANARY = "c4n4ry"
ACCEPT = "application/json, text/event-stream"
LEGACY = "2025-11-25"
#: Methods neither era serves: made up, and a spec-like name that is no method.
UNKNOWN = [f"{CANARY}/probe", f"tools/{CANARY}"]

#: Where an MCP server answers, and the headers its requests carry.
Endpoint = tuple[httpx.AsyncClient, str, dict[str, str]]


@asynccontextmanager
async def _navigator(tmp_path: Path) -> AsyncIterator[Endpoint]:
    """The navigator's ASGI app in process, and the headers of a principal it knows."""
    async with console_app(tmp_path) as console, console.client("http://127.0.0.1") as http:
        yield (
            http,
            "/mcp",
            {"Authorization": f"Bearer {console.tokens['nobody']}", "Accept": ACCEPT},
        )


@asynccontextmanager
async def _node(tmp_path: Path) -> AsyncIterator[Endpoint]:
    """A node's app in process with one module, reached as a client without a call token."""
    assignment = Assignment(ModuleSpec(module="node", role="files", argument=""), module())
    app = NodeApp([assignment], CallTokenVerifier("db1", lambda: KEY))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.lifespan(),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http,
    ):
        yield http, "/mcp/files", {"Accept": ACCEPT}


SERVERS: dict[str, Callable[[Path], AbstractAsyncContextManager[Endpoint]]] = {
    "navigator": _navigator,
    "node": _node,
}


def _message(answer: httpx.Response) -> dict[str, Any]:
    """The one JSON-RPC message of an answer, whole or as an event stream's one event."""
    text = answer.text
    if answer.headers["content-type"].startswith("text/event-stream"):
        [text] = [line[5:] for line in text.splitlines() if line.startswith("data:")]
    found: dict[str, Any] = json.loads(text)
    return found


def _assert_plain(message: dict[str, Any], method: str) -> None:
    assert method not in json.dumps(message)
    assert message["error"]["code"] == -32601
    assert message["error"]["data"]["error"] == "not_found"


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("method", [*UNKNOWN, "ping"])  # ping: the sessionless era dropped it
async def test_sessionless_era_names_no_method_back(
    tmp_path: Path, server: str, method: str
) -> None:
    async with SERVERS[server](tmp_path) as (http, path, headers):
        answer = await http.post(
            path,
            headers={**headers, "MCP-Protocol-Version": SESSIONLESS, "Mcp-Method": method},
            json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": CLIENT_META}},
        )
    assert answer.status_code == 404
    _assert_plain(_message(answer), method)


@pytest.mark.parametrize("server", SERVERS)
async def test_legacy_era_names_no_method_back(tmp_path: Path, server: str) -> None:
    async with SERVERS[server](tmp_path) as (http, path, headers):
        opened = await http.post(
            path,
            headers=headers,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            },
        )
        session = {
            **headers,
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "MCP-Protocol-Version": LEGACY,
        }
        await http.post(
            path, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        for method in UNKNOWN:
            answer = await http.post(
                path,
                headers=session,
                json={"jsonrpc": "2.0", "id": 2, "method": method, "params": {}},
            )
            _assert_plain(_message(answer), method)
