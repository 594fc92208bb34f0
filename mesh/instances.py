"""A node instance's identity, as both ends of the wire know it (SPEC §6, ADR 0050).

A node makes an instance id at its start: random, not a secret — it vouches for nothing, it only
tells one run of a machine's node from another. The node names it when it registers, heartbeats,
pushes and stops, and answers it, unauthenticated, at ``INSTANCE_PATH``: the navigator asks there
whether the instance registered for a machine still answers before it lets another take over.
At ``READY_PATH`` it answers whether it has registered yet: 200 once it has, 503 before — what a
service manager's health check waits on (compose.yaml's nodes), so that the mesh it starts is
the mesh a first search finds.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = [
    "INSTANCE_BYTES",
    "INSTANCE_PATH",
    "READY_PATH",
    "instance_route",
    "new_instance",
    "ready_route",
]

#: Where a node answers its instance id: ``{"instance": ID}``.
INSTANCE_PATH = "/meshnav/instance"
#: Where a node answers whether it has registered: 200 ``{"ready": true}`` or 503.
READY_PATH = "/meshnav/ready"
#: The longest instance id, in characters (the registry's column).
INSTANCE_BYTES = 64

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def new_instance() -> str:
    """A new instance id: 128 random bits, URL-safe text."""
    return secrets.token_urlsafe(16)


def instance_route(instance: str) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An ASGI app answering a GET with ``instance`` (anything else: 405), nothing cached."""
    body = json.dumps({"instance": instance}).encode()
    return _get_route(lambda: (200, body))


def ready_route(ready: Callable[[], bool]) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An ASGI app answering a GET with 200 once ``ready()`` (the node has registered), else
    503; anything else: 405."""
    return _get_route(lambda: (200, b'{"ready": true}') if ready() else (503, b'{"ready": false}'))


def _get_route(
    answer: Callable[[], tuple[int, bytes]],
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """An ASGI app answering a GET or HEAD with ``answer()`` as JSON, nothing cached."""

    async def respond(scope: Scope, receive: Receive, send: Send) -> None:
        allowed = scope.get("method") in ("GET", "HEAD")
        status, body = answer() if allowed else (405, b"")
        headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
        if not allowed:
            headers = [(b"allow", b"GET, HEAD")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return respond
