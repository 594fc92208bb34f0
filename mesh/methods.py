"""Every MCP server of meshnav's answer to a method it does not serve: JSON-RPC's -32601, its
``data`` a SPEC §9 body the server chose. The MCP SDK's own answer names the method in its
``data`` (``mcp.server.runner``), and a method is whatever the client sent (SPEC §9: no error
repeats what was sent).

FastMCP runs a middleware's ``on_request`` around the SDK's dispatch of every request, on both
protocol eras, those it has no handler for included (``fastmcp.server.low_level``'s outer pass),
so the SDK's refusal passes here on its way out. Public names only: FastMCP's ``Middleware`` and
the SDK's ``MCPError``.
"""

from __future__ import annotations

from typing import Any

import mcp_types as mt
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from mcp.shared.exceptions import MCPError

__all__ = ["UnknownMethods"]


class UnknownMethods(Middleware):
    """Answers "Method not found" with ``body`` as its data, in place of the method's name."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    async def on_request(
        self,
        context: MiddlewareContext[mt.Request[Any, Any]],
        call_next: CallNext[mt.Request[Any, Any], Any],
    ) -> Any:
        try:
            return await call_next(context)
        except MCPError as error:
            if error.code != mt.METHOD_NOT_FOUND:
                raise
            raise MCPError(mt.METHOD_NOT_FOUND, "Method not found", dict(self.body)) from None
