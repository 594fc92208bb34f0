"""The CLI's way in: the navigator's own MCP tools, the admin API, or the registry directly."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Generator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from mcp.shared.exceptions import MCPError

from meshnav.errors import CREDENTIAL_FLAG, CommandError
from navigator.api import API_PREFIX

__all__ = [
    "CommandError",
    "admin_request",
    "error_line",
    "mcp_session",
    "walker_call",
]


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
            self.refusal = _http_error(response)


def _navigator(url: str, token: str) -> tuple[str, CommandError]:
    """The navigator's base URL, checked, and the error that says it cannot be reached (without
    any password the URL holds). The MCP endpoint's URL is taken for its base. A token must be
    given: an empty one is no credential."""
    if not token:
        raise CommandError(f"{CREDENTIAL_FLAG} is missing")
    try:
        parsed = httpx.URL(url)
        port = parsed.port
    except (httpx.InvalidURL, ValueError):
        parsed, port = None, None
    if (
        parsed is None
        or parsed.scheme not in ("http", "https")
        or not parsed.host
        or not (port is None or 0 < port < 65536)
    ):
        raise CommandError(
            "the navigator URL must be http:// or https:// with a host and a port 1-65535"
        )
    if parsed.path.rstrip("/").endswith("/mcp"):  # the MCP URL the demo prints: its base
        parsed = parsed.copy_with(path=parsed.path.rstrip("/").removesuffix("/mcp") or "/")
    shown = parsed.copy_with(username=None, password=None)
    return str(parsed).rstrip("/"), CommandError(f"cannot reach the navigator at {shown}")


@asynccontextmanager
async def mcp_session(url: str, token: str) -> AsyncIterator[Client[StreamableHttpTransport]]:
    """A session with the navigator's MCP endpoint; a refusal or an unreachable navigator is a
    ``CommandError`` of one line."""
    base, unreachable = _navigator(url, token)
    bearer = _Bearer(token)
    transport = StreamableHttpTransport(base + "/mcp", auth=bearer)
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


async def walker_call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> Any:
    """Call one walker tool; a navigator error becomes a ``CommandError`` with its code."""
    async with mcp_session(url, token) as client:
        result = await client.call_tool_mcp(tool, arguments)
    structured = result.structured_content
    if result.is_error:
        if isinstance(structured, dict) and "error" in structured:
            raise CommandError(error_line(structured), structured)
        text = " ".join(getattr(block, "text", "") for block in result.content)
        raise CommandError(f"the tool answered with an error: {text[:500]}")
    if tool == "call":
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return structured


def error_line(body: dict[str, Any]) -> str:
    """A §9 body as one line: its code and message, then where (the pointer and the schema
    keyword of ``invalid_arguments``) and the confirm token of ``confirmation_required``."""
    line = f"{body['error']}: {body['message']}"
    where = [f"pointer {body['pointer']!r}"] if "pointer" in body else []
    where += [f"keyword {body['keyword']!r}"] if "keyword" in body else []
    if where:
        line += f" ({', '.join(where)})"
    if "confirm" in body:
        line += f" (confirm token: {body['confirm']})"
    return line


def _http_error(response: httpx.Response | httpx2.Response) -> CommandError:
    try:
        body = response.json()
        return CommandError(error_line(body), body)
    except (ValueError, KeyError, TypeError):
        return CommandError(f"the navigator answered HTTP {response.status_code}")


async def admin_request(
    url: str,
    token: str,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    params: dict[str, str] | None = None,
) -> Any:
    """One admin API request. ``path`` is the API's own; names in it are quoted by the caller
    (``quote(name, safe="")``), and query values go in ``params``, never into the path."""
    base, unreachable = _navigator(url, token)
    async with httpx.AsyncClient(
        base_url=base + API_PREFIX,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
        trust_env=False,
    ) as http:
        try:
            response = await http.request(method, path, json=body, params=params)
        except httpx.HTTPError:
            raise unreachable from None
    if response.status_code >= 400:
        raise _http_error(response)
    return json.loads(response.content or b"null")
