"""Traces across the hop (issue 28, acceptance 3; ADR 0040): one call through a navigator and a
node is one trace with spans from both processes, received by an OTLP/HTTP endpoint here; a span
says addresses, principals and codes, never the arguments; with no endpoint, nothing is traced."""

from __future__ import annotations

import gzip
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.harness import MeshHarness, mcp_client, tool_result

pytestmark = [pytest.mark.e2e]

CANARY = "canary-7f3e91"


class Collector:
    """An OTLP/HTTP trace receiver on 127.0.0.1: every span it was sent, decoded."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()

    def receive(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        with self.lock:
            self.bodies.append(body)
            for resource_spans in request.resource_spans:
                service = next(
                    a.value.string_value
                    for a in resource_spans.resource.attributes
                    if a.key == "service.name"
                )
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            {
                                "service": service,
                                "name": span.name,
                                "trace": span.trace_id.hex(),
                                "id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "attributes": {
                                    a.key: a.value.string_value or a.value.int_value
                                    for a in span.attributes
                                },
                            }
                        )


@pytest.fixture
def collector() -> Iterator[tuple[Collector, int]]:
    received = Collector()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/traces":
                received.receive(body)
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield received, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _mesh(root: Path, env: dict[str, str]) -> tuple[MeshHarness, str]:
    harness = MeshHarness(root, env=env)
    token = harness.principal("tracer")
    harness.grant("tracer", "*/*/*")
    harness.start_navigator()
    harness.start_node("t1", ["node"])
    return harness, token


async def _call(harness: MeshHarness, token: str) -> None:
    async with mcp_client(harness.navigator_url, token) as client:
        done = await client.call_tool_mcp("call", {"address": "t1/node/uptime", "args": {}})
        assert not done.is_error, done
        refused = tool_result(
            await client.call_tool_mcp("call", {"address": "t1/node/uptime", "args": {"x": CANARY}})
        )
        assert refused["error"] == "invalid_arguments"


async def test_a_call_is_one_trace_across_navigator_and_node(
    tmp_path: Path, collector: tuple[Collector, int]
) -> None:
    received, port = collector
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
    }
    harness, token = _mesh(tmp_path, env)
    try:
        await _call(harness, token)
    finally:
        harness.close()  # a clean stop flushes what is buffered
    spans = received.spans
    calls = [s for s in spans if s["name"] == "tools/call call"]
    assert len(calls) == 2, [s["name"] for s in spans]
    ok, refused = sorted(calls, key=lambda s: "meshnav.error" in s["attributes"])
    trace = [s for s in spans if s["trace"] == ok["trace"]]
    by_name = {s["name"]: s for s in trace}
    assert {s["service"] for s in trace} == {"meshnav-navigator", "meshnav-node"}
    assert {"grants", "validation", "confirmation", "node hop", "module call"} <= set(by_name)
    hop, module = by_name["node hop"], by_name["module call"]
    assert module["service"] == "meshnav-node" and module["parent"] == hop["id"]
    assert hop["parent"] == ok["id"] and by_name["grants"]["parent"] == ok["id"]
    assert ok["parent"] == "", "the request's span starts the navigator's own trace"
    assert ok["attributes"]["meshnav.principal"] == "tracer"
    assert ok["attributes"]["meshnav.address"] == "t1/node/uptime"
    assert module["attributes"]["meshnav.tool"] == "uptime"
    assert module["attributes"]["meshnav.principal"] == "tracer"
    assert refused["attributes"]["meshnav.error"] == "invalid_arguments"
    assert refused["trace"] != ok["trace"], "each request is its own trace"
    assert not any(s["trace"] == refused["trace"] for s in spans if s["service"] == "meshnav-node")
    assert all(CANARY.encode() not in body for body in received.bodies)


async def test_without_an_endpoint_nothing_is_exported(
    tmp_path: Path, collector: tuple[Collector, int]
) -> None:
    """Every other OTel variable set, the collector listening: no endpoint, no export."""
    received, port = collector
    env = {
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "meshnav",
        "OTEL_EXPORTER_OTLP_HEADERS": f"x-collector=127.0.0.1:{port}",
    }
    harness, token = _mesh(tmp_path, env)
    try:
        await _call(harness, token)
        time.sleep(0.5)
    finally:
        harness.close()
    assert received.spans == [] and received.bodies == []


def test_off_tracing_imports_no_sdk() -> None:
    """Off, the navigator's call path never loads the SDK: nothing is exported, nothing paid."""
    code = (
        "import sys\n"
        "from mesh import tracing\n"
        "import navigator.mcp.server, mesh.server\n"
        "assert tracing.configure('x', {}) is None and not tracing.enabled()\n"
        "with tracing.span('s', address='a/b/c') as s:\n"
        "    assert s is None and tracing.trace_context() == {}\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry.sdk')], 'sdk loaded'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
