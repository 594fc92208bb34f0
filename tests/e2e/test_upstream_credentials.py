"""Upstream credentials stay on the node (issue 27, acceptance 3; ADR 0038).

One node serves three upstreams that each need a credential: an HTTP MCP server that lets in only
``Authorization: Bearer S3CRET-<random>`` (the header from the node's environment,
``--module-header``), a stdio server given that variable (``--module-env``), and an HTTP server
that takes only access tokens of the real authorization server (``--module-oauth``, its client
secret in a file). An agent calls each through the navigator; then the secrets are searched for,
and absent, everywhere they must not be: the registry (the SQLite file, or a PostgreSQL dump),
every process's command line, the navigator's and the node's logs, every answer, ``/metrics``,
and the console's pages.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest

from tests.authorization_server import AuthorizationServer, authorization_server
from tests.harness import MeshHarness, _wait_http, free_port, mcp_client, stop, tool_result
from tests.postgres_server import PostgresServer

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh"), pytest.mark.timeout(300)]

SERVERS = Path(__file__).resolve().parents[1] / "mesh" / "fixtures" / "credential_servers.py"


def _upstream(
    root: Path, *arguments: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """One of ``credential_servers.py``'s HTTP servers, answering before this returns; its
    secret, if any, in its environment, never its command line."""
    log = root / f"upstream-{arguments[0]}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, str(SERVERS), *arguments],
            env={"PATH": "/usr/bin:/bin", **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _wait_http(f"http://127.0.0.1:{arguments[1]}/mcp", process, log)
    return process


@dataclass
class Deployment:
    mesh: MeshHarness
    issuer: AuthorizationServer
    bearer_url: str
    jwt_url: str
    secrets: tuple[str, ...]
    agent: str
    answers: list[str] = field(default_factory=list)
    postgres: PostgresServer | None = None
    database: str = ""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp(f"credentials-{request.param}")
    header_secret = f"S3CRET-{secrets.token_hex(16)}"
    client_secret = f"CL1ENT-{secrets.token_hex(16)}"
    secret_file = root / "client.secret"
    secret_file.write_text(client_secret + "\n")
    secret_file.chmod(0o600)
    clients = [
        {
            "client_id": "node-up1",
            "client_secret": client_secret,
            "grant_types": ["client_credentials"],
            "redirect_uris": [],
            "response_types": [],
        }
    ]
    postgres: PostgresServer | None = None
    database_url = ""
    database = f"credentials_{secrets.token_hex(4)}"
    if request.param == "postgresql":
        postgres = request.getfixturevalue("postgres_server")
        database_url = postgres.create_database(database).replace(
            "postgresql://", "postgresql+psycopg://"
        )
    processes: list[subprocess.Popen[bytes]] = []
    with authorization_server(root, clients=clients, scopes=[], short_lived=["node-up1"]) as us:
        bearer_port, jwt_port = free_port(), free_port()
        processes.append(
            _upstream(root, "bearer", str(bearer_port), env={"UPSTREAM_SECRET": header_secret})
        )
        processes.append(_upstream(root, "jwt", str(jwt_port), us.issuer))
        mesh = MeshHarness(root / "run", database_url=database_url)
        try:
            agent = mesh.principal("agent")
            mesh.grant("agent", "*/*/*")
            mesh.start_navigator()
            bearer_url = f"http://127.0.0.1:{bearer_port}/mcp"
            jwt_url = f"http://127.0.0.1:{jwt_port}/mcp"
            stdio = f"{sys.executable} {SERVERS} stdio"
            mesh.start_node(
                "up1",
                [
                    f"http:github={bearer_url}",
                    f"stdio:tools={stdio}",
                    f"stdio:other={stdio}",
                    f"http:protected={jwt_url}",
                ],
                options=[
                    "--module-header",
                    "github:Authorization=Bearer ${UPSTREAM_TOKEN}",
                    "--module-env",
                    "tools:UPSTREAM_SECRET=${UPSTREAM_TOKEN}",
                    "--module-oauth",
                    f"protected:{us.token_url},node-up1,@{secret_file}",
                ],
                env={"UPSTREAM_TOKEN": header_secret},
            )
            yield Deployment(
                mesh,
                us,
                bearer_url,
                jwt_url,
                (header_secret, client_secret),
                agent,
                postgres=postgres,
                database=database,
            )
        finally:
            mesh.close()
            for process in processes:
                stop(process)


async def _call(deployment: Deployment, address: str) -> dict[str, object]:
    async with mcp_client(deployment.mesh.navigator_url, deployment.agent) as client:
        result = await client.call_tool_mcp("call", {"address": address})
    deployment.answers.append(result.model_dump_json())
    assert not result.is_error, result
    return tool_result(result)


async def test_an_upstream_gets_its_header_from_the_nodes_environment(
    deployment: Deployment,
) -> None:
    direct = httpx.post(deployment.bearer_url, json={})
    assert direct.status_code == 401  # the upstream refuses anyone without the secret
    assert await _call(deployment, "up1/github/whoami") == {"let_in": True}


async def test_a_stdio_module_alone_gets_its_variable(deployment: Deployment) -> None:
    assert await _call(deployment, "up1/tools/has_secret") == {"set": True}
    assert await _call(deployment, "up1/other/has_secret") == {"set": False}


async def test_client_credentials_are_fetched_and_renewed(deployment: Deployment) -> None:
    """The authorization server's tokens live 2 s: a call after the first token expired works."""
    assert await _call(deployment, "up1/protected/whoami") == {"let_in": True}
    await anyio.sleep(3)
    assert await _call(deployment, "up1/protected/whoami") == {"let_in": True}
    log = (deployment.mesh.root / "node-up1.log").read_text()
    assert log.count("an access token for node-up1 was fetched") >= 2


def _registry_text(deployment: Deployment) -> bytes:
    if deployment.postgres is None:
        files = deployment.mesh.root.glob("registry.db*")
        return b"".join(path.read_bytes() for path in files)
    dump = subprocess.run(
        [
            str(deployment.postgres.bindir / "pg_dump"),
            deployment.postgres.dsn(deployment.database),
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    assert b"CREATE TABLE" in dump.stdout
    return dump.stdout


def _command_lines() -> bytes:
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            lines.append(cmdline.read_bytes())
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return b"\n".join(lines)


def _console(deployment: Deployment) -> str:
    url = deployment.mesh.navigator_url
    viewer = f"viewer-{secrets.token_hex(3)}"
    admin = deployment.mesh.principal(viewer, ["mesh:admin"])
    deployment.mesh.grant(viewer, "*/*/*")
    with httpx.Client(base_url=url, headers={"origin": url}) as console:
        signed = console.post("/console/sign-in", data={"token": admin, "next": "/"})
        assert signed.status_code in (302, 303), signed.text
        pages = [
            console.get(path).text
            for path in (
                "/",
                "/console/machines/up1",
                "/console/assignments/up1/github",
                "/console/assignments/up1/protected",
                "/console/grants",
                "/console/search?q=secret",
            )
        ]
        mesh = console.get("/api/v1/mesh", headers={"authorization": f"Bearer {admin}"}).text
    assert "up1" in pages[1]
    return "\n".join([*pages, mesh])


async def test_no_secret_leaves_the_node(deployment: Deployment) -> None:
    # every call first, so that every answer and log line is there to search
    await _call(deployment, "up1/github/whoami")
    await _call(deployment, "up1/tools/has_secret")
    await _call(deployment, "up1/protected/whoami")
    root = deployment.mesh.root
    node_log = (root / "node-up1.log").read_text()
    places = {
        "the registry": _registry_text(deployment).decode("utf-8", "replace"),
        "a command line": _command_lines().decode("utf-8", "replace"),
        "the navigator's log": (root / "navigator.log").read_text(),
        "the node's log": node_log,
        "an answer": "\n".join(deployment.answers),
        "/metrics": httpx.get(deployment.mesh.navigator_url + "/metrics").text,
        "the console": _console(deployment),
    }
    for secret in deployment.secrets:
        for place, text in places.items():
            assert secret not in text, f"a secret is in {place}"
    # the node's log says where each came from
    assert "header Authorization from ${UPSTREAM_TOKEN}" in node_log
    assert "environment UPSTREAM_SECRET from ${UPSTREAM_TOKEN}" in node_log
    assert "secret from @" in node_log
