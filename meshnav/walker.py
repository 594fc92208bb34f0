"""The navigator's walker tools over MCP, as the command line calls them: a session that carries
the token and says in one line why it failed, one call, and the mesh listed two levels deep."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from meshnav.client import error_line, http_error, navigator_base
from meshnav.errors import CommandError

__all__ = ["mcp_session", "mesh_listing", "walker_call"]


class _Bearer(httpx2.Auth):
    """The token on every request of an MCP session, and the navigator's word when it refuses
    one: the MCP client reports an HTTP error status only as "Server returned an error
    response", without the §9 body that says why."""

    requires_response_body = True

    def __init__(self, token: str) -> None:
        self._header = f"Bearer {token}"
        self.refusal: CommandError | None = None

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        request.headers["Authorization"] = self._header
        response = yield request
        if response.status_code >= 400 and self.refusal is None:
            self.refusal = http_error(response)


@asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[Client[StreamableHttpTransport]]:
    """A session with the navigator's MCP endpoint; a refusal or an unreachable navigator is a
    ``CommandError`` of one line."""
    base, unreachable = navigator_base(url, token)
    bearer = _Bearer(token)
    transport = StreamableHttpTransport(base + "/mcp", auth=bearer)
    # The SDK logs lines of its own on a failure ("Unexpected content type: text/html") before
    # the one line this session says; a command's error is that line alone (SPEC §13).
    sdk = logging.getLogger("mcp.client")
    level = sdk.level
    sdk.setLevel(logging.CRITICAL)
    try:
        async with Client(transport, timeout=60) as client:
            yield client
    except MCPError:
        raise bearer.refusal or CommandError("the navigator answered with an error") from None
    except httpx2.TransportError:
        raise unreachable from None
    except RuntimeError as error:  # FastMCP's "failed to connect", raised from the transport's
        if isinstance(error.__cause__, httpx2.TransportError):
            raise unreachable from None
        raise
    finally:
        sdk.setLevel(level)


async def walker_call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """Call one walker tool; a navigator error becomes a ``CommandError`` with its code."""
    async with mcp_session(url, token) as client:
        result = await client.call_tool_mcp(tool, arguments)
    structured = result.structured_content
    if result.is_error:
        if isinstance(structured, dict) and "error" in structured:
            raise CommandError(error_line(structured), structured)
        # a node's own error: one line however its text runs, and with --json its answer whole
        text = " ".join(" ".join(getattr(block, "text", "").split()) for block in result.content)
        answer = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        raise CommandError(f"the tool answered with an error: {text[:500]}", answer)
    if tool == "call":
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return structured


async def _seats(client: Any, address: str | None) -> dict[str, Any]:
    """Every page of one seats listing."""
    arguments: dict[str, Any] = {} if address is None else {"address": address}
    listing: dict[str, Any] | None = None
    while True:
        result = await client.call_tool_mcp("seats", arguments)
        page = result.structured_content or {}
        if result.is_error:
            raise CommandError(error_line(page), page)
        if listing is None:
            listing = page
        else:
            listing["entries"] += page["entries"]
        if "nextCursor" not in page:
            listing.pop("nextCursor", None)
            return listing
        arguments["cursor"] = page["nextCursor"]


async def mesh_listing(url: str, token: str, address: str | None) -> dict[str, Any]:
    """The mesh (or one prefix of it) two levels deep, as the caller may see it: ``seats`` of
    the address, and of each machine, seat and assignment in it under that entry's
    ``entries``."""
    async with mcp_session(url, token) as client:
        top = await _seats(client, address)
        for entry in top["entries"]:
            if entry["kind"] in ("machine", "seat", "assignment", "node seat"):
                entry["entries"] = (await _seats(client, entry["address"]))["entries"]
    return top
