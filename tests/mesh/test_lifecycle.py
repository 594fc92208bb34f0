"""Serving until stopped (``mesh.lifecycle``, ADR 0026): what ends the server, and what is raised;
the connections it holds (``mesh.connections``, ADR 0030)."""

from __future__ import annotations

import contextlib
import socket

import anyio
import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from mesh.connections import KEEP_ALIVE_S, ConnectionLimits
from mesh.lifecycle import Server, serve_until_stopped
from tests.harness import free_port, serving


def _server() -> Server:
    config = uvicorn.Config(Starlette(), host="127.0.0.1", port=free_port(), log_level="warning")
    return Server(config)


async def test_an_error_of_the_work_stops_the_server_and_is_raised_as_it_was() -> None:
    """The demo's "only [db1] registered" reached the command line inside an exception group,
    which it printed as a traceback instead of one line."""

    class Refused(Exception):
        """The work's own failure, as the demo's nodes not registering is."""

    async def work() -> None:
        raise Refused("only [db1] registered")

    server = _server()
    with anyio.fail_after(30), pytest.raises(Refused, match="registered"):
        await serve_until_stopped(server, None, work)
    assert server.should_exit


async def test_work_that_returns_stops_the_server() -> None:
    async def work() -> None:
        await anyio.sleep(0)

    server = _server()
    with anyio.fail_after(30):
        await serve_until_stopped(server, None, work)
    assert server.started and server.should_exit


def _serving(limits: ConnectionLimits) -> contextlib.AbstractAsyncContextManager[int]:
    """A Starlette app answering ``/`` behind ``Server`` with ``limits``, on a free port."""

    async def hello(request: Request) -> Response:
        return PlainTextResponse("hello")

    app = Starlette(routes=[Route("/", hello)])
    return serving(app, server_class=lambda config: Server(config, limits))


def _closed_by_peer(sock: socket.socket, within_s: float) -> bool:
    sock.settimeout(within_s)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


async def test_a_request_that_does_not_arrive_whole_in_time_loses_its_connection() -> None:
    """uvicorn waited for ever for the rest of a request's headers (slowloris), and for the
    first byte of a connection that sent none."""
    async with _serving(ConnectionLimits(max_connections=100, read_timeout_s=0.5)) as port:
        with (
            socket.create_connection(("127.0.0.1", port)) as slow,
            socket.create_connection(("127.0.0.1", port)) as idle,
        ):
            slow.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            dropped = await anyio.to_thread.run_sync(
                lambda: _closed_by_peer(slow, 5.0) and _closed_by_peer(idle, 5.0)
            )
    assert dropped


async def test_past_the_cap_the_oldest_unfinished_connection_makes_room() -> None:
    """Connections that never send a request cannot keep a new client out."""
    async with _serving(ConnectionLimits(max_connections=20, read_timeout_s=60)) as port:
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
        try:
            async with httpx.AsyncClient(timeout=5) as http:
                answer = await http.get(f"http://127.0.0.1:{port}/")
            oldest_dropped = await anyio.to_thread.run_sync(_closed_by_peer, held[0], 5.0)
        finally:
            for sock in held:
                sock.close()
    assert answer.text == "hello"
    assert oldest_dropped


async def test_an_idle_connection_outlives_the_clients_pool_expiry() -> None:
    """uvicorn closed an idle connection after 5 s, the very time httpx (and the MCP SDK's
    client, httpx2) keeps one in its pool: a request sent on it just then failed."""
    assert max(httpx.Limits().keepalive_expiry or 0, 5.0) * 10 < KEEP_ALIVE_S
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

    def answer(sock: socket.socket) -> bytes:
        read = b""
        while not read.endswith(b"hello"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            read += chunk
        return read

    def reuse_after_a_pause(port: int) -> tuple[bytes, bool, bytes]:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(request)
            first = answer(sock)
            still_open = not _closed_by_peer(sock, 6.0)
            sock.sendall(request)
            return first, still_open, answer(sock)

    async with _serving(ConnectionLimits(max_connections=100)) as port:
        first, still_open, second = await anyio.to_thread.run_sync(reuse_after_a_pause, port)
    assert first.startswith(b"HTTP/1.1 200") and still_open
    assert second.startswith(b"HTTP/1.1 200")
