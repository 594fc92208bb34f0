"""The call path to nodes: one long-lived MCP client per endpoint, explicit deadlines and limits.

A client is opened on first use and kept. It is dropped — and opened afresh on the next call — when
its node registers again or its connection fails; when the failure happened before the request
left (the connection could not be opened), the call is sent once on a fresh client, since the node
never saw it. A call the node may have seen is never sent twice. Nodes receive the navigator's call
token in the request's ``_meta``; the caller's own headers never reach them.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
import httpx2
from fastmcp import Client
from fastmcp.client.progress import ProgressHandler
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared._httpx_utils import McpHttpClientFactory
from mcp_types import CallToolResult

from mesh.calltokens import META_KEY
from navigator.errors import NodeAnswerTooLarge, NodeTimeout, NodeUnavailable
from navigator.limits import LIMITS

__all__ = ["NodeConnections", "ProgressSink"]

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
                transport = StreamableHttpTransport(
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
                    result = await client.call_tool_mcp(
                        tool,
                        arguments,
                        progress_handler=cast(ProgressHandler | None, progress),
                        meta=None if token is None else {META_KEY: token()},
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
