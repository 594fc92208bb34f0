"""A server's life, for the node, the navigator and the demo alike: serving until SIGINT or
SIGTERM, and what those signals end, in which order.

uvicorn handles both signals itself while it serves: it stops listening, waits — with no limit
unless it is given one — for every open connection to finish, and only then raises the signal
again. A navigator holds a long-lived MCP session with each node, and an agent one with the
navigator, so that wait did not end: a node sent SIGTERM went on heartbeating (the navigator
showed it answering while it listened no more) until it was killed. Here the signal is ours:

1. the work beside the server is cancelled at once (a node stops heartbeating, the demo stops
   its nodes);
2. the server shuts down gracefully — calls in flight may finish — for at most ``grace_s``, then
   its remaining connections are cancelled and its lifespan ends (a node's ``stdio`` modules end
   their subprocesses);
3. a second signal cuts the wait short.

The process then returns normally: stopping is not an error.

A server given a ``drain`` (the navigator, ADR 0030) goes on listening and answering while it
drains, before step 2: the drain decides what it still answers and when it is done, within the
same grace. Every server holds its connections within ``mesh.connections``' limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, ClassVar

import anyio
import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from mesh.connections import ConnectionBook, ConnectionLimits, bound_server_logs, connection_cap
from mesh.errors import ServeFailed

__all__ = ["GRACE_S", "Drain", "Server", "serve_until_stopped"]

#: How long calls in flight may take to finish once a server is told to stop.
GRACE_S = 10.0

#: What a server does, still listening, once told to stop: it returns when it is done or when
#: the monotonic deadline it is given has passed.
Drain = Callable[[float], Awaitable[None]]


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, its connections kept in a ``ConnectionBook``."""

    book: ClassVar[ConnectionBook]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.book.opened(self)

    def data_received(self, data: bytes) -> None:
        if self.conn.their_state is h11.IDLE:
            self.book.reading(self)
        super().data_received(data)
        self._judge()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
            self.book.answered(self)
        else:
            self._judge()

    def connection_lost(self, exc: Exception | None) -> None:
        self.book.closed(self)
        super().connection_lost(exc)

    def _judge(self) -> None:
        if self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self.book.received(self)

    def read_timed_out(self) -> None:
        self.book.closed(self)
        self.drop()

    def drop(self) -> None:
        """Gone at once: its descriptor is free before the next connection is taken."""
        self._unset_keepalive_if_required()
        if self.transport is not None:
            self.transport.abort()


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """A protocol class for one server, with its own book of connections."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"book": ConnectionBook(limits)})


class Server(uvicorn.Server):
    """uvicorn's server, leaving the signals to :func:`serve_until_stopped`, holding its
    connections within ``limits`` (the defaults of ``mesh.connections`` unless given), and
    draining with ``drain`` before it stops listening."""

    def __init__(
        self,
        config: uvicorn.Config,
        limits: ConnectionLimits | None = None,
        *,
        drain: Drain | None = None,
    ) -> None:
        if config.timeout_graceful_shutdown is None:
            config.timeout_graceful_shutdown = int(GRACE_S)
        self.limits = limits or ConnectionLimits(connection_cap())
        config.http = guarded_protocol(self.limits)
        config.ws = "none"  # nothing of meshnav speaks WebSocket; an upgrade is plain HTTP here
        config.timeout_keep_alive = self.limits.keep_alive_s  # type: ignore[assignment]
        bound_server_logs()
        self.drain = drain
        super().__init__(config)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        grace = float(self.config.timeout_graceful_shutdown or 0)
        if self.drain is not None and not self.force_exit:
            began = time.monotonic()
            await self._drained(self.drain, began + grace)
            left = grace - (time.monotonic() - began)
            self.config.timeout_graceful_shutdown = max(1, round(left))
        await super().shutdown(sockets)

    async def _drained(self, drain: Drain, deadline: float) -> None:
        """``drain`` until it is done, the deadline passes, or a second signal comes."""
        with anyio.move_on_after(deadline - time.monotonic()):
            async with anyio.create_task_group() as tasks:

                async def cut_short() -> None:
                    while not self.force_exit:  # noqa: ASYNC110 - uvicorn offers a flag
                        await anyio.sleep(0.05)
                    tasks.cancel_scope.cancel()

                tasks.start_soon(cut_short)
                await drain(deadline)
                tasks.cancel_scope.cancel()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_until_stopped(
    server: Server,
    sockets: list[socket.socket] | None,
    work: Callable[[], Awaitable[Any]] | None = None,
) -> None:
    """Serve, with ``work`` beside the server once it has started, until SIGINT or SIGTERM, until
    ``work`` returns, or until the server stops on its own. An error ``work`` raises ends the
    server too (gracefully, as a signal does), and is raised as it was raised, not inside an
    exception group; a server that stops before it started (its lifespan failed) is
    ``ServeFailed``."""
    signalled = False
    failure: Exception | None = None
    async with anyio.create_task_group() as tasks:
        working = anyio.CancelScope()

        async def stop_on_signals() -> None:
            nonlocal signalled
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    signalled = True
                    server.force_exit = server.should_exit  # the second signal: no more waiting
                    server.should_exit = True
                    working.cancel()

        async def serve() -> None:
            try:
                await server.serve(sockets)
            except SystemExit:
                return  # uvicorn's word for a lifespan that failed: ServeFailed, below
            finally:  # the server is gone: the work has nothing to stand beside
                working.cancel()
                tasks.cancel_scope.cancel()

        tasks.start_soon(stop_on_signals)
        tasks.start_soon(serve)
        try:
            with working:
                while not server.started:  # noqa: ASYNC110 - uvicorn offers a flag, not an event
                    await anyio.sleep(0.05)
                if work is not None:
                    await work()
                else:
                    await anyio.sleep_forever()
        except Exception as error:  # raised below, once the server has stopped
            failure = error
        finally:
            server.should_exit = True
    if failure is not None:
        raise failure
    if not server.started and not signalled:
        raise ServeFailed()
