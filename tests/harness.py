"""Real processes for end-to-end tests: a navigator and node agents on 127.0.0.1, each started with
``python -m meshnav`` exactly as an operator would, and a real MCP client over HTTP."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from navigator.access.tokens import hash_token, mint_token
from registry import AccessStore, Registry, migrate

__all__ = ["MeshHarness", "free_port", "mcp_client", "page_server", "tool_result", "undeclared"]

STARTUP_S = 60.0
#: How long a process told to stop may take before it is killed.
STOP_S = 10.0


def free_port() -> int:
    """A port free now, below the ephemeral range: one the kernel hands out (port 0) is also
    one it hands the next outgoing connection of any test, which took a node's port between
    this choice and the node's bind."""
    return free_ports(1)


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive free ports, below the ephemeral range that every
    client connection draws from: no connection's port lands among them between this check
    and their use (the demo's nodes take the three after its own)."""
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    low = int(ephemeral.read_text().split()[0]) if ephemeral.exists() else 32_768
    top = min(low, 65_536) - count
    for base in random.sample(range(10_000, max(top, 10_001)), 200):
        with contextlib.ExitStack() as held:
            try:
                for port in range(base, base + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return base
    raise RuntimeError(f"no {count} consecutive free ports below {low}")


def stop(process: subprocess.Popen[bytes], *, kill: bool = False) -> None:
    """End ``process`` (SIGTERM, or SIGKILL with ``kill``) and reap it; one that has not ended
    in ``STOP_S`` (a loaded machine) is killed and reaped too, never left to warn at collection."""
    if process.poll() is None:
        process.kill() if kill else process.terminate()
    try:
        process.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_http(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"process exited early:\n{log.read_text()[-3000:]}")
        try:
            httpx.get(url, timeout=1.0)
            return
        except httpx.HTTPError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer in time:\n{log.read_text()[-3000:]}")


@dataclass
class NodeProcess:
    name: str
    port: int
    arguments: list[str]
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class MeshHarness:
    root: Path
    heartbeat_s: float = 1.0
    database_url: str = ""
    navigator_url: str = ""
    navigator: subprocess.Popen[bytes] | None = None
    nodes: dict[str, NodeProcess] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.database_url:
            self.database_url = f"sqlite:///{self.root / 'registry.db'}"
        migrate(self.database_url)
        self.registry = Registry(self.database_url)

    # --- the registry, directly (as the operator's first steps are) ------------------------

    def principal(
        self, name: str, scopes: list[str] | tuple[str, ...] = (), machine: str | None = None
    ) -> str:
        token = mint_token()
        with self.registry.transaction() as session:
            AccessStore(session).add_principal(
                name, scopes=scopes, token_hash=hash_token(token), machine=machine
            )
        return token

    def grant(
        self, principal: str, target: str, effect: str = "allow", scopes: tuple[str, ...] = ()
    ) -> int:
        with self.registry.transaction() as session:
            return AccessStore(session).grant(principal, target, effect=effect, scopes=scopes).id

    def revoke_grant(self, grant_id: int) -> None:
        with self.registry.transaction() as session:
            AccessStore(session).revoke_grant(grant_id)

    # --- processes -------------------------------------------------------------------------

    def _spawn(
        self, arguments: list[str], log_name: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        with (self.root / log_name).open("ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "meshnav", *arguments],
                stdout=log,
                stderr=subprocess.STDOUT,
                env={
                    **os.environ,
                    "MESHNAV_HEARTBEAT_S": str(self.heartbeat_s),
                    **self.env,
                    **(env or {}),
                },
            )

    def start_navigator(self, port: int | None = None) -> str:
        """A navigator on ``port``, or on a free one: another process of the suite may take a
        port between ``free_port`` and the bind, so a chosen port taken meanwhile is chosen
        again (a port asked for is not)."""
        for attempt in range(1 if port else 3):
            chosen = port or free_port()
            self.navigator = self._spawn(
                [
                    "navigator",
                    "serve",
                    "--listen",
                    f"127.0.0.1:{chosen}",
                    "--database",
                    self.database_url,
                ],
                "navigator.log",
            )
            self.navigator_url = f"http://127.0.0.1:{chosen}"
            try:
                _wait_http(
                    self.navigator_url + "/healthz", self.navigator, self.root / "navigator.log"
                )
            except RuntimeError as error:
                if port or attempt == 2 or "Address already in use" not in str(error):
                    raise
                continue
            break
        return self.navigator_url

    def stop_navigator(self) -> None:
        if self.navigator is not None:
            stop(self.navigator)
            self.navigator = None

    def start_node(
        self,
        name: str,
        modules: list[str],
        seats: list[str] = (),
        port: int | None = None,
        token: str | None = None,
        wait: bool = True,
        options: list[str] = (),  # type: ignore[assignment]
        env: dict[str, str] | None = None,
    ) -> NodeProcess:  # type: ignore[assignment]
        """``options``: further command-line options; ``env``: the node's environment beside
        the harness's."""
        if token is None:  # a seat placed ahead of the node makes its machine an operator's
            token = self.principal(
                f"node-{name}-{len(self.nodes)}-{time.monotonic_ns()}",
                ["mesh:node"],
                machine=name if seats else None,
            )
        port = port or free_port()
        arguments = [
            "node",
            "serve",
            "--name",
            name,
            "--navigator",
            self.navigator_url,
            "--listen",
            f"127.0.0.1:{port}",
        ]
        for module in modules:
            arguments += ["--module", module]
        for seat in seats:
            arguments += ["--seat", seat]
            self.place_seat(seat.partition("=")[0], name)
        arguments += options
        process = self._spawn(
            arguments, f"node-{name}.log", {**(env or {}), "MESHNAV_TOKEN": token}
        )
        node = NodeProcess(name=name, port=port, arguments=arguments, process=process)
        node.token = token  # type: ignore[attr-defined]
        self.nodes[name] = node
        if wait:
            self.wait_registered(name, process)
        return node

    def place_seat(self, seat: str, machine: str) -> None:
        """The operator's act a node's ``--seat`` needs first: the seat placed on the machine's
        role of the same name (ADR 0032)."""
        from registry import CatalogStore

        with self.registry.transaction() as session:
            CatalogStore(session).place_seat(seat, machine, seat)

    def wait_registered(
        self, name: str, process: subprocess.Popen[bytes] | None = None, since: float | None = None
    ) -> None:
        """Until the navigator has ``name`` answering with a heartbeat newer than ``since``."""
        from registry import CatalogStore

        deadline = time.monotonic() + STARTUP_S
        floor = since or 0.0
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise RuntimeError((self.root / f"node-{name}.log").read_text()[-3000:])
            with self.registry.transaction() as session:
                try:
                    machine = CatalogStore(session).machine(name)
                except Exception:
                    machine = None
            fresh = (
                machine
                and machine.last_heartbeat_at
                and machine.last_heartbeat_at.timestamp() >= floor
            )
            if fresh and any(a.machine == name for a in self._assignments()):
                time.sleep(0.3)  # the navigator's catalogue follows within one poll
                return
            time.sleep(0.05)
        raise RuntimeError(
            f"node {name} did not register:\n{(self.root / f'node-{name}.log').read_text()[-3000:]}"
        )

    def _assignments(self) -> list[Any]:
        from registry import CatalogStore

        with self.registry.transaction() as session:
            return CatalogStore(session).assignments()

    def kill_node(self, name: str) -> None:
        stop(self.nodes[name].process, kill=True)

    def restart_node(self, name: str) -> NodeProcess:
        node = self.nodes[name]
        since = time.time()
        process = self._spawn(node.arguments, f"node-{name}.log", {"MESHNAV_TOKEN": node.token})  # type: ignore[attr-defined]
        node.process = process
        self.wait_registered(name, process, since=since)
        return node

    def close(self) -> None:
        for node in self.nodes.values():  # all told at once, then each awaited
            if node.process.poll() is None:
                node.process.terminate()
        for node in self.nodes.values():
            stop(node.process)
        self.stop_navigator()
        self.registry.dispose()


def start_two_machines(mesh: MeshHarness, data: Path) -> None:
    """The fault tests' mesh: an ``agent`` granted every tool (``mesh.agent_token``), the
    navigator, ``db1`` serving ``data/db1`` (one empty SQLite database) and ``web1``."""
    import sqlite3

    (data / "db1").mkdir()
    sqlite3.connect(data / "db1" / "inventory.db").close()
    mesh.agent_token = mesh.principal("agent")  # type: ignore[attr-defined]
    mesh.grant("agent", "*/*/*")
    mesh.start_navigator()
    mesh.start_node("db1", ["node", f"sqlite:{data / 'db1'}"])
    mesh.start_node("web1", ["node"])


@asynccontextmanager
async def mcp_client(
    url: str, token: str | None, **kwargs: Any
) -> AsyncIterator[Client[StreamableHttpTransport]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with Client(
        StreamableHttpTransport(url.rstrip("/") + "/mcp", headers=headers), timeout=60, **kwargs
    ) as client:
        yield client


@asynccontextmanager
async def serving(
    app: Any, port: int | None = None, server_class: Any = None, **options: Any
) -> AsyncIterator[int]:
    """``app`` served by uvicorn in this task on a loopback port (yielded; a free one unless
    given), until the block ends; ``options`` are uvicorn's (TLS files, lifespan, …), and
    ``server_class`` makes the server from its config (uvicorn's own unless given)."""
    import uvicorn

    port = port or free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options)
    server = (server_class or uvicorn.Server)(config)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve)
        with anyio.fail_after(30):
            while not server.started:
                await anyio.sleep(0.02)
        try:
            yield port
        finally:
            server.should_exit = True


def undeclared(schema: dict[str, Any], value: Any, at: str = "") -> list[str]:
    """Where ``value`` holds a member its schema does not declare in ``properties`` (an open
    schema, with none, declares nothing and is left as it is: ``call``'s node answers)."""
    if isinstance(value, list):
        items = schema.get("items", {})
        return [p for i, v in enumerate(value) for p in undeclared(items, v, f"{at}/{i}")]
    if not isinstance(value, dict) or "properties" not in schema:
        return []
    declared = schema["properties"]
    return [f"{at}/{key}" for key in value if key not in declared] + [
        p
        for key, v in value.items()
        if key in declared
        for p in undeclared(declared[key], v, f"{at}/{key}")
    ]


def tool_result(result: Any) -> dict[str, Any]:
    """The structured content of a walker answer (error or not)."""
    structured = result.structured_content
    assert isinstance(structured, dict), result
    return structured


def start_backend(*arguments: str) -> tuple[subprocess.Popen[bytes], int]:
    """A plain FastMCP server (``benchmarks/_backends.py``: ``backend``, or ``proxy URL``) on a
    free port, answering before this returns."""
    kind, *rest = arguments or ("backend",)
    port = free_port()
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "_backends.py"
    process = subprocess.Popen([sys.executable, str(script), kind, str(port), *rest])
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the backend server exited")
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
            return process, port
        except httpx.HTTPError:
            time.sleep(0.05)
    stop(process, kill=True)
    raise RuntimeError("the backend server did not start")


async def loop_ticks_during(work: Callable[[], Awaitable[object]], every_s: float) -> int:
    """How often a task sleeping ``every_s`` woke while ``work`` ran: what the event loop could
    still do meanwhile (work on the loop itself leaves it at 0 or 1)."""
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(every_s)
            ticks += 1

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(tick)
        await work()
        tasks.cancel_scope.cancel()
    return ticks


@contextmanager
def page_server(page: bytes) -> Iterator[Callable[[int], str]]:
    """A web server that is no MCP server nor navigator, on a loopback port: every request is
    answered with ``page`` (HTML) and the status last given to the function yielded, which
    returns the server's URL; a redirect's ``Location`` leads elsewhere."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Page(BaseHTTPRequestHandler):
        status = 200

        def _answer(self) -> None:
            self.send_response(self.status)
            self.send_header("Location", "https://127.0.0.1/elsewhere")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        do_GET = do_POST = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:
            """No request log: the server's stderr is the test's, and says nothing of use."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def url(status: int) -> str:
        Page.status = status
        return f"http://127.0.0.1:{server.server_address[1]}"

    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
