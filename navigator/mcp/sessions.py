"""The legacy era's MCP sessions (ADR 0030), held per principal and closed when the navigator stops.

The MCP SDK holds up to 10,000 stateful sessions for everyone together, each kept 30 minutes
after its last request: one principal with no grants opened 9,999 of them in 48 s, and every
other principal's ``initialize`` was then refused. ``SessionBook`` stands in front of the MCP app,
behind authentication:

- a principal holds at most ``per_principal`` sessions; one that opens another at its cap has its
  own session idle longest closed first (none of another principal's), and is refused
  ``rate_limited`` only when every session it holds is answering a request;
- JWT subjects no principal row stands behind hold ``unregistered`` sessions all together, as if
  they were one principal (ADR 0044): a thousand names an authorization server signs in cannot
  fill the SDK's cap that registered principals' sessions need;
- it counts the requests in flight on ``/mcp`` (both eras), which the navigator's drain waits on,
  and closes sessions — the idle ones, or all — when it stops (``navigator.mcp.stopping``).

No request reaches the MCP app without the caller authentication resolved: a session is never
opened, nor served, without its owner (ADR 0056).

A session is idle when no POST of it is in flight: the GET stream a client keeps open for the
server's notifications is not work.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from navigator.access.authentication import caller_from_scope, send_error
from navigator.access.grants import Caller
from navigator.errors import NavigatorError, RateLimited
from navigator.nodes import sdk

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["SessionBook"]

_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode("latin-1")
_VERSION_HEADER = b"mcp-protocol-version"
#: The one holder of every unregistered subject's sessions: a name no principal can have.
_UNREGISTERED = ""
_ALL_BUSY = (
    "This principal holds as many MCP sessions as it may, each answering a request: end one "
    "(DELETE it) or wait for one to finish, then open another."
)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class SessionBook:
    def __init__(
        self, app: ASGIApp, *, per_principal: int, unregistered: int | None = None
    ) -> None:
        self.app = app
        self.per_principal = per_principal
        self.unregistered = per_principal if unregistered is None else unregistered
        #: The SDK's session manager, known once the MCP app's lifespan has made it.
        self.manager: StreamableHTTPSessionManager | None = None
        self._owner: dict[str, str] = {}
        #: Each principal's sessions, the one used longest ago first.
        self._held: dict[str, dict[str, None]] = {}
        self._busy: Counter[str] = Counter()
        #: POSTs in flight on ``/mcp``, both eras, and when the last one ended.
        self.posts = 0
        self.last_post_ended = 0.0
        #: Set when the drain's grace ended: no POST's answer is sent from then on (ADR 0056).
        self.cut = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:  # authentication vetted it; a request it did not reaches no session (ADR 0056)
            caller = caller_from_scope(scope)
        except NavigatorError as error:
            await send_error(send, error)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        self.posts += 1
        session = _header(scope, _SESSION_HEADER)
        send = self._until_cut(send)
        try:
            if session is None and self._opens_session(scope):
                await self._open(caller, scope, receive, send)
            elif session is not None and session in self._owner:
                await self._use(session, scope, receive, send)
            else:
                await self.app(scope, receive, send)
        finally:
            self.posts -= 1
            self.last_post_ended = time.monotonic()

    def _until_cut(self, send: Send) -> Send:
        """``send``, until the drain's grace ends: an answer finished later is not sent, so what
        the audit records of it is what its client received (ADR 0056)."""

        async def sending(message: Message) -> None:
            if not self.cut:
                await send(message)

        return sending

    def _opens_session(self, scope: Scope) -> bool:
        """A POST without a session of the legacy era: the SDK opens a session for it."""
        version = _header(scope, _VERSION_HEADER)
        return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS

    async def _use(self, session: str, scope: Scope, receive: Receive, send: Send) -> None:
        held = self._held.get(self._owner[session], {})
        held.pop(session, None)
        held[session] = None  # used now: the last to be closed
        self._busy[session] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._busy[session] -= 1
            if not self._busy[session]:
                del self._busy[session]

    async def _open(self, caller: Caller, scope: Scope, receive: Receive, send: Send) -> None:
        principal = caller.principal if caller.registered else _UNREGISTERED
        held = self._live(principal)
        if len(held) >= (self.per_principal if caller.registered else self.unregistered):
            idle = next((s for s in held if not self._busy[s]), None)
            if idle is None:
                await send_error(send, RateLimited(_ALL_BUSY, retry_after_s=1))
                return
            await self._close(idle)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened = next(
                    (bytes(v) for k, v in message["headers"] if k == _SESSION_HEADER), b""
                )
                if opened:
                    self._owner[opened.decode("latin-1")] = principal
                    self._held.setdefault(principal, {})[opened.decode("latin-1")] = None
            await send(message)

        await self.app(scope, receive, sending)

    def _live(self, principal: str) -> dict[str, None]:
        """The principal's sessions the SDK still holds (one ends on its own: idle, or deleted)."""
        held = self._held.get(principal, {})
        known = self._transports()
        for ended in [s for s in held if s not in known]:
            self._forget(ended)
        return self._held.get(principal, {})

    def _transports(self) -> dict[str, Any]:
        return sdk.server_instances(self.manager) if self.manager is not None else {}

    def _forget(self, session: str) -> None:
        principal = self._owner.pop(session, None)
        if principal is not None:
            held = self._held.get(principal, {})
            held.pop(session, None)
            if not held:
                self._held.pop(principal, None)

    async def _close(self, session: str) -> None:
        self._forget(session)
        transport = self._transports().get(session)
        if transport is not None:
            await transport.terminate()

    async def close_sessions(self, *, idle_only: bool) -> None:
        """Close every session (``idle_only``: those with no POST in flight): their GET streams
        end, and their ids answer "Session not found" from now on."""
        for session in list(self._transports()):
            if not (idle_only and self._busy[session]):
                await self._close(session)
