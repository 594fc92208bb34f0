"""The mesh under load: N agents, each on its own MCP session, making M operations each — search,
describe, and read-only calls to two nodes' SQLite databases and to a plain MCP server registered by
URL — every answer checked against its request (a row of the machine asked, the text sent back).
Then the same agents call that plain server directly, the baseline, in the same run.

Prints per-operation p50/p95/p99, errors by code, lost answers (an exception, no answer) and
mismatched ones (another request's, another machine's), the navigator's CPU per operation, and its
RSS and open descriptors before and after. With ``--faults``, a node is stopped (SIGSTOP) after a
third of the run, for a third of it or three heartbeat intervals and 10 s, whichever is longer,
then resumed: once it is not answering its calls are expected to answer ``node_unavailable`` at
once, and every other operation as usual. With ``--hammer K``, the run is made twice: alone, then
beside K clients of another principal calling as fast as they can past a quota of one call a
minute — each of its calls refused ``rate_limited`` — and prints the agents' operations a second
in both, and how many refusals a second the navigator answered meanwhile (ADR 0048: a refusal
must cost far less than a call).

``--kill-navigator-at S`` kills the navigator (SIGKILL) S seconds into the run and starts it again
on its port; ``--restart-registry-at S`` runs the registry on a PostgreSQL of its own, stopped S
seconds into the run for ``--registry-down-s`` (5) and started again; ``--legacy`` speaks the
legacy (session) era. An agent whose connection failed opens a fresh client. *Lost* is a call
that got neither an answer nor an error: the calls in flight at the SIGKILL, and those sent while
the navigator was down, are counted apart. The audit trail is then matched against what the
clients received: a ``call`` event for each call answered, and the refusals' counts for the error
responses, except the crash window — the calls answered in the last ``MESHNAV_AUDIT_FLUSH_S``
before the SIGKILL, whose events a killed navigator may lose (ADR 0056).

Usage: python benchmarks/load.py [--agents N] [--operations M] [--faults] [--hammer K] [--legacy]
       [--kill-navigator-at S] [--restart-registry-at S [--registry-down-s S]]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StreamableHttpTransport  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from sqlalchemy import text  # noqa: E402

from benchmarks.call_overhead import _percentile, register_backend  # noqa: E402
from registry import AccessStore, Quota  # noqa: E402
from tests.harness import MeshHarness, start_backend, stop  # noqa: E402
from tests.postgres_server import start_postgres  # noqa: E402

MACHINES = ("db1", "db2")
#: The MCP client's code for a connection that closed under its request: no answer.
CONNECTION_CLOSED = -32000
#: Seconds between the audit writer's batches in these runs (the navigator's default).
FLUSH_S = 1.0
ROWS = 100
#: What an operation returns: None when the answer is the one asked for, else why it is not.
Check = Callable[[Any], str | None]
Operation = tuple[str, str, dict[str, Any], Check]


def _seed(root: Path) -> None:
    for machine in MACHINES:
        (root / machine).mkdir(parents=True)
        with sqlite3.connect(root / machine / "inventory.db") as connection:
            connection.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT)")
            connection.executemany(
                "INSERT INTO products (id, name) VALUES (?, ?)",
                [(n, f"{machine}-product-{n}") for n in range(1, ROWS + 1)],
            )


def _structured(result: Any) -> dict[str, Any]:
    content = result.structured_content
    return content if isinstance(content, dict) else {}


def _error_code(result: Any) -> str | None:
    """The navigator's error code, with ``since`` when it refused a machine it holds silent."""
    if not result.is_error:
        return None
    body = _structured(result)
    code = str(body.get("error", "node error"))
    return f"{code} (silent since {body['since']})" if "since" in body else code


def _operation(agent: int, n: int) -> Operation:
    """The agent's n-th operation: the same mix for every agent, each request its own."""
    kind = n % 4
    if kind == 0:
        return (
            "search",
            "search",
            {"query": "list tables of a database", "limit": 4},
            lambda s: None if s.get("results") else "no results",
        )
    if kind == 1:
        machine = MACHINES[(agent + n) % 2]
        address = f"{machine}/sqlite/query"
        return (
            "describe",
            "describe",
            {"address": address},
            lambda s: None if s.get("address") == address else "another tool's contract",
        )
    if kind == 2:
        machine = MACHINES[(agent + n) % 2]
        row = (agent * 7 + n) % ROWS + 1
        want = f"{machine}-product-{row}"
        return (
            "call sqlite",
            "call",
            {
                "address": f"{machine}/sqlite/query",
                "args": {
                    "database": "inventory",
                    "sql": "SELECT name FROM products WHERE id = ?",
                    "params": [row],
                },
            },
            lambda s: None if s.get("rows") == [[want]] else "another row or machine",
        )
    text = f"agent {agent} operation {n}"
    return (
        "call echo",
        "call",
        {"address": "bench1/echo/echo", "args": {"text": text}},
        lambda s: None if s == {"text": text} else "another request's answer",
    )


class Faults:
    """When the navigator was killed, and when it answered again (``time.perf_counter``)."""

    killed_at: float | None = None
    up_at: float | None = None

    def classify(self, started: float, ended: float) -> str | None:
        """Why a call got no answer, when the kill explains it; None: it is lost."""
        killed = self.killed_at
        if killed is None:
            return None
        if started <= killed <= ended:
            return "in flight at the SIGKILL"
        if killed <= started and (self.up_at is None or started <= self.up_at):
            return "sent while the navigator was down"
        return None


class Tally:
    def __init__(self, faults: Faults | None = None) -> None:
        self.faults = faults or Faults()
        self.samples: dict[str, list[float]] = collections.defaultdict(list)
        self.errors: collections.Counter[tuple[str, str]] = collections.Counter()
        self.lost: collections.Counter[str] = collections.Counter()
        self.apart: collections.Counter[str] = collections.Counter()
        self.mismatched: collections.Counter[str] = collections.Counter()
        #: When each call answered by the navigator (a result, ok or not) reached its client.
        self.calls_answered: list[float] = []

    async def run(self, name: str, call: Callable[[], Awaitable[Any]], check: Check) -> bool:
        """One operation; False when its connection failed (the agent opens a fresh client)."""
        started = time.perf_counter()
        try:
            result = await call()
        except MCPError as error:
            if error.error.code != CONNECTION_CLOSED:  # an error response reached the client
                self.errors[(name, f"error response: {error.error.message}")] += 1
                return True
            self._unanswered(name, error, started)
            return False
        except Exception as error:
            self._unanswered(name, error, started)
            return False
        if name.startswith("call"):
            self.calls_answered.append(time.perf_counter())
        self.samples[name].append((time.perf_counter() - started) * 1000)
        code = _error_code(result)
        if code is not None:
            self.errors[(name, code)] += 1
        elif (why := check(_structured(result))) is not None:
            self.mismatched[f"{name}: {why}"] += 1
        return True

    def _unanswered(self, name: str, error: Exception, started: float) -> None:
        why = self.faults.classify(started, time.perf_counter())
        if why is not None:
            self.apart[why] += 1
        else:
            self.lost[f"{name}: {type(error).__name__}"] += 1


async def _agents(
    url: str, token: str, agents: int, operations: int, tally: Tally, *, legacy: bool = False
) -> tuple[float, int]:
    headers = {"Authorization": f"Bearer {token}"}
    mode: Any = "legacy" if legacy else "auto"

    async def agent(number: int) -> None:
        done = 0
        opened_at = time.perf_counter()

        async def session() -> None:
            nonlocal done, opened_at
            transport = StreamableHttpTransport(url + "/mcp", headers=headers)
            async with Client(transport, timeout=120, mode=mode) as client:
                opened_at = time.perf_counter()
                while done < operations:
                    name, tool, arguments, check = _operation(number, done)
                    done += 1
                    call = lambda t=tool, a=arguments: client.call_tool_mcp(t, a)  # noqa: E731
                    if not await tally.run(name, call, check):
                        return  # its connection failed: a fresh client

        while done < operations:
            if time.perf_counter() - opened_at > 120:
                raise SystemExit(f"agent {number} could not open a client for 120 s")
            try:  # its own task: a client that failed may cancel the task it runs in
                await asyncio.ensure_future(session())
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise
            except Exception:  # leaving a failed client raises, as opening one can
                pass  # not a stub: the loop opens a fresh client
            if done < operations:
                await asyncio.sleep(0.2)

    started = time.perf_counter()
    await asyncio.gather(*(agent(number) for number in range(agents)))
    return time.perf_counter() - started, agents * operations


async def _direct(backend_url: str, agents: int, operations: int, tally: Tally) -> float:
    async def agent(number: int) -> None:
        async with Client(StreamableHttpTransport(backend_url), timeout=120) as client:
            for n in range(operations // 4):  # as many as the navigator run's echo calls
                text = f"agent {number} direct {n}"
                await tally.run(
                    "direct echo",
                    lambda t=text: client.call_tool_mcp("echo", {"text": t}),
                    lambda s, t=text: None if s == {"text": t} else "another request's answer",
                )

    started = time.perf_counter()
    await asyncio.gather(*(agent(number) for number in range(agents)))
    return time.perf_counter() - started


HAMMER_CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "call", "arguments": {"address": "bench1/echo/echo", "args": {}}},
}


async def _hammer(url: str, token: str, clients: int, seconds: float) -> None:
    """``clients`` plain HTTP clients of one legacy-era session each, calling for ``seconds``,
    each call refused: prints the refusals a second. Run in a process of its own
    (``--hammer-at``), so that its clients' own work is not the agents'."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    refused = 0
    opening = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "hammer", "version": "1"},
        },
    }

    async def client(http: httpx.AsyncClient, deadline: float) -> None:
        nonlocal refused
        opened = await http.post("/mcp", json=opening)
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await http.post("/mcp", json=ready, headers=session)
        while time.perf_counter() < deadline:
            answer = await http.post("/mcp", json=HAMMER_CALL, headers=session)
            refused += "rate_limited" in answer.text

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
        started = time.perf_counter()
        await asyncio.gather(*(client(http, started + seconds) for _ in range(clients)))
    print(f"hammer: {refused} calls refused in {seconds:.0f} s ({refused / seconds:.0f}/s)")


async def _beside_hammer(
    url: str, token: str, hammer: str, clients: int, agents: int, operations: int
) -> tuple[float, float]:
    """The agents' operations a second alone, then beside the hammer (another process)."""
    alone_s, done = await _agents(url, token, agents, operations, Tally())
    hammering = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--hammer-at",
        url,
        "--hammer",
        str(clients),
        "--hammer-for",
        f"{alone_s * 2 + 5:.0f}",
        env={**os.environ, "MESHNAV_HAMMER_TOKEN": hammer},
    )
    await asyncio.sleep(2)  # its sessions opened, its calls refused
    beside_s, _ = await _agents(url, token, agents, operations, Tally())
    await hammering.wait()
    return done / alone_s, done / beside_s


def _usage(process: psutil.Process) -> tuple[float, int, int]:
    times = process.cpu_times()
    return times.user + times.system, process.memory_info().rss, process.num_fds()


async def _stop_for_a_while(process: psutil.Process, after_s: float, for_s: float) -> None:
    await asyncio.sleep(after_s)
    os.kill(process.pid, signal.SIGSTOP)
    await asyncio.sleep(for_s)
    os.kill(process.pid, signal.SIGCONT)


async def _kill_navigator(mesh: MeshHarness, at_s: float, faults: Faults) -> None:
    """SIGKILL the navigator ``at_s`` into the run, then start it again on its port."""
    await asyncio.sleep(at_s)
    assert mesh.navigator is not None
    port = int(mesh.navigator_url.rsplit(":", 1)[1])
    faults.killed_at = time.perf_counter()
    stop(mesh.navigator, kill=True)
    await asyncio.to_thread(mesh.start_navigator, port)
    faults.up_at = time.perf_counter()


async def _restart_registry(server: Any, at_s: float, down_s: float) -> None:
    await asyncio.sleep(at_s)
    await asyncio.to_thread(server.pause)
    await asyncio.sleep(down_s)
    await asyncio.to_thread(server.resume)


def _audited(mesh: MeshHarness) -> dict[tuple[str, str], int]:
    """Events by (action, route or outcome): ``call`` events by outcome, refusals by route (the
    agents' are ``/mcp``'s; the nodes' heartbeats are refused too), an aggregated event counted
    as what it counts."""
    with mesh.registry.read_transaction() as session:
        rows = session.execute(
            text("SELECT action, outcome, target, COALESCE(count, 1) FROM audit_events")
        ).all()
    found: collections.Counter[tuple[str, str]] = collections.Counter()
    for action, outcome, target, n in rows:
        refusal = action in ("request", "sign-in")
        found[(str(action), str(target).split(" from ")[0] if refusal else str(outcome))] += n
    return dict(found)


async def main(options: argparse.Namespace) -> None:
    agents, operations, faults = options.agents, options.operations, options.faults
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as cleanup:
        root = Path(tmp)
        _seed(root)
        database_url = ""
        postgres = None
        if options.restart_registry_at is not None:
            postgres = start_postgres(root / "pg")
            cleanup.callback(postgres.stop)
            database_url = postgres.create_database("load")
        backend, backend_port = start_backend()
        backend_url = f"http://127.0.0.1:{backend_port}/mcp"
        mesh = MeshHarness(root / "run", heartbeat_s=5.0, database_url=database_url)
        mesh.env["MESHNAV_AUDIT_FLUSH_S"] = str(FLUSH_S)
        kill = Faults()
        try:
            token = mesh.principal("bench")
            admin = mesh.principal("bench-admin", ["mesh:admin"])
            mesh.grant("bench", "*/*/*")
            hammer = mesh.principal("hammer")
            mesh.grant("hammer", "*/*/*")
            with mesh.registry.transaction() as session:
                AccessStore(session).set_quota("hammer", Quota(rate_per_minute=1))
            mesh.start_navigator()
            for machine in MACHINES:
                mesh.start_node(machine, ["node", f"sqlite:{root / machine}"])
            register_backend(mesh.navigator_url, admin, backend_url)
            navigator = psutil.Process(mesh.navigator.pid)  # type: ignore[union-attr]
            warm = Tally()
            await _agents(mesh.navigator_url, token, 4, 8, warm)  # every path opened once
            if warm.lost or warm.errors or warm.mismatched:
                raise SystemExit(f"the warm-up failed: {vars(warm)}")
            if options.hammer:
                alone, beside = await _beside_hammer(
                    mesh.navigator_url, token, hammer, options.hammer, agents, operations
                )
                print(
                    f"agents: {alone:.0f} operations/s alone, {beside:.0f}/s beside the hammer "
                    f"({beside / alone:.2f}x)"
                )
                return
            cpu_before, rss_before, fds_before = _usage(navigator)
            tally = Tally(kill)
            run = _agents(
                mesh.navigator_url, token, agents, operations, tally, legacy=options.legacy
            )
            beside: list[Awaitable[None]] = []
            if faults:
                node = psutil.Process(mesh.nodes["db2"].process.pid)
                estimate = agents * operations / 100  # seconds, roughly, on a small machine
                # past three heartbeat intervals, so that it is held not answering for a while
                stopped_s = max(estimate / 3, 3 * mesh.heartbeat_s + 10)
                beside.append(_stop_for_a_while(node, estimate / 3, stopped_s))
            if options.kill_navigator_at is not None:
                beside.append(_kill_navigator(mesh, options.kill_navigator_at, kill))
            if postgres is not None:
                beside.append(
                    _restart_registry(
                        postgres, options.restart_registry_at, options.registry_down_s
                    )
                )
            *_, (seconds, done) = await asyncio.gather(*beside, run)
            if kill.killed_at is None:
                cpu_after, rss_after, fds_after = _usage(navigator)
            direct = Tally()
            direct_seconds = await _direct(backend_url, agents, operations, direct)
        finally:
            mesh.close()  # SIGTERM: the navigator writes what it holds
            stop(backend)
        audited = _audited(mesh)
        mesh.registry.dispose()

    print(
        f"load: {agents} agents x {operations} operations ({done} in {seconds:.1f} s, "
        f"{done / seconds:.0f}/s){' with db2 stopped for a while' if faults else ''}"
    )
    print(f"{'operation':<14}{'count':>7}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    for name, values in [*sorted(tally.samples.items()), *direct.samples.items()]:
        print(
            f"{name:<14}{len(values):>7}{statistics.median(values):>9.1f}"
            f"{_percentile(values, 0.95):>9.1f}{_percentile(values, 0.99):>9.1f}"
        )
    echo, base = tally.samples.get("call echo", []), direct.samples.get("direct echo", [])
    if echo and base:
        print(
            f"call echo through the navigator / direct (p50): "
            f"{statistics.median(echo) / statistics.median(base):.2f}x "
            f"(direct run {direct_seconds:.1f} s)"
        )
    errors = ", ".join(f"{name} {code}: {n}" for (name, code), n in sorted(tally.errors.items()))
    print(f"errors by code: {errors or 'none'}")
    lost = sum(tally.lost.values()) + sum(direct.lost.values())
    mismatched = sum(tally.mismatched.values()) + sum(direct.mismatched.values())
    print(f"lost answers: {lost} {dict(tally.lost | direct.lost) or ''}")
    print(f"mismatched answers: {mismatched} {dict(tally.mismatched | direct.mismatched) or ''}")
    apart = ", ".join(f"{why}: {n}" for why, n in sorted(tally.apart.items()))
    print(f"without an answer, counted apart: {apart or 'none'}")
    _print_audit(audited, [*warm.calls_answered, *tally.calls_answered], tally, kill)
    if kill.killed_at is None:
        print(f"navigator CPU per operation: {(cpu_after - cpu_before) * 1000 / done:.2f} ms")
        print(
            f"navigator RSS {rss_before / 2**20:.0f} MiB before, "
            f"{rss_after / 2**20:.0f} MiB after; "
            f"open descriptors {fds_before} before, {fds_after} after"
        )
    print(
        f"machine load (1 min): {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"
    )


def _print_audit(
    audited: dict[tuple[str, str], int], answered: list[float], tally: Tally, kill: Faults
) -> None:
    """The audit trail against what the clients received."""
    calls = sum(n for (action, _), n in audited.items() if action == "call")
    window = ""
    if kill.killed_at is not None:
        crash = sum(1 for at in answered if kill.killed_at - FLUSH_S <= at <= kill.killed_at)
        window = (
            f"; answered in the last {FLUSH_S:g} s before the SIGKILL, the crash window: {crash}"
        )
    print(
        f"audit: {calls} call events for {len(answered)} calls answered"
        f" (missing {len(answered) - calls}{window})"
    )
    refused = audited.get(("request", "/mcp"), 0)
    responses = sum(n for (_, code), n in tally.errors.items() if code.startswith("error response"))
    print(
        f"audit: {refused} /mcp requests refused counted for {responses} error responses received"
    )


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--agents", type=int, default=50, help="concurrent agents (N)")
    arguments.add_argument("--operations", type=int, default=200, help="operations each (M)")
    arguments.add_argument("--faults", action="store_true", help="stop db2 for a third")
    arguments.add_argument("--legacy", action="store_true", help="the legacy (session) era")
    arguments.add_argument(
        "--kill-navigator-at", type=float, metavar="S", help="SIGKILL the navigator, restart it"
    )
    arguments.add_argument(
        "--restart-registry-at", type=float, metavar="S", help="stop PostgreSQL, start it again"
    )
    arguments.add_argument("--registry-down-s", type=float, default=5.0, metavar="S")
    arguments.add_argument(
        "--hammer", type=int, default=0, help="clients of a principal refused, beside the run"
    )
    arguments.add_argument("--hammer-at", help=argparse.SUPPRESS)  # the hammer's own process
    arguments.add_argument("--hammer-for", type=float, default=30.0, help=argparse.SUPPRESS)
    given = arguments.parse_args()
    if given.hammer_at:
        token = os.environ["MESHNAV_HAMMER_TOKEN"]
        asyncio.run(_hammer(given.hammer_at, token, given.hammer, given.hammer_for))
    else:
        asyncio.run(main(given))
