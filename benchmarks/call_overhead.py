"""What the navigator's hop costs: the same small call made directly to a backend, through the
navigator (grants read from the registry, arguments validated, call token signed), and through
FastMCP's own proxy over one long-lived client — alternating, in one run, on one machine.

Prints p50/p95 of each, the milliseconds each hop adds over direct, calls/s with 10 concurrent
clients, the CPU time the navigator's and the proxy's processes spend per call (the hop's own work,
which other load on the machine does not inflate as it does wall time), and the machine's load
average before and after (wall figures move with it: compare paths within one run, and repeat
runs). Usage: python benchmarks/call_overhead.py [--calls N] [--baseline REV] [--traced]

``--baseline REV`` runs the navigator of git revision REV beside this one (its own registry, set up
alike), alternating with it: the code before a change, side by side (e.g. tracing off against the
code before tracing existed). ``--traced`` adds a navigator of this code exporting every span over
OTLP/HTTP to a receiver here (ADR 0040).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StreamableHttpTransport  # noqa: E402

from tests.harness import MeshHarness, free_port, start_backend, stop  # noqa: E402

Call = Callable[[], Awaitable[object]]


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _alternate(paths: dict[str, Call], calls: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(20):  # warm every path
        for call in paths.values():
            await call()
    for _ in range(calls):
        for name, call in paths.items():
            started = time.perf_counter()
            await call()
            samples[name].append((time.perf_counter() - started) * 1000)
    return samples


async def _throughput(
    make: Callable[[], Awaitable[tuple[Client[StreamableHttpTransport], Call]]], seconds: float
) -> float:
    async def worker(deadline: float) -> int:
        client, call = await make()
        done = 0
        async with client:
            while time.perf_counter() < deadline:
                await call()
                done += 1
        return done

    deadline = time.perf_counter() + seconds
    counts = await asyncio.gather(*(worker(deadline) for _ in range(10)))
    return sum(counts) / seconds


def register_backend(navigator_url: str, admin: str, url: str) -> None:
    """The plain server at ``url`` registered by URL as ``bench1/echo`` (an operator's act)."""
    httpx.post(
        navigator_url + "/api/v1/assignments",
        headers={"Authorization": f"Bearer {admin}"},
        json={"machine": "bench1", "role": "echo", "endpoint": url},
        timeout=30,
    ).raise_for_status()


@contextmanager
def _span_sink() -> Iterator[int]:
    """An OTLP/HTTP receiver on 127.0.0.1 that takes every export and keeps nothing."""

    class Sink(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _meshnav(source: Path, *arguments: str, env: dict[str, str] | None = None) -> str:
    """``python -m meshnav ARGUMENTS`` of the code at ``source``, its output."""
    return subprocess.run(
        [sys.executable, "-m", "meshnav", *arguments],
        cwd=source,
        env={**os.environ, "PYTHONPATH": str(source), **(env or {})},
        capture_output=True,
        check=True,
        text=True,
    ).stdout


def _navigator(
    source: Path, database: str, env: dict[str, str], log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """A navigator of the code at ``source`` on ``database``, answering before this returns; it
    follows the registry as often as the harness's navigator does (its heartbeat setting), so
    that their CPU per call compares."""
    env = {"MESHNAV_HEARTBEAT_S": str(MeshHarness.heartbeat_s), **env}
    port = free_port()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "meshnav", "navigator", "serve"),
                "--listen",
                f"127.0.0.1:{port}",
                "--database",
                database,
            ],
            cwd=source,
            env={**os.environ, "PYTHONPATH": str(source), **env},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(log.read_text()[-2000:])
        try:
            httpx.get(url + "/healthz", timeout=1.0)
            return process, url
        except httpx.HTTPError:
            time.sleep(0.05)
    stop(process, kill=True)
    raise RuntimeError("the navigator did not start")


def _baseline(revision: str, tmp: Path, backend_url: str) -> tuple[Path, str, str]:
    """Revision's source, and a registry it made itself with the bench principal granted and the
    backend assigned, as this run's is: (source, database URL, the principal's token)."""
    source = tmp / "baseline"
    source.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive, check=True)
    database = f"sqlite:///{tmp / 'baseline.db'}"
    process, url = _navigator(source, database, {}, tmp / "baseline.log")  # makes the registry
    try:
        made = json.loads(
            _meshnav(source, "principal", "add", "bench", "--database", database, "--json")
        )["token"]
        _meshnav(source, "grant", "allow", "bench", "bench1/echo/*", "--database", database)
        admin = json.loads(
            _meshnav(
                source,
                *("principal", "add", "bench-admin", "--scopes", "mesh:admin"),
                *("--database", database, "--json"),
            )
        )["token"]
        register_backend(url, admin, backend_url)
    finally:
        stop(process)
    return source, database, made


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


async def main(calls: int, seconds: float, baseline: str | None, traced: bool) -> None:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as others:
        backend, backend_port = start_backend()
        backend_url = f"http://127.0.0.1:{backend_port}/mcp"
        proxy, proxy_port = start_backend("proxy", backend_url)
        mesh = MeshHarness(Path(tmp))
        try:
            token = mesh.principal("bench")
            admin = mesh.principal("bench-admin", ["mesh:admin"])
            mesh.grant("bench", "bench1/echo/*")
            mesh.start_navigator()
            register_backend(mesh.navigator_url, admin, backend_url)
            headers = {"Authorization": f"Bearer {token}"}
            direct = Client(StreamableHttpTransport(backend_url))
            peer = Client(StreamableHttpTransport(f"http://127.0.0.1:{proxy_port}/mcp"))
            navigator = Client(
                StreamableHttpTransport(mesh.navigator_url + "/mcp", headers=headers)
            )
            extra: dict[str, tuple[subprocess.Popen[bytes], Client[Any]]] = {}
            if baseline is not None:
                source, database, made = _baseline(baseline, Path(tmp), backend_url)
                process, url = _navigator(source, database, {}, Path(tmp) / "baseline.log")
                others.callback(stop, process)
                extra[f"nav @{baseline[:10]}"] = (
                    process,
                    Client(
                        StreamableHttpTransport(
                            url + "/mcp", headers={"Authorization": f"Bearer {made}"}
                        )
                    ),
                )
            if traced:
                sink = others.enter_context(_span_sink())
                env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink}"}
                process, url = _navigator(ROOT, mesh.database_url, env, Path(tmp) / "traced.log")
                others.callback(stop, process)
                extra["nav traced"] = (
                    process,
                    Client(StreamableHttpTransport(url + "/mcp", headers=headers)),
                )
            async with direct, peer, navigator, AsyncExitStack() as clients:
                for _, client in extra.values():
                    await clients.enter_async_context(client)
                paths: dict[str, Call] = {
                    "direct": lambda: direct.call_tool_mcp("echo", {"text": "hi"}),
                    "fastmcp proxy": lambda: peer.call_tool_mcp("echo", {"text": "hi"}),
                    "navigator": lambda: navigator.call_tool_mcp(
                        "call", {"address": "bench1/echo/echo", "args": {"text": "hi"}}
                    ),
                }
                for name, (_, client) in extra.items():
                    paths[name] = functools.partial(
                        client.call_tool_mcp,
                        "call",
                        {"address": "bench1/echo/echo", "args": {"text": "hi"}},
                    )
                result = await navigator.call_tool_mcp(
                    "call", {"address": "bench1/echo/echo", "args": {"text": "hi"}}
                )
                assert not result.is_error, result
                hops = {
                    "fastmcp proxy": psutil.Process(proxy.pid),
                    "navigator": psutil.Process(mesh.navigator.pid),  # type: ignore[union-attr]
                    **{name: psutil.Process(p.pid) for name, (p, _) in extra.items()},
                }
                cpu_before = {name: _cpu_s(process) for name, process in hops.items()}
                samples = await _alternate(paths, calls)
                cpu_ms = {
                    name: (_cpu_s(process) - cpu_before[name]) * 1000 / (calls + 20)
                    for name, process in hops.items()
                }

            async def make_direct() -> tuple[Client[StreamableHttpTransport], Call]:
                c = Client(StreamableHttpTransport(backend_url))
                return c, lambda: c.call_tool_mcp("echo", {"text": "hi"})

            async def make_peer() -> tuple[Client[StreamableHttpTransport], Call]:
                c = Client(StreamableHttpTransport(f"http://127.0.0.1:{proxy_port}/mcp"))
                return c, lambda: c.call_tool_mcp("echo", {"text": "hi"})

            async def make_navigator() -> tuple[Client[StreamableHttpTransport], Call]:
                c = Client(StreamableHttpTransport(mesh.navigator_url + "/mcp", headers=headers))
                return c, lambda: c.call_tool_mcp(
                    "call", {"address": "bench1/echo/echo", "args": {"text": "hi"}}
                )

            rates = {
                "direct": await _throughput(make_direct, seconds),
                "fastmcp proxy": await _throughput(make_peer, seconds),
                "navigator": await _throughput(make_navigator, seconds),
            }
        finally:
            mesh.close()
            for process in (proxy, backend):
                process.terminate()
                process.wait(timeout=10)

    base = statistics.median(samples["direct"])
    print(
        f"call overhead, {calls} alternating calls per path, then 10 concurrent clients for {seconds:.0f} s"
    )
    print(f"{'path':<16}{'p50 ms':>9}{'p95 ms':>9}{'adds p50':>10}{'calls/s':>10}")
    for name, values in samples.items():
        p50, p95 = statistics.median(values), _percentile(values, 0.95)
        rate = f"{rates[name]:>10.0f}" if name in rates else f"{'-':>10}"
        print(f"{name:<16}{p50:>9.2f}{p95:>9.2f}{p50 - base:>+10.2f}{rate}")
    hop = statistics.median(samples["navigator"]) - base
    peer_hop = statistics.median(samples["fastmcp proxy"]) - base
    print(f"navigator hop / FastMCP proxy hop: {hop / peer_hop:.2f}x")
    print(
        f"CPU per call in the hop's process: navigator {cpu_ms['navigator']:.2f} ms, "
        f"FastMCP proxy {cpu_ms['fastmcp proxy']:.2f} ms "
        f"({cpu_ms['navigator'] / cpu_ms['fastmcp proxy']:.2f}x)"
    )
    for name in extra:
        print(
            f"CPU per call: {name} {cpu_ms[name]:.2f} ms, navigator {cpu_ms['navigator']:.2f} ms "
            f"(navigator / {name}: {cpu_ms['navigator'] / cpu_ms[name]:.3f}x)"
        )
    print(f"load average (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--baseline", help="a git revision whose navigator runs beside this one")
    parser.add_argument("--traced", action="store_true", help="a navigator exporting its spans too")
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.seconds, options.baseline, options.traced))
