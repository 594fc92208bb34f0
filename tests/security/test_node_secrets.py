"""A node's secrets are not in its environment block (ADR 0046).

``os.environ.pop`` left the node's original environment in ``/proc/PID/environ``, where a
``stdio`` module of the same user read the node's token, every other module's secrets and
``PGPASSWORD``. The node now runs itself anew in place, its secrets on a pipe. Run as CI runs
(as root, who reads any ``/proc``), a stdio module reads ``/proc/$PPID/environ`` and
``/proc/<node pid>/environ`` and finds none of them; the harness's pid is still the node's.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MeshHarness, _wait_http, free_port, mcp_client, stop, tool_result
from tests.postgres_server import PostgresServer

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh"), pytest.mark.timeout(300)]

UPSTREAMS = Path(__file__).resolve().with_name("upstreams.py")


@dataclass
class Node:
    mesh: MeshHarness
    agent: str
    secrets: dict[str, str]
    own: str

    @property
    def pid(self) -> int:
        return self.mesh.nodes["sec"].process.pid


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("node-secrets")
    given = {
        name: f"{name.lower()}-{secrets.token_hex(16)}"
        for name in ("OWN_SECRET", "OTHER_SECRET", "HEADER_SECRET", "PGPASSWORD")
    }
    given["OTEL_EXPORTER_OTLP_HEADERS"] = f"authorization=Bearer%20otel-{secrets.token_hex(16)}"
    port = free_port()
    with (root / "upstream.log").open("ab") as out:
        upstream = subprocess.Popen(
            [sys.executable, str(UPSTREAMS), "recorder", str(port), str(root / "calls.jsonl")],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    _wait_http(f"http://127.0.0.1:{port}/mcp", upstream, root / "upstream.log")
    mesh = MeshHarness(root / "run")
    try:
        agent = mesh.principal("agent")
        mesh.grant("agent", "*/*/*")
        mesh.start_navigator()
        stdio = f"{sys.executable} {UPSTREAMS} stdio"
        mesh.start_node(
            "sec",
            [f"stdio:env={stdio}", f"stdio:other={stdio}", f"http:web=http://127.0.0.1:{port}/mcp"],
            options=[
                "--module-env",
                "env:OWN_VAR=${OWN_SECRET}",
                "--module-env",
                "other:OTHER_VAR=${OTHER_SECRET}",
                "--module-header",
                "web:Authorization=Bearer ${HEADER_SECRET}",
            ],
            env=given,
        )
        token = mesh.nodes["sec"].token  # type: ignore[attr-defined]
        yield Node(mesh, agent, {**given, "MESHNAV_TOKEN": token}, given["OWN_SECRET"])
    finally:
        mesh.close()
        stop(upstream)


async def _environments(node: Node) -> dict[str, Any]:
    async with mcp_client(node.mesh.navigator_url, node.agent) as client:
        result = await client.call_tool_mcp(
            "call", {"address": "sec/env/environments", "args": {"node_pid": node.pid}}
        )
    assert not result.is_error, result
    answer = tool_result(result)
    return answer.get("result", answer)  # type: ignore[no-any-return]


async def test_a_stdio_module_reads_no_secret_of_its_node(node: Node) -> None:
    seen = await _environments(node)
    assert not [key for key in seen["meta"] if key.startswith("meshnav/")], seen["meta"]
    assert seen["parent_pid"] == node.pid  # the node ran itself anew in place: the same pid
    for place in ("parent", "node"):
        block = seen[place]
        assert "MESHNAV_HEARTBEAT_S" in block, block  # read, and the node's
        for name, value in node.secrets.items():
            assert value not in block, f"{name} is in the {place}'s environment block"
    # the module has its own variable, and nothing else of the node's
    own = seen["own"]
    assert own.get("OWN_VAR") == node.own
    for name, value in node.secrets.items():
        if value != node.own:
            assert value not in str(own), f"{name} reached the module"


def test_the_node_s_environment_block_holds_no_secret(node: Node) -> None:
    """What root (and any same-user peer, were the node dumpable) reads."""
    block = Path(f"/proc/{node.pid}/environ").read_bytes().decode("utf-8", "replace")
    assert "MESHNAV_HEARTBEAT_S" in block
    for name, value in node.secrets.items():
        assert value not in block, f"{name} is in /proc/<node>/environ"
    log = (node.mesh.root / "node-sec.log").read_text()
    for value in node.secrets.values():
        assert value not in log
    assert "environment OWN_VAR from ${OWN_SECRET}" in log  # read, and named by its source


@pytest.mark.postgres
async def test_pgpassword_still_reaches_a_postgres_module(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    """Run anew without it, the node still hands ``PGPASSWORD`` to its postgres module (whose
    role's password the server checks), and it is not in the node's environment block."""
    password = f"pw-{secrets.token_hex(12)}"
    role = f"nodesec_{secrets.token_hex(3)}"
    postgres_server.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    hba = postgres_server.data_dir / "pg_hba.conf"
    before = hba.read_text()
    hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n{before}")
    postgres_server.execute("SELECT pg_reload_conf()")
    mesh = MeshHarness(tmp_path / "run")
    try:
        agent = mesh.principal("agent")
        mesh.grant("agent", "*/*/*")
        mesh.start_navigator()
        mesh.start_node(
            "pg",
            [f"postgres:{postgres_server.dsn('postgres', user=role)}"],
            options=["--allow-privileged-role"],  # what is checked here is the password alone
            env={"PGPASSWORD": password},
        )
        async with mcp_client(mesh.navigator_url, agent) as client:
            result = await client.call_tool_mcp(
                "call", {"address": "pg/postgres/list_databases", "args": {}}
            )
        assert not result.is_error, result
        pid = mesh.nodes["pg"].process.pid
        assert password not in Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
    finally:
        mesh.close()
        hba.write_text(before)
        postgres_server.execute("SELECT pg_reload_conf()")
        postgres_server.execute(f"DROP ROLE {role}")
