"""The connections a server holds, bounded (ADR 0030): the navigator's, a node's and the demo's.

uvicorn on its own gave a connection all the time it wanted to send its request, and took every
connection the kernel handed it: 2,000 connections that never finished their headers were all
still held after 40 s, and 20,000 idle ones used up the process's descriptors, after which
``/healthz`` and every client's call timed out. Here:

- a request is read whole — headers and body — within ``read_timeout_s`` of its first byte (of
  the connection's opening, for its first request), or the connection is dropped;
- the server holds at most ``max_connections``, kept below the process's descriptor limit with
  room for what else it opens (its registry, its pool to nodes, its files). A connection past the
  cap makes room: the oldest connection still sending a request goes first, then the one idle
  longest between requests; a connection whose request is being answered is never dropped, and
  a newcomer is dropped only when every connection held is being answered;
- idle connections are kept ``keep_alive_s`` between requests, longer than any client of meshnav
  keeps an idle connection in its pool (``KEEP_ALIVE_S``): the client gives a connection up
  before the server closes it, never just as it is reused;
- what the event loop and uvicorn log about connections (an accept refused for want of
  descriptors, a malformed request) is logged at a bounded rate (``BoundedLog``).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "KEEP_ALIVE_S",
    "MAX_CONNECTIONS",
    "READ_TIMEOUT_S",
    "BoundedLog",
    "ConnectionBook",
    "ConnectionLimits",
    "Held",
    "bound_server_logs",
    "connection_cap",
]

#: How long a request may take to arrive whole, headers and body, from its first byte.
READ_TIMEOUT_S = 10.0
#: How long a server keeps an idle connection between requests: well past the 5 s for which
#: httpx (the node agent, the CLI) and the MCP SDK's client (the navigator's pool to nodes, an
#: agent) keep one in their pools.
KEEP_ALIVE_S = 75.0
#: The most connections a server holds unless set otherwise (and its descriptors allow).
MAX_CONNECTIONS = 16_384
#: Descriptors kept for what a server opens besides connections: a quarter of its limit, at least
#: this many.
RESERVED_DESCRIPTORS = 256


def connection_cap(configured: int | None = None) -> int:
    """The connections a server may hold: ``configured`` (or ``MAX_CONNECTIONS``), and never more
    than the descriptor limit leaves once a quarter of it (at least ``RESERVED_DESCRIPTORS``) is
    kept for the rest; at least 1."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = configured or MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return wanted
    room = soft - max(RESERVED_DESCRIPTORS, soft // 4)
    return max(1, min(wanted, room))


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int
    read_timeout_s: float = READ_TIMEOUT_S
    keep_alive_s: float = KEEP_ALIVE_S


class Held(Protocol):
    """A connection as the book sees it (``mesh.lifecycle``'s protocol)."""

    loop: asyncio.AbstractEventLoop

    def read_timed_out(self) -> None: ...

    def drop(self) -> None: ...


class ConnectionBook:
    """The connections of one server, by what each is doing: sending a request (oldest first,
    each with its read deadline), idle between requests (longest idle first), or being answered
    (all the others)."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._open: set[Held] = set()
        self._reading: dict[Held, asyncio.TimerHandle] = {}
        self._idle: dict[Held, None] = {}

    def __len__(self) -> int:
        return len(self._open)

    def opened(self, connection: Held) -> None:
        self._open.add(connection)
        self.reading(connection)
        if len(self._open) > self.limits.max_connections:
            self._make_room(connection)

    def reading(self, connection: Held) -> None:
        """A request begins on ``connection``: it has ``read_timeout_s`` to arrive whole."""
        if connection not in self._open or connection in self._reading:
            return
        self._idle.pop(connection, None)
        timer = connection.loop.call_later(self.limits.read_timeout_s, connection.read_timed_out)
        self._reading[connection] = timer

    def received(self, connection: Held) -> None:
        """The request arrived whole: it is being answered."""
        timer = self._reading.pop(connection, None)
        if timer is not None:
            timer.cancel()

    def answered(self, connection: Held) -> None:
        """The answer is sent and no next request has begun: idle (uvicorn's keep-alive)."""
        if connection in self._open:
            self.received(connection)
            self._idle[connection] = None

    def closed(self, connection: Held) -> None:
        self.received(connection)
        self._idle.pop(connection, None)
        self._open.discard(connection)

    def _make_room(self, newcomer: Held) -> None:
        for held in (self._reading, self._idle):
            victim = next((c for c in held if c is not newcomer), None)
            if victim is not None:
                self.closed(victim)
                victim.drop()
                return
        self.closed(newcomer)
        newcomer.drop()


class BoundedLog(logging.Filter):
    """At most ``burst`` records of one message per ``window_s``; the first record of the next
    window says how many were left out. A flood of accept errors logged ~10,000 tracebacks a
    second (127 MB in 40 s)."""

    def __init__(self, burst: int = 5, window_s: float = 10.0) -> None:
        super().__init__()
        self.burst = burst
        self.window_s = window_s
        self._seen: dict[Any, tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)  # asyncio's carries the socket in later lines: its first names it
        key = (record.name, record.levelno, message.split("\n", 1)[0][:200])
        now = time.monotonic()
        began, count, left_out = self._seen.get(key, (now, 0, 0))
        if now - began >= self.window_s:
            began, count = now, 0
        count += 1
        if count > self.burst:
            self._seen[key] = (began, count, left_out + 1)
            return False
        self._seen[key] = (began, count, 0)
        if left_out:
            record.msg = f"{message} (and {left_out} more like it, not logged)"
        if len(self._seen) > 1024:  # messages are templates: a few; never let it grow
            self._seen.clear()
        return True


#: The loggers that speak of connections: asyncio's (accept errors) and uvicorn's.
SERVER_LOGGERS = ("asyncio", "uvicorn.error")


def bound_server_logs() -> None:
    for name in SERVER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, BoundedLog) for f in logger.filters):
            logger.addFilter(BoundedLog())
