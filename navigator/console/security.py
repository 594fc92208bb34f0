"""The console's browser-facing protections, in one place: the headers every console answer carries
(a Content-Security-Policy that loads nothing from outside the navigator, no framing, no sniffing,
no caching of pages) and the same-origin check that guards the console's POSTs against login CSRF.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

__all__ = ["CONTENT_SECURITY_POLICY", "ConsoleHeadersMiddleware", "is_same_origin"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Everything from the navigator itself; no inline script or style, no plugins, no framing.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; "
    "object-src 'none'"
)
STATIC_PREFIX = "/console/static/"

_ALWAYS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # not "no-referrer": with it, browsers send ``Origin: null`` on the console's own form posts
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


class ConsoleHeadersMiddleware:
    """Adds the console's security headers to every console answer, streamed ones included.

    Pages and data are never cached (they show what one viewer may see); static assets set their
    own caching. Pure ASGI, so server-sent events pass through unbuffered.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        static = str(scope.get("path", "")).startswith(STATIC_PREFIX)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (name, value)
                    for name, value in message.get("headers", [])
                    if name.lower() not in {h for h, _ in _ALWAYS}
                ]
                headers.extend(_ALWAYS)
                if not static and not any(n.lower() == b"cache-control" for n, _ in headers):
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def is_same_origin(request: Request) -> bool:
    """A browser's POST comes from a console page: ``Origin`` (when sent) names this host — as the
    request says it, or as a reverse proxy forwarded it — and ``Sec-Fetch-Site`` (when sent) does
    not say cross-site. A page on another site can set none of these headers. Missing headers are
    allowed: only browsers send them, and only browsers carry a victim's session."""
    hosts = {request.headers.get("host", "").lower()}
    forwarded = request.headers.get("x-forwarded-host")
    if forwarded:
        hosts.add(forwarded.split(",")[0].strip().lower())
    origin = request.headers.get("origin")
    if origin is not None:
        if origin == "null":
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.netloc.lower() not in hosts - {""}:
            return False
    fetch_site = request.headers.get("sec-fetch-site")
    return fetch_site is None or fetch_site in ("same-origin", "none")
