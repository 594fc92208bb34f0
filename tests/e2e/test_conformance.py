"""The official MCP conformance suite's server scenarios against the navigator.

The suite (``conformance server --url URL --scenario NAME``) tests a server by URL and has no way
to send a header, so a loopback proxy stands in front of the navigator and adds exactly one thing
to each request: the agent's ``Authorization: Bearer``. Host, Origin and body pass through as sent.

Scenarios run here are those that hold for any MCP server. The others test fixtures of the suite's
own reference server and cannot apply to a server whose whole tool list is the four walker tools:
``tools-call-*``, ``elicitation-*``, ``json-schema-2020-12`` and ``server-sse-polling`` call tools
named ``test_simple_text``, ``json_schema_2020_12_tool``, ``test_reconnection`` and the like;
``resources-*``, ``prompts-*`` and ``completion-complete`` need resources, prompts and completions,
which the navigator does not offer.

Every server scenario of this suite's version speaks the legacy era (2025-06-18, 2025-11-25):
none reaches the sessionless era (2026-07-28), which clients speak by default. That era is left
to ``test_inspector.py`` (both eras) and the navigator's own tests.
"""

from __future__ import annotations

import json
import select
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_inspector import NODE_PACKAGE, NpmTool, install_npm_tool
from tests.harness import MeshHarness

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh"), pytest.mark.timeout(300)]

CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance@0.1.16"
SCENARIO_TIMEOUT_S = 120
PROXY_IDLE_S = 30.0

APPLICABLE = [
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "server-sse-multiple-streams",
]


# --- a proxy that adds the bearer token --------------------------------------------------------


class _BearerHandler(socketserver.BaseRequestHandler):
    """One request per connection: its head gets the token (and ``Connection: close``), then bytes
    flow both ways untouched until both sides are done."""

    server: BearerProxy

    def handle(self) -> None:
        client: socket.socket = self.request
        head = b""
        try:
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            with socket.create_connection(self.server.target, timeout=PROXY_IDLE_S) as upstream:
                upstream.sendall(self.server.rewrite(head))
                _relay(client, upstream)
        except OSError:
            return


def _relay(client: socket.socket, upstream: socket.socket) -> None:
    peers = {client: upstream, upstream: client}
    while peers:
        readable, _, _ = select.select(list(peers), [], [], PROXY_IDLE_S)
        if not readable:
            return
        for source in readable:
            data = source.recv(65536)
            if data:
                peers[source].sendall(data)
            else:  # that side is done sending: pass the half-close on
                peers.pop(source).shutdown(socket.SHUT_WR)


class BearerProxy(socketserver.ThreadingTCPServer):
    daemon_threads = True

    def __init__(self, target: tuple[str, int], token: str) -> None:
        super().__init__(("127.0.0.1", 0), _BearerHandler)
        self.target = target
        self.authorization = b"Authorization: Bearer " + token.encode()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def rewrite(self, received: bytes) -> bytes:
        head, _, body = received.partition(b"\r\n\r\n")
        request_line, *headers = head.split(b"\r\n")
        kept = [h for h in headers if not h.lower().startswith((b"authorization:", b"connection:"))]
        lines = [request_line, *kept, self.authorization, b"Connection: close"]
        return b"\r\n".join(lines) + b"\r\n\r\n" + body


@pytest.fixture(scope="module")
def proxy(mesh: MeshHarness) -> Iterator[BearerProxy]:
    host, port = mesh.navigator_url.removeprefix("http://").rsplit(":", 1)
    server = BearerProxy((host, int(port)), mesh.agent_token)  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, name="bearer-proxy", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


# --- the suite ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def conformance() -> NpmTool:
    return install_npm_tool(NODE_PACKAGE, CONFORMANCE_PACKAGE)


def _run_scenario(
    conformance: NpmTool, url: str, scenario: str, output: Path
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    command = conformance.command(
        "conformance", "server", "--url", f"{url}/mcp", "--scenario", scenario, "-o", str(output)
    )
    done = subprocess.run(
        command,
        check=False,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    reports = sorted(output.glob(f"server-{scenario}-*/checks.json"))
    assert reports, f"no checks.json (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    checks: list[dict[str, Any]] = json.loads(reports[-1].read_text())
    return done, checks


def _summary(checks: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{c['status']} {c['id']}: {c.get('errorMessage') or c['description']}" for c in checks
    )


@pytest.mark.parametrize("scenario", APPLICABLE)
def test_conformance_scenario_passes(
    conformance: NpmTool, proxy: BearerProxy, tmp_path: Path, scenario: str
) -> None:
    done, checks = _run_scenario(conformance, proxy.url, scenario, tmp_path)
    assert checks, _summary(checks)
    assert {c["status"] for c in checks} <= {"SUCCESS", "INFO"}, _summary(checks)
    assert done.returncode == 0, _summary(checks)


def test_conformance_dns_rebinding_protection(
    conformance: NpmTool, proxy: BearerProxy, tmp_path: Path
) -> None:
    """A request with ``Host``/``Origin: evil.example.com`` must get a 4xx even with a valid token;
    one with a loopback Host and Origin must still be served."""
    done, checks = _run_scenario(conformance, proxy.url, "dns-rebinding-protection", tmp_path)
    assert {c["status"] for c in checks} == {"SUCCESS"}, _summary(checks)
    assert done.returncode == 0, _summary(checks)
