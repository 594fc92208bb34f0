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

The navigator relays a node's answer; it does not consume it. Like FastMCP's own proxy, it does not
hold the answer to the node's declared output schema (the agent's client checks what it receives;
a node's schema bug must not turn into a navigator error that hides the real answer).

The client negotiates the protocol with the node (``server/discover``, or ``initialize`` for a
server of the legacy era) and keeps the HTTP connection pool. On the sessionless era
(2026-07-28), where a ``tools/call`` is one self-contained POST, the navigator writes that POST
itself on the client's own pool — the body and headers the client's session would write, stamped
by the session's own code — and reads the one answer it gets back, JSON or an event stream
(progress passed on), never more than the answer limit (ADR 0018). This skips the session's
message streams and tasks, ~15% of a relayed call's CPU. A node's request for input
(``InputRequiredResult``) is driven by the client itself, as are all calls on the legacy era;
the answers the session reads are bounded as they arrive by the client's pool
(``navigator.nodes.bounded``: no body but an event stream is read past the answer limit, and an
event stream's events are bounded one by one) and measured once read (``_check_size``).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import math
import ssl
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpcore2
import httpx2
from mcp import ClientSession
from mcp.shared._httpx_utils import McpHttpClientFactory, stream_within_origin
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, InputRequiredResult, InputResponses, RequestParamsMeta
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic_core import from_json

from mesh import tracing
from mesh.calltokens import META_KEY
from navigator.errors import (
    NavigatorError,
    NodeAnswerTooLarge,
    NodeTimeout,
    NodeUnavailable,
    ToolNotGranted,
)
from navigator.limits import LIMITS
from navigator.mcp.answers import ERROR_META_KEY
from navigator.nodes.bounded import AnswerTooLarge, bounded_client, passed_limit
from navigator.nodes.destinations import Destinations
from navigator.nodes.probes import Probes

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

__all__ = ["NodeAnswer", "NodeConnections", "ProgressSink", "import_client"]

logger = logging.getLogger("meshnav.navigator.nodes")

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]

#: What the node answered, relayed as it is: the name the walker gives it, without MCP's types.
NodeAnswer = CallToolResult

RESERVED_META_PREFIX = "io.modelcontextprotocol/"

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


@functools.cache
def _relay_transport() -> type[StreamableHttpTransport]:
    """Streamable HTTP whose sessions relay ``tools/call`` results without enforcing the node's
    output schema. Made on the first node call: FastMCP's client takes ~0.4 s to import, which a
    navigator's start need not wait for."""
    from fastmcp.client.transports import StreamableHttpTransport
    from fastmcp.client.transports.base import TransportOptions, VersionAwareClientSession

    class _RelaySession(VersionAwareClientSession):
        """Relays ``tools/call`` results without enforcing the node's output schema."""

        async def validate_tool_result(self, name: str, result: CallToolResult) -> None:
            return None

    class _RelayTransport(StreamableHttpTransport):
        """Streamable HTTP whose sessions are ``_RelaySession``."""

        def connect_session(  # type: ignore[override]  # the same keywords, passed on as they are
            self, *, transport_options: TransportOptions | None = None, **kwargs: Any
        ) -> AbstractAsyncContextManager[ClientSession]:
            options = replace(transport_options or TransportOptions(), session_class=_RelaySession)
            connect: Callable[..., AbstractAsyncContextManager[ClientSession]] = (
                super().connect_session
            )
            return connect(transport_options=options, **kwargs)

    return _RelayTransport


def import_client() -> None:
    """Import FastMCP's client now (blocking). A navigator runs this once its catalogue is loaded,
    before it serves, so that its first node call does not wait for the import."""
    from fastmcp import Client  # noqa: F401

    _relay_transport()


class _NoAnswer(Exception):
    """The node answered the POST with something other than a result for it."""


_REQUEST_IDS = itertools.count(1)
_ACCEPT = "application/json, text/event-stream"
#: The most of one answer read from a node: the answer limit and room for the JSON-RPC envelope.
_READ_LIMIT = LIMITS.node_answer_bytes + LIMITS.envelope_bytes
#: How the client's event reader, given ``_READ_LIMIT``, says an answer passed it (httpx2's
#: ``SSEError`` text, carried in the error the session raises; tests/navigator/nodes/test_nodes.py).
_PASSED_READ_LIMIT = f"exceeded the {_READ_LIMIT} byte limit"


def _too_large() -> AnswerTooLarge:
    return AnswerTooLarge(_READ_LIMIT)


async def _read_capped(response: httpx2.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _too_large()
        chunks.append(chunk)
    return b"".join(chunks)


async def _answer_from_events(
    response: httpx2.Response, request_id: int, progress: ProgressSink | None, limit: int
) -> dict[str, Any]:
    """The response to ``request_id`` from an event stream, progress notifications passed on;
    anything else the node streams (its log messages) is not the agent's and is dropped."""
    try:
        return await _answer_in(
            httpx2.EventSource(response, max_event_size=limit), request_id, progress
        )
    except httpx2.SSEError:  # the content type was checked: one event passed the limit
        raise _too_large() from None


async def _answer_in(
    events: httpx2.EventSource, request_id: int, progress: ProgressSink | None
) -> dict[str, Any]:
    """Each event is read whole only up to the limit (the event source's own bound) and none is
    kept but the answer: a long job may report progress for as long as its deadline allows."""
    async for event in events:
        if not event.data:
            continue
        message = from_json(event.data)
        if not isinstance(message, dict):
            continue
        if message.get("id") == request_id and ("result" in message or "error" in message):
            return message
        params = message.get("params")
        if (
            progress is not None
            and message.get("method") == "notifications/progress"
            and isinstance(params, dict)
            and params.get("progressToken") == request_id
            and (done := _figure(params.get("progress"))) is not None
        ):
            note = params.get("message")
            await progress(
                done, _figure(params.get("total")), note if isinstance(note, str) else None
            )
    raise _NoAnswer()


def _figure(value: object) -> float | None:
    """A progress figure the agent's notification can carry; ``None`` for anything else: an
    integer past a float's range raised OverflowError, taken for a failed connection (which
    closed the node's client under every call in flight), and NaN or an infinity is no JSON."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        figure = float(value)
    except OverflowError:
        return None
    return figure if math.isfinite(figure) else None


async def _post_call(
    client: Client[StreamableHttpTransport],
    http: httpx2.AsyncClient,
    endpoint: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    meta: dict[str, Any] | None,
    progress: ProgressSink | None,
) -> CallToolResult | InputRequiredResult:
    """One sessionless ``tools/call`` POST on the client's pool, as its session would send it."""
    session = client.session
    request_id = next(_REQUEST_IDS)
    request_meta = dict(meta or {})
    if progress is not None:
        request_meta["progressToken"] = request_id
    request: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"_meta": request_meta, "name": tool, "arguments": arguments},
    }
    options: dict[str, Any] = {}
    session._stamp(request, options)  # type: ignore[arg-type]  # protocol _meta, routing headers
    headers = {"accept": _ACCEPT, "content-type": "application/json", **options["headers"]}
    body = json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode()
    async with stream_within_origin(
        http, "POST", endpoint, content=body, headers=headers
    ) as response:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if response.status_code != 200:
            raise _NoAnswer()
        try:
            if kind == "application/json":
                message = from_json(await _read_capped(response, _READ_LIMIT))
            elif kind == "text/event-stream":
                message = await _answer_from_events(response, request_id, progress, _READ_LIMIT)
            else:
                raise _NoAnswer()
        except ValueError:  # JSON that does not parse, or nests deeper than the session reads
            raise _NoAnswer() from None
    if not isinstance(message, dict) or message.get("id") != request_id:
        raise _NoAnswer()
    try:
        result = session._call_tool_adapter.validate_python(message.get("result"))
    except ValueError:  # pydantic's ValidationError: not a result
        raise _NoAnswer() from None
    if not isinstance(result, CallToolResult | InputRequiredResult):
        raise _NoAnswer()
    return result


async def _call_tool(
    client: Client[StreamableHttpTransport],
    http: httpx2.AsyncClient | None,
    endpoint: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    meta: dict[str, Any] | None,
    progress: ProgressSink | None,
) -> CallToolResult:
    """One ``tools/call``: on the sessionless era, our own POST on the client's pool; otherwise
    on the held session, watched by the session monitor (a dead connection fails the call instead
    of leaving it waiting). A node's request for input (SEP-2322) is driven through the client's
    own handlers, as ``call_tool_mcp`` would."""
    request_meta = cast(RequestParamsMeta | None, meta)

    async def send(
        input_responses: InputResponses | None, request_state: str | None
    ) -> CallToolResult | InputRequiredResult:
        """On the session: its answers are measured here (ours are measured as they are read)."""
        try:
            result = await client.session.call_tool(
                name=tool,
                arguments=arguments,
                progress_callback=cast(ProgressFnT | None, progress),
                meta=request_meta,
                input_responses=input_responses,
                request_state=request_state,
                allow_input_required=True,
            )
        except MCPError as error:
            if _PASSED_READ_LIMIT in error.message or passed_limit(error.message, _READ_LIMIT):
                raise _too_large() from None
            raise
        if isinstance(result, CallToolResult):
            _check_size(result)
        return result

    if http is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        first = await _post_call(
            client, http, endpoint, tool, arguments, meta=meta, progress=progress
        )
    else:
        first = await client._await_with_session_monitoring(send(None, None))
    if isinstance(first, CallToolResult):
        return first
    driven = await client._await_with_session_monitoring(client._drive_input_required(first, send))
    if not isinstance(driven, CallToolResult):
        raise TypeError("the node answered tools/call with something else")
    return driven


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

    @property
    def verify(self) -> ssl.SSLContext:
        """What nodes' certificates are checked against."""
        return self._verify

    def _factory(self, **kwargs: Any) -> httpx2.AsyncClient:
        """The client's pool: no body but an event stream is read past ``_READ_LIMIT``, by our
        POST or by the session (which reads a JSON answer whole before anything measures it)."""
        kwargs["timeout"] = httpx2.Timeout(None, connect=LIMITS.node_connect_s)
        hooks = kwargs.setdefault("event_hooks", {})
        hooks["request"] = [*hooks.get("request", ()), _trace_reuse]
        hooks["response"] = [*hooks.get("response", ()), _session_gone]
        return bounded_client(
            verify=self._verify,
            limit=_READ_LIMIT,
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

                transport = _relay_transport()(
                    endpoint,
                    httpx_client_factory=cast(McpHttpClientFactory, pool),
                    max_sse_event_size=_READ_LIMIT,
                )
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
                    result = await _call_tool(
                        client,
                        self._pools.get(endpoint),
                        endpoint,
                        tool,
                        arguments,
                        meta=_meta(token),
                        progress=progress,
                    )
                except AnswerTooLarge:
                    raise NodeAnswerTooLarge() from None
                except _NoAnswer:  # the node (or a proxy before it) answered: not with a result
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
                return _as_ours(result)
        assert scope.cancelled_caught
        raise NodeTimeout()


def _meta(token: Callable[[], str] | None) -> dict[str, Any] | None:
    """What the navigator's ``tools/call`` carries in ``_meta``: a fresh call token, and its own
    node-hop span's trace context when tracing (ADR 0040); nothing of the caller's request."""
    meta: dict[str, Any] = tracing.trace_context()
    if token is not None:
        meta[META_KEY] = token()
    return meta or None


def _check_size(result: CallToolResult) -> None:
    """An answer the session read, measured as the agent will receive it."""
    size = len(result.model_dump_json(by_alias=True, exclude_none=True))
    if size > LIMITS.node_answer_bytes:
        raise _too_large()


#: A node agent's own refusals of a call (``mesh.server``), which the navigator answers as its
#: own errors of those codes (SPEC §9: ``tool_not_granted`` "also for a node refusing a token").
NODE_REFUSALS: dict[str, type[NavigatorError]] = {
    ToolNotGranted.code: ToolNotGranted,
    NodeUnavailable.code: NodeUnavailable,
}


def _as_ours(result: CallToolResult) -> CallToolResult:
    """The node's answer, less what only the navigator may say: the protocol's reserved
    ``_meta`` keys (the node's serverInfo) and meshnav's error key, by which a client tells the
    navigator's errors from a node's (SPEC §9). A node that set that key posed as the navigator
    to the agent, and put its own text into ``/metrics`` as an error code. A node agent's
    refusal of the call becomes the navigator's own error of that code (any server refusing its
    own call could say as much); every other answer passes through, its content whole."""
    meta = result.meta
    if not meta:
        return result
    code = meta.get(ERROR_META_KEY)
    refusal = NODE_REFUSALS.get(code) if result.is_error and isinstance(code, str) else None
    if refusal is not None:
        raise refusal("The node refused the call." if refusal is ToolNotGranted else None)
    if ERROR_META_KEY not in meta and not any(k.startswith(RESERVED_META_PREFIX) for k in meta):
        return result
    kept = {
        k: v
        for k, v in meta.items()
        if k != ERROR_META_KEY and not k.startswith(RESERVED_META_PREFIX)
    }
    return result.model_copy(update={"meta": kept or None})
