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

import mcp_types as mt
from fastmcp.server.dependencies import get_http_request
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult

from navigator.answers import error_answer
from navigator.auth import caller_from_scope
from navigator.errors import (
    InvalidArguments,
    NavigatorError,
    Unauthenticated,
    UnknownTool,
    from_registry,
)
from navigator.grants import Caller
from navigator.metrics import METRICS
from registry import RegistryError

__all__ = ["CallerMiddleware", "current_caller"]

logger = logging.getLogger("meshnav.navigator.calls")

_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "meshnav_caller", default=None
)


def current_caller() -> Caller:
    """The caller of the tool being run; missing context means deny."""
    caller = _caller.get()
    if caller is None:
        raise Unauthenticated()
    return caller


class CallerMiddleware(Middleware):
    def __init__(self, walker_names: set[str], fixed_caller: Caller | None = None) -> None:
        self.walker_names = walker_names
        self.fixed_caller = fixed_caller

    def _resolve(self) -> Caller:
        if self.fixed_caller is not None:
            return self.fixed_caller
        try:
            request = get_http_request()
        except RuntimeError:
            raise Unauthenticated() from None
        return caller_from_scope(request.scope)

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        started = time.perf_counter()
        name = context.message.name
        tool = name if name in self.walker_names else "unknown"
        code = "ok"
        try:
            if name not in self.walker_names:
                raise UnknownTool("The navigator offers only seats, search, describe and call.")
            if not isinstance(context.message.arguments or {}, dict):
                raise InvalidArguments()
            token = _caller.set(self._resolve())
            try:
                result = await call_next(context)
            finally:
                _caller.reset(token)
            if result.is_error and isinstance(result.meta, dict):
                code = str(result.meta.get("meshnav/error", "node_error"))
            return result
        except NavigatorError as error:
            code = error.code
            return error_answer(error)
        except RegistryError as error:
            translated = from_registry(error)
            code = translated.code
            return error_answer(translated)
        except Exception as error:  # FastMCP's own failures echo their input: never pass them on
            code = "internal_error"
            logger.error("walker tool %s failed: %s", tool, type(error).__name__)
            return error_answer(NavigatorError())
        finally:
            elapsed = time.perf_counter() - started
            METRICS.observe_tool(tool, code, elapsed)
            logger.debug("%s -> %s in %.1f ms", tool, code, elapsed * 1000)
