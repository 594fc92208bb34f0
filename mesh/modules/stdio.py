"""The ``stdio`` module: any existing MCP server, run as a subprocess, served as an assignment.

FastMCP's ``ProxyProvider`` serves the subprocess's tools unchanged (name, title, description,
schemas, annotations) and relays each call and its answer whole. What it is given as a client
factory decides the session strategy, and ``create_proxy(command)`` would hand it a fresh
``ProxyClient`` per request: a new MCP handshake per call, against a process that holds state.
Here instead :class:`StdioSession` owns ONE ``ProxyClient`` whose session with the subprocess is
opened on first use and held until the server's lifespan ends (the provider's ``lifespan``
closes it, and with it the subprocess); if the subprocess dies, the next request opens a new
session.

Each request gets a *view* of that client: a ``ProxyClient.new()`` copy that shares the live
session state but has its own request-context slot, so progress notifications from the
subprocess reach the caller whose call made them even when calls overlap. What a shared session
cannot attribute to one caller is not relayed: log messages are dropped (they may carry content,
SPEC §10), and the subprocess is offered no sampling, elicitation or roots. Caller headers are
never forwarded (``forward_incoming_headers=False``; stdio carries none anyway), and the
subprocess gets the MCP SDK's minimal environment and its own ``--module-env`` variables, not the
node's. It runs as the node's user: the node's environment block holds no secret (it ran itself
anew without them, ``mesh.handover``), and the node makes itself non-dumpable on Linux
(``handover.keep_secrets_from_children``), so such a subprocess cannot read the node's memory —
unless they run as root; to isolate a module further, run its command as another user
(``setpriv``/``sudo -u`` in the command). What it is shown of a call and what of its failures the
node logs: ``mesh.modules.upstream`` (ADR 0046).
A ``tools/list_changed`` from the subprocess drops the provider's cached tool list at once.

A line from the subprocess is read whole before it is parsed, so one that never ends would grow
without bound: past ``LINE_CHARS`` the subprocess's output is closed, which ends the session
(the calls in flight fail; the next request starts the subprocess again). No longer message is of
use: the node sends the navigator at most 8 MiB in one request, and the navigator reads at most
4 MiB of one answer.

A call the subprocess has not answered within ``CALL_DEADLINE_S`` is given up, and the MCP
client tells the subprocess it is cancelled: the navigator gives up its own request after its
deadline (30 s by default) without the node seeing it go, so an answer that never comes would
otherwise hold a call, and a thread of a synchronous server, for good.

This leans on FastMCP internals (a client's session state, the stdio transport's own check for a
dead session, the provider's cached tool list) and on the MCP SDK's stdio client reading the
subprocess through the ``TextReceiveStream`` of its module: ``mesh.sdk`` holds each of those
uses, with the versions pinned and the test that covers it.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types
from anyio.streams.text import TextReceiveStream
from fastmcp import Client, FastMCP
from fastmcp.client.logging import LogMessage
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.server.providers.proxy import ProxyProvider
from fastmcp.tools import ToolResult

from mesh import sdk
from mesh.errors import ModuleSpecError
from mesh.modules.spec import UpstreamLimits
from mesh.modules.upstream import UpstreamCalls, UpstreamClient

__all__ = ["StdioSession", "build_stdio_module"]

INIT_TIMEOUT_S = 30.0  # how long the subprocess may take to answer the MCP handshake
CALL_DEADLINE_S = 60.0  # how long a call may wait for the subprocess's answer
LINE_CHARS = 8 << 20  # the longest line read from the subprocess: a registration's 8 MiB


class StdioSession:
    """One long-lived MCP client session with the subprocess, shared by every request."""

    def __init__(
        self, name: str, argv: list[str], environment: Mapping[str, str] | None = None
    ) -> None:
        self.provider: StdioProvider | None = None
        # the SDK's minimal environment, and what the operator gave this module alone
        env = None if not environment else dict(environment)
        self._client = UpstreamClient(
            StdioTransport(command=argv[0], args=argv[1:], env=env, keep_alive=False),
            name=f"meshnav-stdio-{name}",
            forward_incoming_headers=False,
            roots=None,
            sampling_handler=None,
            elicitation_handler=None,
            log_handler=_drop_log,
            message_handler=self._on_message,
            init_timeout=INIT_TIMEOUT_S,
        )
        self._lock = anyio.Lock()
        self._held = False

    async def client(self) -> Client[Any]:
        """The provider's client factory: a view of the one session, opened if need be."""
        async with self._lock:
            if not self._alive():
                if self._held:  # the subprocess died: drop the dead session's hold first
                    await self._client.close()  # type: ignore[no-untyped-call]  # FastMCP's
                    self._held = False
                await self._client.__aenter__()  # type: ignore[no-untyped-call]  # held open
                self._held = True
        view = self._client.new()  # its own request-context slot, for progress to find its caller
        sdk.share_session(view, self._client)  # the live session, and its holds

        return view

    def _alive(self) -> bool:
        # A subprocess that exited leaves the client "connected" to a closed dispatcher; the
        # transport's own check (the one its keep-alive reconnect uses) tells the two apart.
        return self._client.is_connected() and not sdk.session_dead(self._client.transport)

    async def close(self) -> None:
        """End the session, which ends the subprocess."""
        async with self._lock:
            if self._held:
                self._held = False
                await self._client.close()  # type: ignore[no-untyped-call]  # FastMCP's

    async def _on_message(self, message: mcp_types.ServerNotification | Exception) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification) and self.provider:
            self.provider.forget_tools()


class StdioProvider(ProxyProvider):
    """A ``ProxyProvider`` over a :class:`StdioSession`, which it closes when the server stops."""

    def __init__(self, session: StdioSession) -> None:
        super().__init__(session.client)
        self.session = session
        session.provider = self

    def forget_tools(self) -> None:
        """Drop the cached tool list, so that the next lookup asks the subprocess again."""
        sdk.forget_cached_tools(self)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.session.close()


def build_stdio_module(
    name: str,
    command: str,
    environment: Mapping[str, str] | None = None,
    *,
    call_deadline_s: float = CALL_DEADLINE_S,
    upstream: UpstreamLimits | None = None,
) -> FastMCP:
    """The server of assignment ``name``: the MCP server ``command`` starts, proxied, with
    ``environment`` (``--module-env``) beside the SDK's minimal one; a call it has not answered
    within ``call_deadline_s`` is given up. What it is shown of a call and what of its failures
    is logged: ``upstream`` (``mesh.modules.upstream``)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        raise ModuleSpecError("the stdio command does not parse (unbalanced quotes?)") from None
    if not argv:
        raise ModuleSpecError("the stdio command is empty")
    session = StdioSession(name, argv, environment)
    server = FastMCP(name, mask_error_details=True)
    # a subprocess that cannot start is an error to the node's push, not an empty tool list
    server.provider_error_strategy = "raise"
    server.add_provider(StdioProvider(session))
    server.add_middleware(UpstreamCalls(name, upstream or UpstreamLimits()))
    server.add_middleware(CallDeadline(session, call_deadline_s))
    return server


class CallDeadline(Middleware):
    """Give up a call the subprocess has not answered within ``seconds``; cancelling the client's
    request sends the subprocess ``notifications/cancelled``. Starting the subprocess is not the
    call's: it has its own bound (``INIT_TIMEOUT_S``) and happens first."""

    def __init__(self, session: StdioSession, seconds: float) -> None:
        self.session = session
        self.seconds = seconds

    async def on_call_tool(
        self,
        context: MiddlewareContext[mcp_types.CallToolRequestParams],
        call_next: CallNext[mcp_types.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        await self.session.client()
        with anyio.move_on_after(self.seconds):
            return await call_next(context)
        raise ToolError(f"the wrapped server did not answer within {self.seconds:g} s")


class BoundedLines(TextReceiveStream):
    """The subprocess's output as the MCP SDK's stdio client reads it, ended once a line passes
    ``LINE_CHARS``. The client keeps what follows the last newline until the next one comes; a
    chunk is at most 64 KiB, so it never holds much more than the bound.

    Bytes that are not UTF-8 are read as U+FFFD: decoded strictly, as the SDK asks, they ended
    its reader without ending the session, and every call then waited out its deadline while
    the subprocess lived on. Such a line is now one that is not JSON, which the session skips."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "errors": "replace"})
        self._open = 0  # characters read since the last newline

    async def receive(self) -> str:
        chunk = await super().receive()
        newline = chunk.rfind("\n")
        self._open = self._open + len(chunk) if newline < 0 else len(chunk) - newline - 1
        if self._open > LINE_CHARS:
            await self.transport_stream.aclose()  # the client drains it before the session ends
            raise anyio.BrokenResourceError(
                f"the wrapped server wrote a line longer than {LINE_CHARS} characters"
            )
        return chunk


# Every stdio client of a node is this module's: the SDK's reader takes its stream from here.
sdk.read_stdio_with(BoundedLines)


async def _drop_log(message: LogMessage) -> None:
    """Backend log lines are not relayed: on a shared session they belong to no one caller."""
