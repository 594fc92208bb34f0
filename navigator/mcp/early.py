"""Calls refused before the MCP machinery (ADR 0048): a ``call`` whose caller's quota refuses it
now is answered from the request's JSON alone — no session lookup, no JSON-RPC validation, no
task group or stream — with the same tool error, the same audit event and the same metrics as the
walker's own refusal (``navigator.walker.calling``).

Only a caller whose quota refuses a call at this moment pays for the look at the body
(``Quotas.refusal`` is one lookup for anyone else), and only a single ``tools/call`` request of
``call`` is answered here; anything else — a batch, another method, a body past the bound, a
call the quota would admit — goes on to the MCP app as it came.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from navigator.access.auditing import AuditLog
from navigator.access.grants import Caller
from navigator.access.quotas import Quotas
from navigator.errors import ERROR_META_KEY, NavigatorError, error_body
from navigator.metrics import METRICS
from navigator.walker.sizing import compact
from navigator.walker.trail import Seen, ended

__all__ = ["QuotaRefusals"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The most of a body read to tell a refused call: a call's address and arguments, well past
#: any ordinary one. A longer body goes on to the MCP app, which bounds it itself.
BODY_LOOKED_AT = 64 << 10
CALL_TOOL = "call"


class QuotaRefusals:
    """The MCP app, less the calls a caller's quota refuses now: answered here."""

    def __init__(self, app: ASGIApp, quotas: Quotas, audit: AuditLog | None) -> None:
        self.app = app
        self.quotas = quotas
        self.audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        caller = scope.get("state", {}).get("meshnav_caller")
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or not isinstance(caller, Caller)
            or (refused := self.quotas.refusal(caller)) is None
        ):
            await self.app(scope, receive, send)
            return
        read, whole = await _read(receive)
        call = _call_of(b"".join(m.get("body", b"") for m in read)) if whole else None
        if call is None:
            await self.app(scope, _replaying(read, receive), send)
            return
        await self._refuse(scope, send, caller, refused, *call)

    async def _refuse(
        self,
        scope: Scope,
        send: Send,
        caller: Caller,
        refused: NavigatorError,
        request_id: str | int,
        address: str,
    ) -> None:
        started = time.perf_counter()
        ended(self.audit, caller, address, Seen(outcome=refused.code), started)
        METRICS.observe_tool(CALL_TOOL, refused.code, time.perf_counter() - started)
        body = error_body(refused)
        result: dict[str, Any] = {
            "_meta": {ERROR_META_KEY: refused.code},
            "content": [{"type": "text", "text": compact(body)}],
            "isError": True,
            "structuredContent": body,
        }
        if _header(scope, b"mcp-protocol-version") in MODERN_PROTOCOL_VERSIONS:
            result["resultType"] = "complete"
        answer = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":")
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(answer)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": answer})


async def _read(receive: Receive) -> tuple[list[Message], bool]:
    """The request's messages as far as ``BODY_LOOKED_AT``, and whether that was all of it."""
    read: list[Message] = []
    size = 0
    while True:
        message = await receive()
        read.append(message)
        if message["type"] != "http.request":
            return read, False  # the client went away: the app hears it as it would have
        size += len(message.get("body", b""))
        if not message.get("more_body", False):
            return read, True
        if size > BODY_LOOKED_AT:
            return read, False


def _replaying(read: list[Message], receive: Receive) -> Receive:
    """``receive``, after the messages already read from it."""
    pending = list(read)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


def _call_of(body: bytes) -> tuple[str | int, str] | None:
    """A single JSON-RPC ``tools/call`` request of ``call``: its id and the address it names;
    ``None`` for anything else (the MCP app answers it as it would any)."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(request, dict) or request.get("method") != "tools/call":
        return None
    request_id = request.get("id")
    params = request.get("params")
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return None
    if not isinstance(params, dict) or params.get("name") != CALL_TOOL:
        return None
    arguments = params.get("arguments")
    address = arguments.get("address") if isinstance(arguments, dict) else None
    return (request_id, address) if isinstance(address, str) else None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None
