"""The call path to nodes: one long-lived MCP client per endpoint, explicit deadlines and limits.

A client is opened on first use and kept. It is dropped — and opened afresh on the next call — when
its node registers again or its connection fails; when the node never read the request — the
connection could not be opened, or a server of the legacy era answered 404 for the session the
client named, having forgotten it in a restart (MCP: start a new session) — the call is sent once
on a fresh client; when the request went on a pooled connection the node closed as it idled, it
is sent once more on the same client, the pool's next connection (ADR 0031). The pool lets an
idle connection go after ``LIMITS.node_keepalive_s``, before the node's own keep-alive does. A
call the node may have seen is never sent twice. Nodes receive the
navigator's call token in the request's ``_meta``; the caller's own headers never reach them, nor
does anything else of the caller's request ``_meta``.

The client negotiates the protocol with the node (``server/discover``, or ``initialize`` for a
server of the legacy era) and keeps the HTTP connection pool; what one call sends on it and how
its answer is read is ``navigator.nodes.relay``'s.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio
import httpcore2
import httpx2
from mcp_types import CallToolResult

from navigator.errors import NodeAnswerTooLarge, NodeTimeout, NodeUnavailable
from navigator.limits import LIMITS
from navigator.nodes import sdk
from navigator.nodes.bounded import AnswerTooLarge, bounded_client
from navigator.nodes.destinations import Destinations
from navigator.nodes.identity import InstanceProbe
from navigator.nodes.probes import Probes
from navigator.nodes.relay import (
    READ_LIMIT,
    NoAnswer,
    NodeAnswer,
    ProgressSink,
    as_ours,
    call_meta,
    call_tool,
)

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

__all__ = ["NodeAnswer", "NodeConnections", "ProgressSink", "import_client"]

logger = logging.getLogger("meshnav.navigator.nodes")

_CONNECT_FAILURES: tuple[type[BaseException], ...] = (httpx2.ConnectError, httpx2.ConnectTimeout)

#: A pool's idle connections, and one more: how many times a request that went on a connection
#: the node had closed as it idled is sent again — the node read none of those; a fresh one is
#: opened once the pool's idle ones are spent.
_KEPT_IDLE = 16
_STALE_MOST = _KEPT_IDLE + 1


#: The header of MCP's streamable HTTP that names a session (legacy era).
_SESSION_HEADER = "mcp-session-id"


class _Sending:
    """What became of one call's requests on a held session: whether one of them was answered
    404 for its session id (``_session_gone``), or went on a connection the node had closed
    while it idled in the pool (``_trace_reuse``)."""

    def __init__(self) -> None:
        self.session_gone = False
        self.closed_idle = False

    @property
    def unread(self) -> bool:
        """Whether the node cannot have read what failed, so that it may be sent again."""
        return self.session_gone or self.closed_idle

    def reset(self) -> None:
        self.session_gone = self.closed_idle = False


#: The call whose requests a held session is sending. The SDK sends each request in the context
#: of the task that asked for it, so the pool's response hook sees the call it answers.
_SENDING: ContextVar[_Sending | None] = ContextVar("meshnav_sending", default=None)


@contextmanager
def _watched() -> Iterator[_Sending]:
    """A call's ``_Sending``, seen by the responses to the requests sent for it."""
    sending = _Sending()
    watched = _SENDING.set(sending)
    try:
        yield sending
    finally:
        _SENDING.reset(watched)


async def _session_gone(response: httpx2.Response) -> None:
    """A response hook of every node client's pool: a 404 to a request naming a session means the
    server no longer has the session and did not read the request (MCP, streamable HTTP)."""
    if response.status_code == 404 and _SESSION_HEADER in response.request.headers:
        sending = _SENDING.get()
        if sending is not None:
            sending.session_gone = True


async def _trace_reuse(request: httpx2.Request) -> None:
    """A request hook of every node client's pool: a request sent on a connection taken from the
    pool (none opened for it) that the node closed — the end of the stream, or a reset, before a
    byte of an answer — went on a connection the node had closed for idling as the request left
    (its keep-alive ran out just then): the node did not read it. A connection this navigator
    closed itself (the client closed under the call) is no such thing."""
    sending = _SENDING.get()
    if sending is None:
        return
    opened = False

    async def trace(event: str, info: dict[str, Any]) -> None:
        nonlocal opened
        if event.startswith("connection."):
            opened = True
        elif (
            event.endswith(".receive_response_headers.failed")
            and not opened
            and _closed_by_node(info.get("exception"))
        ):
            sending.closed_idle = True

    request.extensions["trace"] = trace


def _closed_by_node(error: object) -> bool:
    """The node ended the connection before answering: an end of stream with no answer, or a
    reset; not this side's own close (``ClosedResourceError``)."""
    if isinstance(error, httpcore2.RemoteProtocolError):
        return "without sending a response" in str(error)
    if isinstance(error, httpcore2.ReadError | httpcore2.WriteError):
        cause = error.__cause__ or error.__context__
        return isinstance(cause, anyio.BrokenResourceError | anyio.EndOfStream | OSError)
    return False


def _is_connect_failure(error: BaseException) -> bool:
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, (*_CONNECT_FAILURES, ConnectionRefusedError)):
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return False


def import_client() -> None:
    """Import FastMCP's client now (blocking). A navigator runs this once its catalogue is loaded,
    before it serves, so that its first node call does not wait for the import."""
    from fastmcp import Client  # noqa: F401

    sdk.relay_transport_class()


class NodeConnections:
    """Long-lived clients keyed by endpoint URL."""

    def __init__(
        self, *, verify: ssl.SSLContext | bool = True, destinations: Destinations | None = None
    ) -> None:
        #: Where a node's client may connect (ADR 0032): the policy its URLs were checked by.
        self.destinations = Destinations() if destinations is None else destinations
        self._clients: dict[str, Client[StreamableHttpTransport]] = {}
        #: Each client's own HTTP connection pool, as its transport made it.
        self._pools: dict[str, httpx2.AsyncClient] = {}
        #: One lock per endpoint, held while its client opens (the handshake with its node): a
        #: node that accepts connections and never answers holds up calls to itself only.
        self._opening: dict[str, anyio.Lock] = {}
        # one context for every node: made per client, reading the CA bundle took ~40 ms of the
        # event loop on each node's first call
        self._verify = (
            verify
            if isinstance(verify, ssl.SSLContext)
            else httpx2.create_ssl_context(verify=verify, trust_env=False)
        )
        #: Whether a silent machine's node answers a probe (``navigator.nodes.probes``).
        self.probes = Probes(self._verify)
        #: Which node instance answers at a URL (``navigator.nodes.identity``).
        self.instances = InstanceProbe(self._verify, self.destinations)

    @property
    def verify(self) -> ssl.SSLContext:
        """What nodes' certificates are checked against."""
        return self._verify

    def _factory(self, **kwargs: Any) -> httpx2.AsyncClient:
        """The client's pool: no body but an event stream is read past ``READ_LIMIT``, by our
        POST or by the session (which reads a JSON answer whole before anything measures it)."""
        kwargs["timeout"] = httpx2.Timeout(None, connect=LIMITS.node_connect_s)
        hooks = kwargs.setdefault("event_hooks", {})
        hooks["request"] = [*hooks.get("request", ()), _trace_reuse]
        hooks["response"] = [*hooks.get("response", ()), _session_gone]
        return bounded_client(
            verify=self._verify,
            limit=READ_LIMIT,
            limits=httpx2.Limits(
                max_connections=64,
                max_keepalive_connections=_KEPT_IDLE,
                keepalive_expiry=LIMITS.node_keepalive_s,
            ),
            destinations=self.destinations,
            **kwargs,
        )

    async def _client(self, endpoint: str) -> Client[StreamableHttpTransport]:
        client = self._clients.get(endpoint)
        if client is not None:
            return client
        async with self._opening.setdefault(endpoint, anyio.Lock()):
            client = self._clients.get(endpoint)
            if client is None:
                from fastmcp import Client

                def pool(**kwargs: Any) -> httpx2.AsyncClient:
                    self._pools[endpoint] = made = self._factory(**kwargs)
                    return made

                transport = sdk.relay_transport(endpoint, pool, max_sse_event_size=READ_LIMIT)
                client = Client(transport, auto_initialize=True)
                await client.__aenter__()  # type: ignore[no-untyped-call]  # held open
                self._clients[endpoint] = client
            return client

    async def forget(self, prefix: str) -> None:
        """Drop every client whose endpoint starts with ``prefix`` (a node came back)."""
        self.probes.forget(prefix)
        for endpoint in [e for e in self._clients if e.startswith(prefix)]:
            await self._close(endpoint)

    async def _close(
        self, endpoint: str, failed: Client[StreamableHttpTransport] | None = None
    ) -> None:
        """Close the endpoint's client; with ``failed``, only if it is still that one (a call
        that failed late must not close the client other calls have opened since)."""
        client = self._clients.get(endpoint)
        if client is None or (failed is not None and client is not failed):
            return
        del self._clients[endpoint]
        self._pools.pop(endpoint, None)  # closed with its client
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            try:
                await client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]
            except Exception:  # a dead session may fail to close; it is gone either way
                logger.debug("closing a node client failed", exc_info=True)

    async def close(self) -> None:
        for endpoint in list(self._clients):
            await self._close(endpoint)
        await self.probes.close()

    async def call(
        self,
        endpoint: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        token: Callable[[], str] | None,
        deadline_s: float,
        progress: ProgressSink | None = None,
    ) -> CallToolResult:
        """Call ``tool`` at ``endpoint`` within ``deadline_s``; never sent twice where the node may
        have read it (ADR 0031: a send on a connection the node closed as it idled is not read).

        One call's timeout, oversized answer, or answer that is not a result (a proxy's 503, a
        garbled body) ends that call only: its request is abandoned and the client, with the
        calls in flight on it, stays. A failed connection or session closes the client the call
        used, so the next call opens a fresh one.
        """
        with _watched() as sending, anyio.move_on_after(deadline_s) as scope:
            resent = stale = 0
            while True:
                client = None
                try:
                    client = await self._client(endpoint)
                    result = await call_tool(
                        client,
                        self._pools.get(endpoint),
                        endpoint,
                        tool,
                        arguments,
                        meta=call_meta(token),
                        progress=progress,
                    )
                except AnswerTooLarge:
                    raise NodeAnswerTooLarge() from None
                except NoAnswer:  # the node (or a proxy before it) answered: not with a result
                    logger.info("node call failed: the answer is not a result")
                    raise NodeUnavailable() from None
                except (Exception, BaseExceptionGroup) as error:
                    # a connection the node closed as it idled leaves the session whole, and
                    # the calls in flight beside this one on the client's other connections
                    if client is not None and not (sending.closed_idle and stale < _STALE_MOST):
                        await self._close(endpoint, client)
                    if sending.closed_idle and stale < _STALE_MOST:
                        # the node read none of it; the pool's next idle connection may be as
                        # stale as this one was, so this does not count as the one resend
                        stale += 1
                        sending.reset()
                        continue
                    unread = _is_connect_failure(error) or sending.unread
                    if unread and resent == 0:
                        resent += 1
                        sending.reset()
                        continue
                    if unread:
                        raise NodeUnavailable() from None
                    logger.info("node call failed: %s", type(error).__name__)
                    raise NodeUnavailable() from None
                return as_ours(result)
        assert scope.cancelled_caught
        raise NodeTimeout()
