"""A module's tool list as the node registers it, and why a module could not give one (ADR 0057):
the few words an operator acts on — ``connection refused``, ``401``, ``timeout`` — never the
error's text, which may carry a URL's secret.
"""

from __future__ import annotations

from typing import Any

import httpx

from mesh.errors import error_chain
from mesh.server import Assignment

__all__ = ["listing_cause", "tools_list"]


async def tools_list(assignment: Assignment) -> list[dict[str, Any]]:
    """The assignment's ``tools/list`` as JSON, as its server would answer it (read past the
    middleware that lists nothing to clients: ``CallTokenMiddleware``)."""
    tools = await assignment.server.list_tools(run_middleware=False)
    return [
        tool.to_mcp_tool().model_dump(by_alias=True, exclude_none=True, mode="json")
        for tool in sorted(tools, key=lambda t: t.name)
    ]


def listing_cause(error: BaseException, refused: int | None = None) -> str:
    """Why a module's server could not list its tools, in a few words an operator acts on:
    ``connection refused``, ``401`` (``refused``: the status an upstream refused with), ``timeout``;
    else the kind of error. Never its text, which may carry a URL's secret."""
    if refused is not None:
        return str(refused)
    for found in error_chain(error):
        if isinstance(found, ConnectionRefusedError | httpx.ConnectError):
            return "connection refused"
        if isinstance(found, TimeoutError | httpx.TimeoutException):
            return "timeout"
        if isinstance(found, httpx.HTTPStatusError):
            return str(found.response.status_code)
    return f"failed ({type(error).__name__})"
