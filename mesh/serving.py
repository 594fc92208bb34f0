"""Serving until stopped: what SIGINT and SIGTERM end, and in which order, for the node, the
navigator and the demo alike.

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
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import uvicorn

from mesh.errors import ServeFailed

__all__ = ["GRACE_S", "Server", "serve_until_stopped"]

#: How long calls in flight may take to finish once a server is told to stop.
GRACE_S = 10.0


class Server(uvicorn.Server):
    """uvicorn's server, leaving the signals to :func:`serve_until_stopped`."""

    def __init__(self, config: uvicorn.Config) -> None:
        if config.timeout_graceful_shutdown is None:
            config.timeout_graceful_shutdown = int(GRACE_S)
        super().__init__(config)

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
