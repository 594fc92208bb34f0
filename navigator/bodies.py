"""Request bodies read no further than a bound, for every route that reads one (the admin and node
APIs, the console's forms): a body announced or streamed past it is dropped before it is held."""

from __future__ import annotations

from starlette.requests import ClientDisconnect, Request

from navigator.numbers import whole_number

__all__ = ["read_bounded"]


async def read_bounded(request: Request, limit: int) -> bytes | None:
    """The whole body, or ``None`` as soon as it is known to be longer than ``limit`` bytes, or
    when the client goes away before sending it all (nobody is left to read the answer; it is
    not an error of ours to log)."""
    declared = request.headers.get("content-length")
    if declared is not None and whole_number(declared, most=limit) is None:
        return None  # announced past the bound (or not a length at all)
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)
    except ClientDisconnect:
        return None
    return b"".join(chunks)
