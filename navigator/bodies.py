"""Request bodies read no further than a bound, for every route that reads one (the admin and node
APIs, the console's forms): a body announced or streamed past it is dropped before it is held."""

from __future__ import annotations

from starlette.requests import Request

__all__ = ["read_bounded"]


async def read_bounded(request: Request, limit: int) -> bytes | None:
    """The whole body, or ``None`` as soon as it is known to be longer than ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
