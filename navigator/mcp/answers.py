"""Walker answers on the wire: structured content plus the same JSON as text.

Their size is measured apart from MCP's types, in ``navigator.walker.sizing``: the walker bounds
its answers with it, and the text written here is the one it measures (``compact``).
"""

from __future__ import annotations

from typing import Any

from fastmcp.tools.base import ToolResult
from mcp_types import TextContent

from navigator.errors import ERROR_META_KEY, NavigatorError, error_body
from navigator.walker.sizing import compact

__all__ = ["answer", "error_answer"]


def answer(structured: dict[str, Any], meta: dict[str, Any] | None = None) -> ToolResult:
    return ToolResult(
        content=[TextContent(type="text", text=compact(structured))],
        structured_content=structured,
        meta=meta,
    )


def error_answer(error: NavigatorError) -> ToolResult:
    body = error_body(error)
    return ToolResult(
        content=[TextContent(type="text", text=compact(body))],
        structured_content=body,
        meta={ERROR_META_KEY: error.code},
        is_error=True,
    )
