"""What the navigator's hop costs: the same small call made directly to a backend, through the
navigator (grants read from the registry, arguments validated, call token signed), and through
FastMCP's own proxy over one long-lived client — alternating, in one run, on one machine.

Prints p50/p95 of each, the milliseconds each hop adds over direct, calls/s with 10 concurrent
clients, the CPU time the navigator's and the proxy's processes spend per call (the hop's own work,
which other load on the machine does not inflate as it does wall time), and the machine's load
average before and after (wall figures move with it: compare paths within one run, and repeat
runs). Beside it, a second navigator on the same registry with auditing off
(``MESHNAV_AUDIT_CALLS=false``): the CPU per call of the two, side by side, is what the audit
trail costs (ADR 0039). Usage: python benchmarks/call_overhead.py [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StreamableHttpTransport  # noqa: E402

from tests.harness import MeshHarness, start_backend  # noqa: E402

Call = Callable[[], Awaitable[object]]
CALL = {"address": "bench1/echo/echo", "args": {"text": "hi"}}


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


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


async def main(calls: int, seconds: float) -> None:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        backend, backend_port = start_backend()
        backend_url = f"http://127.0.0.1:{backend_port}/mcp"
        proxy, proxy_port = start_backend("proxy", backend_url)
        mesh = MeshHarness(Path(tmp))
        try:
            token = mesh.principal("bench")
            admin = mesh.principal("bench-admin", ["mesh:admin"])
            mesh.grant("bench", "bench1/echo/*")
            mesh.start_navigator()
            unaudited = MeshHarness(Path(tmp) / "off", database_url=mesh.database_url)
            unaudited.env["MESHNAV_AUDIT_CALLS"] = "false"
            unaudited.start_navigator()
            httpx.post(
                mesh.navigator_url + "/api/v1/assignments",
                headers={"Authorization": f"Bearer {admin}"},
                json={"machine": "bench1", "role": "echo", "endpoint": backend_url},
                timeout=30,
            ).raise_for_status()
            headers = {"Authorization": f"Bearer {token}"}
            direct = Client(StreamableHttpTransport(backend_url))
            peer = Client(StreamableHttpTransport(f"http://127.0.0.1:{proxy_port}/mcp"))
            navigator = Client(
                StreamableHttpTransport(mesh.navigator_url + "/mcp", headers=headers)
            )
            quiet = Client(
                StreamableHttpTransport(unaudited.navigator_url + "/mcp", headers=headers)
            )
            async with direct, peer, navigator, quiet:
                paths: dict[str, Call] = {
                    "direct": lambda: direct.call_tool_mcp("echo", {"text": "hi"}),
                    "fastmcp proxy": lambda: peer.call_tool_mcp("echo", {"text": "hi"}),
                    "navigator": lambda: navigator.call_tool_mcp(
                        "call", {"address": "bench1/echo/echo", "args": {"text": "hi"}}
                    ),
                    "audit off": lambda: quiet.call_tool_mcp(
                        "call", {"address": "bench1/echo/echo", "args": {"text": "hi"}}
                    ),
                }
                result = await navigator.call_tool_mcp(
                    "call", {"address": "bench1/echo/echo", "args": {"text": "hi"}}
                )
                assert not result.is_error, result
                for _ in range(50):  # the second navigator's catalogue follows the registration
                    if not (await quiet.call_tool_mcp("call", dict(CALL))).is_error:
                        break
                    await asyncio.sleep(0.1)
                hops = {
                    "fastmcp proxy": psutil.Process(proxy.pid),
                    "navigator": psutil.Process(mesh.navigator.pid),  # type: ignore[union-attr]
                    "audit off": psutil.Process(unaudited.navigator.pid),  # type: ignore[union-attr]
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
                "audit off": float("nan"),
            }
        finally:
            unaudited.close()
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
        print(f"{name:<16}{p50:>9.2f}{p95:>9.2f}{p50 - base:>+10.2f}{rates[name]:>10.0f}")
    hop = statistics.median(samples["navigator"]) - base
    peer_hop = statistics.median(samples["fastmcp proxy"]) - base
    print(f"navigator hop / FastMCP proxy hop: {hop / peer_hop:.2f}x")
    print(
        f"CPU per call in the hop's process: navigator {cpu_ms['navigator']:.2f} ms, "
        f"FastMCP proxy {cpu_ms['fastmcp proxy']:.2f} ms "
        f"({cpu_ms['navigator'] / cpu_ms['fastmcp proxy']:.2f}x)"
    )
    audited, off = cpu_ms["navigator"], cpu_ms["audit off"]
    print(
        f"CPU per call with auditing on {audited:.3f} ms, off {off:.3f} ms: "
        f"{(audited / off - 1) * 100:+.1f}%"
    )
    print(f"load average (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=5.0)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.seconds))
