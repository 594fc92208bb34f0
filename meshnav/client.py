"""The CLI's way in: the navigator's own MCP tools, the admin API, or the registry directly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from meshnav.errors import CommandError

__all__ = ["CommandError", "admin_request", "mcp_session", "walker_call"]


@asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[Client[StreamableHttpTransport]]:
    transport = StreamableHttpTransport(
        url.rstrip("/") + "/mcp", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        async with Client(transport, timeout=60) as client:
            yield client
    except httpx.HTTPStatusError as error:
        raise CommandError(_http_message(error.response)) from None
    except httpx.HTTPError:
        raise CommandError(f"cannot reach the navigator at {url}") from None


async def walker_call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """Call one walker tool; a navigator error becomes a ``CommandError`` with its code."""
    async with mcp_session(url, token) as client:
        result = await client.call_tool_mcp(tool, arguments)
    structured = result.structured_content
    if result.is_error:
        if isinstance(structured, dict) and "error" in structured:
            extra = f" (confirm token: {structured['confirm']})" if "confirm" in structured else ""
            raise CommandError(f"{structured['error']}: {structured.get('message', '')}{extra}")
        text = " ".join(getattr(block, "text", "") for block in result.content)
        raise CommandError(f"the tool answered with an error: {text[:500]}")
    if tool == "call":
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return structured


def _http_message(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"{body['error']}: {body['message']}"
    except (ValueError, KeyError, TypeError):
        return f"the navigator answered HTTP {response.status_code}"


async def admin_request(
    url: str, token: str, method: str, path: str, body: dict[str, Any] | None = None
) -> Any:
    async with httpx.AsyncClient(
        base_url=url.rstrip("/") + "/api/v1",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
        trust_env=False,
    ) as http:
        try:
            response = await http.request(method, path, json=body)
        except httpx.HTTPError:
            raise CommandError(f"cannot reach the navigator at {url}") from None
    if response.status_code >= 400:
        raise CommandError(_http_message(response))
    return json.loads(response.content or b"null")
