"""The Host/Origin guard on /mcp: FastMCP's verdicts, each distinct request shape judged once."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware

from navigator.app import ADMITTED_MAX, RememberedHostOrigin, _remember_host_origin

Message = dict[str, Any]


def _scope(host: bytes | None, origin: bytes | None = None) -> dict[str, Any]:
    headers = [(b"accept", b"application/json")]
    if host is not None:
        headers.append((b"host", host))
    if origin is not None:
        headers.append((b"origin", origin))
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "headers": headers,
    }


async def _through(guard: RememberedHostOrigin, scope: dict[str, Any]) -> int:
    """The status the guard answered, or 200 when it passed the request on."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    return int(sent[0]["status"])


async def _inner(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def test_same_verdicts_as_fastmcp_and_refusals_judged_every_time() -> None:
    guard = RememberedHostOrigin(_inner, allowed_hosts=None, allowed_origins=None, mode="auto")
    for _ in range(2):
        assert await _through(guard, _scope(b"127.0.0.1:8000")) == 200
        assert await _through(guard, _scope(b"localhost:8000", b"http://localhost:3000")) == 200
        assert await _through(guard, _scope(b"evil.example")) == 421
        assert await _through(guard, _scope(b"127.0.0.1:8000", b"http://evil.example")) == 403
    assert len(guard.admitted) == 2  # only passes are remembered


async def test_remembers_a_bounded_number_of_shapes() -> None:
    guard = RememberedHostOrigin(_inner, allowed_hosts=["*"], allowed_origins=None, mode="auto")
    for n in range(ADMITTED_MAX + 10):
        assert await _through(guard, _scope(f"host{n}.example".encode())) == 200
    assert len(guard.admitted) == ADMITTED_MAX


def test_replaces_fastmcps_guard_with_the_same_options() -> None:
    from fastmcp.server.http import HostOriginGuardMiddleware

    options = {"allowed_hosts": ["a.example"], "allowed_origins": None, "mode": "auto"}
    app = Starlette(middleware=[Middleware(HostOriginGuardMiddleware, **options)])
    _remember_host_origin(app)
    [entry] = app.user_middleware
    assert entry.cls is RememberedHostOrigin  # type: ignore[comparison-overlap]
    assert entry.kwargs == options
