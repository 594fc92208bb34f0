"""The navigator as an OAuth 2.1 resource server, against a real authorization server (issue 27).

panva's ``oidc-provider`` runs on 127.0.0.1 with the test's clients and its own RSA key, and
issues RS256 JWT access tokens for the resource a client names (RFC 8707). The navigator trusts
it by ``MESHNAV_JWT_ISSUER`` and ``MESHNAV_JWT_JWKS_URI`` alone, its audience given by
``MESHNAV_PUBLIC_URL``.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.authorization_server import AuthorizationServer, authorization_server, node_packages
from tests.conftest import seed_sqlite
from tests.harness import MeshHarness, free_port, mcp_client, tool_result

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh"), pytest.mark.timeout(300)]

SCOPE = "mesh:use"


def client_credentials(client_id: str) -> dict[str, object]:
    return {
        "client_id": client_id,
        "client_secret": f"{client_id}-secret-of-the-test",
        "grant_types": ["client_credentials"],
        "redirect_uris": [],
        "response_types": [],
    }


@dataclass
class Deployment:
    mesh: MeshHarness
    issuer: AuthorizationServer
    other_issuer: AuthorizationServer

    @property
    def resource(self) -> str:
        return self.mesh.navigator_url + "/mcp"

    def token(
        self,
        client_id: str = "agent",
        *,
        resource: str | None = None,
        scope: str = SCOPE,
        other_issuer: bool = False,
    ) -> str:
        """An access token from the client credentials grant, for the navigator unless told."""
        server = self.other_issuer if other_issuer else self.issuer
        return server.token(
            client_id,
            f"{client_id}-secret-of-the-test",
            resource=resource or self.resource,
            scope=scope,
        )


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("oauth")
    clients = [client_credentials(c) for c in ("agent", "short", "stranger", "bare")]
    with (
        authorization_server(root, clients=clients, scopes=[SCOPE], short_lived=["short"]) as us,
        authorization_server(root, clients=clients, scopes=[SCOPE], name="other") as other,
    ):
        seed_sqlite(root / "db1" / "inventory.db", ["CREATE TABLE products (id INTEGER)"])
        port = free_port()
        mesh = MeshHarness(
            root / "run",
            env={
                "MESHNAV_PUBLIC_URL": f"http://127.0.0.1:{port}",
                "MESHNAV_JWT_ISSUER": us.issuer,
                "MESHNAV_JWT_JWKS_URI": us.jwks_uri,
                "MESHNAV_OAUTH_SCOPES": SCOPE,
            },
        )
        try:
            # an OAuth client's id is its ``sub``; a person's, the login they signed in with
            for principal in ("agent", "short", "bare", "alice"):
                mesh.principal(principal, scopes=[SCOPE])  # what a token of it may use
                mesh.grant(principal, "*/*/*", scopes=(SCOPE,))
            mesh.grant("*", "*/*/*", scopes=(SCOPE,))  # "stranger" has no principal row
            mesh.start_navigator(port)
            mesh.start_node("db1", ["node", f"sqlite:{root / 'db1'}"])
            yield Deployment(mesh, us, other)
        finally:
            mesh.close()


def _challenge(answer: httpx.Response) -> dict[str, str]:
    scheme, _, params = answer.headers["www-authenticate"].partition(" ")
    assert scheme == "Bearer"
    return dict(re.findall(r'(\w+)="([^"]*)"', params))


def test_an_unauthenticated_client_is_pointed_at_the_authorization_server(
    deployment: Deployment,
) -> None:
    """What a client does with no token: POST /mcp, read the 401's challenge, fetch the metadata,
    and from it the authorization server's own metadata (RFC 8414)."""
    answer = httpx.post(
        deployment.resource,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == 401
    assert answer.json()["error"] == "unauthenticated"
    challenge = _challenge(answer)
    assert challenge == {
        "resource_metadata": deployment.mesh.navigator_url
        + "/.well-known/oauth-protected-resource/mcp",
        "scope": SCOPE,
    }
    metadata = httpx.get(challenge["resource_metadata"]).json()
    assert metadata["resource"] == deployment.resource
    assert metadata["authorization_servers"] == [deployment.issuer.issuer]
    assert metadata["scopes_supported"] == [SCOPE]
    server = httpx.get(deployment.issuer.issuer + "/.well-known/openid-configuration").json()
    assert server["issuer"] == deployment.issuer.issuer
    assert "client_credentials" in server["grant_types_supported"]


async def test_a_token_for_the_navigator_walks_and_calls(deployment: Deployment) -> None:
    async with mcp_client(deployment.mesh.navigator_url, deployment.token()) as client:
        tools = {tool.name for tool in await client.list_tools()}
        seats = tool_result(await client.call_tool_mcp("seats", {}))
        found = tool_result(await client.call_tool_mcp("search", {"query": "list tables"}))
        called = await client.call_tool_mcp("call", {"address": "db1/sqlite/list_databases"})
    assert tools == {"seats", "search", "describe", "call"}
    assert "db1" in str(seats)
    assert "db1/sqlite/list_tables" in {r["address"] for r in found["results"]}
    assert not called.is_error, called
    assert [d["name"] for d in called.structured_content["databases"]] == ["inventory"]


def _refused(deployment: Deployment, token: str) -> httpx.Response:
    return httpx.post(
        deployment.resource,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "accept": "application/json, text/event-stream",
            "authorization": f"Bearer {token}",
        },
    )


@pytest.mark.parametrize("kind", ["another audience", "another issuer", "expired"])
def test_a_token_not_for_this_navigator_now_is_refused(deployment: Deployment, kind: str) -> None:
    if kind == "another audience":
        token = deployment.token(resource="https://elsewhere.example/mcp")
    elif kind == "another issuer":
        token = deployment.token(other_issuer=True)
    else:
        token = deployment.token("short")
        assert _refused(deployment, token).status_code != 401  # it was good while it lived
        time.sleep(3.5)
    answer = _refused(deployment, token)
    assert answer.status_code == 401
    assert answer.json() == {
        "error": "unauthenticated",
        "status": 401,
        "message": "Missing or invalid credentials.",
    }
    assert _challenge(answer)["error"] == "invalid_token"
    assert token not in answer.text


@pytest.mark.parametrize("who", ["bare", "stranger"])
async def test_a_token_without_the_scope_or_principal_the_grants_need_reaches_nothing(
    deployment: Deployment, who: str
) -> None:
    """``bare`` holds a grant that needs mesh:use, asked for no scope; ``stranger`` holds the
    scope, but no principal of its name is registered: not even the ``*`` row applies."""
    token = deployment.token("bare", scope="") if who == "bare" else deployment.token(who)
    async with mcp_client(deployment.mesh.navigator_url, token) as client:
        called = tool_result(
            await client.call_tool_mcp("call", {"address": "db1/sqlite/list_databases"})
        )
        found = tool_result(await client.call_tool_mcp("search", {"query": "list tables"}))
    assert called["error"] == "tool_not_granted" and called["status"] == 403
    assert found["results"] == []


def test_the_admin_api_asks_for_its_scope(deployment: Deployment) -> None:
    answer = httpx.get(
        deployment.mesh.navigator_url + "/api/v1/mesh",
        headers={"authorization": f"Bearer {deployment.token()}"},
    )
    assert answer.status_code == 403 and answer.json()["error"] == "tool_not_granted"
    assert _challenge(answer) == {
        "error": "insufficient_scope",
        "scope": "mesh:admin",
        "resource_metadata": deployment.mesh.navigator_url
        + "/.well-known/oauth-protected-resource/mcp",
    }


def test_stored_tokens_work_beside_oauth(deployment: Deployment) -> None:
    token = deployment.mesh.principal("operator", ["mesh:admin"])
    answer = httpx.get(
        deployment.mesh.navigator_url + "/api/v1/mesh",
        headers={"authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 200, answer.text


def test_the_official_sdk_finds_the_authorization_server_and_signs_in(
    deployment: Deployment,
) -> None:
    """The TypeScript SDK's own OAuth client, given the navigator's URL alone: the 401 leads it
    to the metadata, the metadata to oidc-provider, where it registers itself, has alice sign in
    (the forms submitted headless) and exchanges the code with PKCE for a token for the
    navigator's resource, with which it lists the walker tools."""
    packages = node_packages()
    done = subprocess.run(
        ["node", str(packages / "sdk_client.mjs"), deployment.mesh.navigator_url, "alice"],
        cwd=packages,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(answer["tools"]) == ["call", "describe", "search", "seats"]
    fetched: list[str] = answer["fetched"]
    navigator, issuer = deployment.mesh.navigator_url, deployment.issuer.issuer
    metadata = fetched.index(navigator + "/.well-known/oauth-protected-resource/mcp")
    assert fetched[0] == navigator + "/mcp" and metadata > 0  # the 401 came first, then discovery
    discovered = [u for u in fetched if u.startswith(issuer + "/.well-known/")]
    assert discovered and fetched.index(discovered[0]) > metadata  # the server, from the metadata
    assert any(u.startswith(issuer + "/reg") for u in fetched)  # it registered itself
    assert fetched[-1] == navigator + "/mcp"
