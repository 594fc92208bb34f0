"""The CLI's way in over HTTP: the navigator's URL checked, the admin API, and its errors as one
line. The MCP session for the walker tools is ``meshnav.walker``; this module loads no MCP client,
so the commands that do not walk start quickly."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx

from meshnav.errors import CREDENTIAL_FLAG, CommandError
from navigator.api import API_PREFIX

if TYPE_CHECKING:
    import httpx2

__all__ = ["admin_request", "error_line", "http_error", "navigator_base"]


def navigator_base(url: str, token: str) -> tuple[str, CommandError]:
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
    if isinstance(body.get("retryAfterS"), int | float):  # rate_limited: when to try again
        line += f" (retry after {body['retryAfterS']} s)"
    return line


def http_error(response: httpx.Response | httpx2.Response) -> CommandError:
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
    base, unreachable = navigator_base(url, token)
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
    if not response.is_success:  # a redirect (a proxy sending http to https) is no answer either
        raise http_error(response)
    try:
        return json.loads(response.content or b"null")
    except ValueError:  # a page from whatever else answers at that URL
        raise CommandError("the navigator answered with something other than JSON") from None
