"""What an ``http:`` upstream can do to its node, and what it is shown (ADR 0046).

One node serves three real upstreams on 127.0.0.1 (``tests/security/upstreams.py``): one that
answers a call with 512 MiB, one that records what each call sent it, and one whose every error
repeats a credential-looking string. An agent calls each through the navigator.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.harness import MeshHarness, _wait_http, free_port, mcp_client, stop, tool_result

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh"), pytest.mark.timeout(300)]

UPSTREAMS = Path(__file__).resolve().with_name("upstreams.py")
#: The node's bound on one upstream answer in these tests (the default is 4 MiB).
ANSWER_BYTES = 4 << 20


@dataclass
class Node:
    mesh: MeshHarness
    agent: str
    principal: str
    recorded: Path
    secret: str

    @property
    def log(self) -> str:
        return (self.mesh.root / "node-up.log").read_text()

    @property
    def pid(self) -> int:
        return self.mesh.nodes["up"].process.pid


def _upstream(root: Path, *arguments: str) -> subprocess.Popen[bytes]:
    log = root / f"upstream-{arguments[0]}.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, str(UPSTREAMS), *arguments], stdout=out, stderr=subprocess.STDOUT
        )
    _wait_http(f"http://127.0.0.1:{arguments[1]}/mcp", process, log)
    return process


class _Sink(BaseHTTPRequestHandler):
    """Takes the spans the navigator and the node export, so that both trace every call."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads the node's log, not this server's."""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    root = tmp_path_factory.mktemp("upstreams")
    secret = f"sk_live_{secrets.token_hex(16)}"
    principal = f"caller-{secrets.token_hex(4)}"
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    recorded = root / "recorded.jsonl"
    ports = {kind: free_port() for kind in ("huge", "recorder", "leaky", "traced")}
    processes = [
        _upstream(root, "huge", str(ports["huge"])),
        _upstream(root, "recorder", str(ports["recorder"]), str(recorded)),
        _upstream(root, "leaky", str(ports["leaky"]), secret),
        _upstream(root, "recorder", str(ports["traced"]), str(recorded) + ".traced"),
    ]
    mesh = MeshHarness(root / "run")
    mesh.env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink.server_address[1]}",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    try:
        agent = mesh.principal(principal)
        mesh.grant(principal, "*/*/*")
        mesh.start_navigator()
        mesh.start_node(
            "up",
            [f"http:{kind}=http://127.0.0.1:{port}/mcp" for kind, port in ports.items()],
            options=["--module-trace", "traced"],
            env={"MESHNAV_UPSTREAM_ERROR_LOG_S": "3600"},
        )
        yield Node(mesh, agent, principal, recorded, secret)
    finally:
        mesh.close()
        sink.shutdown()
        sink.server_close()
        for process in processes:
            stop(process)


async def _answer(node: Node, address: str, **arguments: object) -> Any:
    async with mcp_client(node.mesh.navigator_url, node.agent) as client:
        return await client.call_tool_mcp("call", {"address": address, "args": arguments})


async def _call(node: Node, address: str, **arguments: object) -> dict[str, object]:
    return tool_result(await _answer(node, address, **arguments))


class _PeakMemory:
    """The highest resident set size of a process, sampled every few milliseconds."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = self.process.memory_info().rss
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._done.wait(0.005):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> _PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


async def test_an_upstream_answer_past_the_bound_is_not_read(node: Node) -> None:
    """The upstream streams 512 MiB: the node stops at the bound, answers node_answer_too_large,
    and grows by no more than about twice the bound (the whole answer read, as before, took it
    past a gigabyte)."""
    before = psutil.Process(node.pid).memory_info().rss
    with _PeakMemory(node.pid) as memory:
        result = await _answer(node, "up/huge/echo", text="x")
    assert (result.meta or {}).get("meshnav/error") == "node_answer_too_large", result
    assert tool_result(result)["status"] == 502
    assert memory.peak - before < 3 * ANSWER_BYTES + (32 << 20), (before, memory.peak)
    # and the node serves on
    assert (await _call(node, "up/recorder/echo", text="still here")) == {"result": "still here"}


def _recorded(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_an_upstream_sees_none_of_meshnavs_own_meta(node: Node) -> None:
    """The navigator's call token names the caller and is signed for the node alone; the trace
    context is the mesh's own unless the operator chose to pass it on (``--module-trace``)."""
    await _call(node, "up/recorder/echo", text="hello")
    await _call(node, "up/traced/echo", text="hello")
    plain = _recorded(node.recorded)[-1]
    meta = plain["meta"] or {}
    assert isinstance(meta, dict)
    assert not [key for key in meta if key.startswith("meshnav/")], meta
    assert "traceparent" not in meta and "tracestate" not in meta, meta
    assert node.principal not in json.dumps(plain)  # the caller is named nowhere it is sent
    traced = _recorded(Path(str(node.recorded) + ".traced"))[-1]
    traced_meta = traced["meta"]
    assert isinstance(traced_meta, dict)
    assert not [key for key in traced_meta if key.startswith("meshnav/")], traced_meta
    assert str(traced_meta.get("traceparent", "")).startswith("00-"), traced_meta


async def test_an_upstreams_error_is_logged_without_its_words(node: Node) -> None:
    """Three ways to fail, each repeating a credential: the node's log names the class and code
    of each, once per interval, and never the credential or a traceback."""
    for tool in ("rpc", "echo", "boom", "rpc", "rpc"):
        answer = await _answer(node, f"up/leaky/{tool}")
        assert answer.is_error
        if tool == "rpc":  # the node's own answer (the others are the upstream's, relayed)
            assert node.secret not in answer.model_dump_json()
    log = node.log
    assert node.secret not in log
    assert "Traceback" not in log
    lines = [line for line in log.splitlines() if "upstream leaky" in line]
    assert lines, log[-3000:]
    assert len([line for line in lines if "McpError" in line or "-32603" in line]) == 1, lines
