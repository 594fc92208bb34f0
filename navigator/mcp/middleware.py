"""Who is calling, for the walker tools, and the one middleware that sees every MCP request.

``CallerMiddleware`` resolves the caller once per request — from the HTTP request the
authentication middleware vetted, or the fixed principal of a stdio navigator — and turns every
error into a SPEC §9 answer: it refuses unknown tool names and FastMCP's own failures without
echoing anything the client sent, and logs addresses, principal ids, error codes and timings only.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import mcp_types as mt
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult

from mesh import tracing
from navigator.access.auditing import AuditLog
from navigator.access.authentication import caller_from_scope
from navigator.access.grants import Caller
from navigator.errors import (
    InvalidArguments,
    NavigatorError,
    Unauthenticated,
    UnknownTool,
    from_registry,
)
from navigator.mcp.answers import error_answer
from navigator.metrics import METRICS
from registry import RegistryError

if TYPE_CHECKING:
    from navigator.mcp.stopping import Stopping

__all__ = ["CallerMiddleware", "CallerSource", "current_caller", "resolve_caller"]

logger = logging.getLogger("meshnav.navigator.calls")

_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "meshnav_caller", default=None
)


_NOT_AN_OBJECT = (
    "The arguments must be an object of named members: read the tool's inputSchema in tools/list."
)


#: Who calls when no HTTP request says: a stdio navigator's principal, authenticated again for
#: each request (its grants read then, its revocation seen then; SPEC §3, ADR 0009), or a test's.
CallerSource = Callable[[], Awaitable[Caller]]


async def resolve_caller(source: CallerSource | None) -> Caller:
    """This request's caller: from ``source`` when the navigator has one, else from the HTTP
    request the authentication middleware vetted; none is ``Unauthenticated``."""
    if source is not None:
        return await source()
    try:
        request = get_http_request()
    except RuntimeError:
        raise Unauthenticated() from None
    return caller_from_scope(request.scope)


def _source() -> str:
    """The address the HTTP request came from; none over stdio."""
    try:
        client = get_http_request().client
    except RuntimeError:
        return ""
    return client.host if client is not None else ""


def current_caller() -> Caller:
    """The caller of the tool being run; missing context means deny."""
    caller = _caller.get()
    if caller is None:
        raise Unauthenticated()
    return caller


class CallerMiddleware(Middleware):
    def __init__(
        self,
        walker_names: set[str],
        source: CallerSource | None = None,
        *,
        stopping: Stopping | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.walker_names = walker_names
        self.source = source
        #: While the navigator drains, a new call is refused (ADR 0030), and counted (ADR 0056).
        self.stopping = stopping
        self.audit = audit

    async def _refused(self, refusal: NavigatorError) -> None:
        """Count a call refused before the audited path on the aggregated refusal events, with
        its principal when it has one (ADR 0056)."""
        if self.audit is None:
            return
        try:
            principal = (await resolve_caller(self.source)).principal
        except (NavigatorError, RegistryError):
            principal = ""
        self.audit.refused(
            "/mcp", _source(), None, refusal.code, principal=principal, reason="tools/call"
        )

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        name = context.message.name
        tool = name if name in self.walker_names else "unknown"
        # the MCP request's span (ADR 0040): a new trace, whatever the caller's _meta carries
        with tracing.span(
            f"tools/call {tool}", kind="server", method="tools/call", tool=tool
        ) as request:
            result, code = await self._answer(context, call_next, tool)
            if code != "ok":
                tracing.failed(request, code)
            return result

    async def _answer(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
        tool: str,
    ) -> tuple[ToolResult, str]:
        started = time.perf_counter()
        code = "ok"
        try:
            refusal = self.stopping.refusal() if self.stopping is not None else None
            if refusal is not None:
                await self._refused(refusal)
                raise refusal
            if tool == "unknown":
                raise UnknownTool("The navigator offers only seats, search, describe and call.")
            if not isinstance(context.message.arguments or {}, dict):
                raise InvalidArguments(_NOT_AN_OBJECT, extra={"pointer": "", "keyword": "type"})
            caller = await resolve_caller(self.source)
            tracing.annotate(principal=caller.principal)
            token = _caller.set(caller)
            try:
                result = await call_next(context)
            finally:
                _caller.reset(token)
            if result.is_error and isinstance(result.meta, dict):
                code = str(result.meta.get("meshnav/error", "node_error"))
            return result, code
        except NavigatorError as error:
            code = error.code
            return error_answer(error), code
        except RegistryError as error:
            translated = from_registry(error)
            code = translated.code
            return error_answer(translated), code
        except Exception as error:  # FastMCP's own failures echo their input: never pass them on
            code = "internal_error"
            logger.error("walker tool %s failed: %s", tool, type(error).__name__)
            return error_answer(NavigatorError()), code
        finally:
            elapsed = time.perf_counter() - started
            METRICS.observe_tool(tool, code, elapsed)
            logger.debug("%s -> %s in %.1f ms", tool, code, elapsed * 1000)
