"""Where the navigator may connect (issue 26, item 7; ADR 0032).

As an administrator, ``http://0x7f000001:…``, ``http://127.1:…``, ``http://user:pw@…`` and the
navigator's own ``/api/v1`` were accepted as endpoints, link-local and cloud-metadata addresses
would have been too, and a node principal could advertise any URL for the navigator to POST to.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import FastMCP

from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.errors import NodeUnavailable
from navigator.nodes.connections import NodeConnections
from navigator.nodes.destinations import REFUSED_AT_CONNECT, Destinations, parse_networks
from navigator.settings import NavigatorSettings
from registry import AccessStore, CatalogStore
from tests.harness import serving

TOOL = {"name": "lookup", "description": "Look a thing up.", "inputSchema": {"type": "object"}}
#: The in-process navigator's own listen address.
OWN = "127.0.0.1:7788"

REFUSED = [
    pytest.param("http://0x7f000001:7801/mcp", "canonical form", id="hex"),
    pytest.param("http://127.1:7801/mcp", "canonical form", id="short"),
    pytest.param("http://2130706433:7801/mcp", "canonical form", id="decimal"),
    # refused by the client's own parser already, as a body that is not valid at the pointer
    pytest.param("http://0177.0.0.1:7801/mcp", "", id="octal"),
    pytest.param("http://127.0.0.01:7801/mcp", "", id="leading-zero"),
    pytest.param("http://[::1%25lo]:7801/mcp", "canonical form", id="zone"),
    pytest.param("http://user:pw@10.0.0.1:7801/mcp", "user name or password", id="userinfo"),
    pytest.param("http://evil.example\\@10.0.0.1/mcp", "user name or password", id="backslash"),
    pytest.param(f"http://{OWN}/api/v1", "navigator's own", id="own"),
    pytest.param(
        f"http://localhost:{OWN.rpartition(':')[2]}/mcp", "navigator's own", id="own-name"
    ),
    pytest.param("http://169.254.169.254/latest/meta-data", "never connects", id="metadata"),
    pytest.param("http://169.254.10.1:7801/mcp", "never connects", id="link-local"),
    pytest.param("http://[fd00:ec2::254]/latest", "never connects", id="metadata-v6"),
    pytest.param("http://[fe80::1]:7801/mcp", "never connects", id="link-local-v6"),
    pytest.param("http://[::ffff:169.254.169.254]/", "never connects", id="mapped"),
    pytest.param("http://0.0.0.0:7801/mcp", "--advertise", id="unspecified"),
    pytest.param("http://[::]:7801/mcp", "--advertise", id="unspecified-v6"),
]


@asynccontextmanager
async def navigator(
    tmp_path: Path, networks: str | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str], Any]]:
    """An in-process navigator listening (for its own-address check) at ``OWN``, with an
    operator (``root``) and a node principal (``node``)."""
    settings = NavigatorSettings(
        database_url=f"sqlite:///{tmp_path / 'r.db'}",
        listen=OWN,
        **({} if networks is None else {"endpoint_networks": networks}),
    )
    app = build_app(settings)
    async with app.router.lifespan_context(app):
        services = app.state.meshnav
        tokens = {"root": mint_token(), "node": mint_token()}

        def principals(session: Any) -> None:
            for name, token in tokens.items():
                scope = "mesh:admin" if name == "root" else "mesh:node"
                AccessStore(session).add_principal(
                    name, scopes=[scope], token_hash=hash_token(token)
                )

        await services.transact(principals)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            client.headers["Authorization"] = f"Bearer {tokens['root']}"
            yield client, tokens, services


def _refused(answer: httpx.Response, url: str, pointer: str, words: str) -> None:
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert (body["error"], body["pointer"]) == ("invalid_arguments", pointer)
    assert words in body["message"]
    assert url not in answer.text and "pw" not in answer.text  # never echoed


@asynccontextmanager
async def _server() -> AsyncIterator[int]:
    """A real MCP server on a loopback port, with one tool."""
    server = FastMCP("upstream")

    @server.tool
    def lookup(text: str) -> str:
        return text

    async with serving(server.http_app(path="/mcp"), lifespan="on") as port:
        yield port


@pytest.mark.parametrize(("url", "words"), REFUSED)
async def test_an_operator_endpoint_outside_the_policy_is_refused(
    tmp_path: Path, url: str, words: str
) -> None:
    async with navigator(tmp_path) as (client, _tokens, services):
        answer = await client.post(
            "/api/v1/assignments",
            json={"machine": "db1", "role": "x", "endpoint": url, "tools": [TOOL]},
        )
        machine = await client.post("/api/v1/machines", json={"name": "db2", "advertise": url})
        machines = await services.transact(lambda session: CatalogStore(session).machines())
    _refused(answer, url, "/endpoint", words)
    _refused(machine, url, "/advertise", words)
    assert machines == []


@pytest.mark.parametrize(("url", "words"), REFUSED)
async def test_a_node_advertising_a_url_outside_the_policy_is_refused(
    tmp_path: Path, url: str, words: str
) -> None:
    async with navigator(tmp_path) as (client, tokens, services):
        node = {"Authorization": f"Bearer {tokens['node']}"}
        assignment = {"role": "notes", "module": "sqlite", "tools": [TOOL]}
        registered = await client.post(
            "/api/v1/nodes/register",
            json={"machine": "db1", "advertise": url, "heartbeatS": 5, "assignments": []},
            headers=node,
        )
        pushed = await client.put(
            "/api/v1/nodes/db1/assignments/notes",
            json={"advertise": url, "assignment": assignment},
            headers=node,
        )
        machines = await services.transact(lambda session: CatalogStore(session).machines())
    _refused(registered, url, "/advertise", words)
    _refused(pushed, url, "/advertise", words)
    assert machines == []


async def test_a_server_inside_the_policy_is_registered_by_its_url(tmp_path: Path) -> None:
    """The default allows loopback and every routable address: a real server's tools pulled."""
    async with _server() as port, navigator(tmp_path) as (client, tokens, _services):
        answer = await client.post(
            "/api/v1/assignments",
            json={"machine": "db1", "role": "x", "endpoint": f"http://localhost:{port}/mcp"},
        )
        advertised = await client.post(
            "/api/v1/nodes/register",
            json={
                "machine": "db2",
                "advertise": "http://10.0.0.2:7801",
                "heartbeatS": 5,
                "assignments": [],
            },
            headers={"Authorization": f"Bearer {tokens['node']}"},
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["registered"] == ["db1/x/lookup"]
    assert advertised.status_code == 200, advertised.text


async def test_a_name_resolving_outside_the_networks_is_refused_when_connecting(
    tmp_path: Path,
) -> None:
    """``localhost`` is a DNS name, so it passes when stored; what it resolves to (loopback, not
    in ``10.0.0.0/8``) is refused when the pull connects, before one byte is sent."""
    async with _server() as port, navigator(tmp_path, "10.0.0.0/8") as (client, _tokens, _s):
        literal = await client.post(
            "/api/v1/assignments",
            json={"machine": "db1", "role": "x", "endpoint": f"http://127.0.0.1:{port}/mcp"},
        )
        named = await client.post(
            "/api/v1/assignments",
            json={"machine": "db1", "role": "x", "endpoint": f"http://localhost:{port}/mcp"},
        )
    _refused(literal, "127.0.0.1", "/endpoint", "MESHNAV_ENDPOINT_NETWORKS")
    assert named.status_code == 400, named.text
    assert named.json()["message"] == REFUSED_AT_CONNECT
    assert named.json()["pointer"] == "/endpoint"


def _resolver(names: dict[str, str]) -> Any:
    async def resolve(host: str, port: int) -> Sequence[str]:
        return [names[host]]

    return resolve


async def test_a_node_name_rebound_to_a_forbidden_address_is_not_called() -> None:
    """The address is checked as resolved when the connection is made (DNS rebinding): the same
    name, resolved to loopback, is called; resolved to the metadata address, or to the
    navigator's own port, it is not."""
    async with _server() as port:
        names = {"node.example": "127.0.0.1", "rebound.example": "169.254.169.254"}
        calls = {}
        for own in (None, ("127.0.0.1", port)):
            policy = Destinations(own=own, resolve=_resolver(names))
            connections = NodeConnections(destinations=policy)
            try:
                for name in names:
                    url = f"http://{name}:{port}/mcp"
                    try:
                        result = await connections.call(
                            url, "lookup", {"text": "hi"}, token=None, deadline_s=10
                        )
                        calls[(own is None, name)] = result.structured_content
                    except NodeUnavailable:
                        calls[(own is None, name)] = None
            finally:
                await connections.close()
    assert calls == {
        (True, "node.example"): {"result": "hi"},
        (True, "rebound.example"): None,
        (False, "node.example"): None,  # the navigator's own address: not called
        (False, "rebound.example"): None,
    }


def test_the_networks_setting_is_checked_when_read() -> None:
    assert [str(n) for n in parse_networks("10.0.0.0/8, 127.0.0.1 ::1")] == [
        "10.0.0.0/8",
        "127.0.0.1/32",
        "::1/128",
    ]
    with pytest.raises(ValueError, match="MESHNAV_ENDPOINT_NETWORKS"):
        NavigatorSettings(endpoint_networks="10.0.0.0/8,nowhere")
