"""The call path to nodes: one long-lived MCP client per endpoint, explicit deadlines and limits.

A client is opened on first use and kept. It is dropped — and opened afresh on the next call — when
its node registers again or its connection fails; when the failure happened before the request
left (the connection could not be opened), the call is sent once on a fresh client, since the node
never saw it. A call the node may have seen is never sent twice. Nodes receive the navigator's call
token in the request's ``_meta``; the caller's own headers never reach them, nor does anything else
of the caller's request ``_meta``.

The navigator relays a node's answer; it does not consume it. Like FastMCP's own proxy, it does not
hold the answer to the node's declared output schema (the agent's client checks what it receives;
a node's schema bug must not turn into a navigator error that hides the real answer), and it sends
``tools/call`` on the held session directly rather than through ``Client.call_tool_mcp``, whose
tracing spans, trace-context injection and second session-monitoring task cost ~0.4 ms a call.
"""

from __future__ import annotations

import functools
import logging
import ssl
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

import anyio
import httpx2
from mcp import ClientSession
from mcp.shared._httpx_utils import McpHttpClientFactory
from mcp.shared.dispatcher import ProgressFnT
from mcp_types import CallToolResult, InputRequiredResult, InputResponses, RequestParamsMeta

from mesh.calltokens import META_KEY
from navigator.errors import NodeAnswerTooLarge, NodeTimeout, NodeUnavailable
from navigator.limits import LIMITS

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

__all__ = ["NodeConnections", "ProgressSink", "import_client"]

logger = logging.getLogger("meshnav.navigator.nodes")

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]

RESERVED_META_PREFIX = "io.modelcontextprotocol/"

_CONNECT_FAILURES: tuple[type[BaseException], ...] = (httpx2.ConnectError, httpx2.ConnectTimeout)


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


async def _call_tool(
    client: Client[StreamableHttpTransport],
    tool: str,
    arguments: dict[str, Any],
    *,
    meta: dict[str, Any] | None,
    progress: ProgressSink | None,
) -> CallToolResult:
    """One ``tools/call`` on the held session, as FastMCP's proxy sends it: watched by the session
    monitor (a dead connection fails the call instead of leaving it waiting), and a node's request
    for input (SEP-2322) driven through the client's own handlers as ``call_tool_mcp`` would."""
    request_meta = cast(RequestParamsMeta | None, meta)

    async def send(
        input_responses: InputResponses | None, request_state: str | None
    ) -> CallToolResult | InputRequiredResult:
        return await client.session.call_tool(
            name=tool,
            arguments=arguments,
            progress_callback=cast(ProgressFnT | None, progress),
            meta=request_meta,
            input_responses=input_responses,
            request_state=request_state,
            allow_input_required=True,
        )

    first = await client._await_with_session_monitoring(send(None, None))
    if isinstance(first, CallToolResult):
        return first
    driven = await client._await_with_session_monitoring(client._drive_input_required(first, send))
    if not isinstance(driven, CallToolResult):
        raise TypeError("the node answered tools/call with something else")
    return driven


class NodeConnections:
    """Long-lived clients keyed by endpoint URL."""

    def __init__(self, *, verify: ssl.SSLContext | bool = True) -> None:
        self._clients: dict[str, Client[StreamableHttpTransport]] = {}
        self._lock = anyio.Lock()
        self._verify = verify

    def _factory(self, **kwargs: Any) -> httpx2.AsyncClient:
        kwargs["timeout"] = httpx2.Timeout(None, connect=LIMITS.node_connect_s)
        kwargs["limits"] = httpx2.Limits(max_connections=64, max_keepalive_connections=16)
        kwargs["verify"] = self._verify
        kwargs["trust_env"] = False
        return httpx2.AsyncClient(**kwargs)

    async def _client(self, endpoint: str) -> Client[StreamableHttpTransport]:
        client = self._clients.get(endpoint)
        if client is not None:
            return client
        async with self._lock:
            client = self._clients.get(endpoint)
            if client is None:
                from fastmcp import Client

                transport = _relay_transport()(
                    endpoint,
                    httpx_client_factory=cast(McpHttpClientFactory, self._factory),
                    max_sse_event_size=LIMITS.node_answer_bytes + LIMITS.envelope_bytes,
                )
                client = Client(transport, auto_initialize=True)
                await client.__aenter__()  # type: ignore[no-untyped-call]  # held open
                self._clients[endpoint] = client
            return client

    async def forget(self, prefix: str) -> None:
        """Drop every client whose endpoint starts with ``prefix`` (a node came back)."""
        for endpoint in [e for e in self._clients if e.startswith(prefix)]:
            await self._close(endpoint)

    async def _close(self, endpoint: str) -> None:
        client = self._clients.pop(endpoint, None)
        if client is None:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            try:
                await client.__aexit__(None, None, None)  # type: ignore[no-untyped-call]
            except Exception:  # a dead session may fail to close; it is gone either way
                logger.debug("closing a node client failed", exc_info=True)

    async def close(self) -> None:
        for endpoint in list(self._clients):
            await self._close(endpoint)

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
        """Call ``tool`` at ``endpoint`` within ``deadline_s``; never sent twice."""
        with anyio.move_on_after(deadline_s) as scope:
            for attempt in (1, 2):
                try:
                    client = await self._client(endpoint)
                    result = await _call_tool(
                        client,
                        tool,
                        arguments,
                        meta=None if token is None else {META_KEY: token()},
                        progress=progress,
                    )
                except (Exception, BaseExceptionGroup) as error:
                    await self._close(endpoint)
                    if _is_connect_failure(error) and attempt == 1:
                        continue
                    if _is_connect_failure(error):
                        raise NodeUnavailable() from None
                    logger.info("node call failed: %s", type(error).__name__)
                    raise NodeUnavailable() from None
                _check_size(result)
                return _as_ours(result)
        assert scope.cancelled_caught
        await self._close(endpoint)
        raise NodeTimeout()


def _check_size(result: CallToolResult) -> None:
    size = len(result.model_dump_json(by_alias=True, exclude_none=True))
    if size > LIMITS.node_answer_bytes:
        raise NodeAnswerTooLarge()


def _as_ours(result: CallToolResult) -> CallToolResult:
    """The node's answer, less the protocol's reserved ``_meta`` keys (the node's serverInfo):
    the agent's answer comes from the navigator; the node's own content passes through whole."""
    meta = result.meta
    if not meta or not any(key.startswith(RESERVED_META_PREFIX) for key in meta):
        return result
    kept = {k: v for k, v in meta.items() if not k.startswith(RESERVED_META_PREFIX)}
    return result.model_copy(update={"meta": kept or None})
