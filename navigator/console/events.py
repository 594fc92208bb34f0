"""Live updates: ``GET /console/events``, a server-sent-events stream fed by the catalogue.

The stream says only *that* the mesh changed (a registration, a tool change, a retirement, a
machine that stopped or started answering) and of which kind — never which machine, since the
viewer may not be allowed to see it. The catalogue announces a machine that went silent as soon
as its follower notices (within a second). The page then fetches its own fragment again, which
applies the viewer's grants. Bursts are merged into one notice. The viewer's token is
authenticated again before every notice and keep-alive, so a revoked token ends the stream
within one keep-alive.
sse-starlette ends open streams when the server shuts down, so an open console never holds up a
restart.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from navigator.catalog import Catalog, CatalogEvent
from navigator.console.session import authenticate_viewer, unauthenticated_json
from navigator.errors import NavigatorError, Unauthenticated
from navigator.services import services

__all__ = ["KEEPALIVE_S", "stream"]

#: Between keep-alives (and re-authentications) on a quiet stream.
KEEPALIVE_S = 15.0
#: Changes arriving this soon after one another become one notice.
SETTLE_S = 0.15
#: How soon a viewer is checked again when the registry could not be read.
RECHECK_S = 1.0
#: How long a browser waits before reconnecting a dropped stream.
RETRY_MS = 2000


async def _next_change(queue: asyncio.Queue[CatalogEvent], wait: float) -> set[str]:
    """The kinds of change in the next burst; empty when the stream stayed quiet ``wait`` s."""
    kinds: set[str] = set()
    with anyio.move_on_after(wait):
        kinds.add((await queue.get()).kind)
    if kinds:
        await anyio.sleep(SETTLE_S)
        while not queue.empty():
            kinds.add(queue.get_nowait().kind)
    return kinds


async def _notices(request: Request, catalog: Catalog) -> AsyncIterator[ServerSentEvent]:
    queue = catalog.subscribe()
    pending: set[str] = set()  # changes not yet announced: the viewer could not be checked
    try:
        yield ServerSentEvent(comment="meshnav console events", retry=RETRY_MS)
        while True:
            # a change held back is announced once the viewer can be checked: try again soon
            kinds = pending | await _next_change(queue, RECHECK_S if pending else KEEPALIVE_S)
            try:
                await authenticate_viewer(request)
            except Unauthenticated:
                yield ServerSentEvent(event="signed-out", data="{}")
                return
            except NavigatorError:  # the registry cannot be read now: not a sign-out
                pending = kinds
                yield ServerSentEvent(comment="keep-alive")
                continue
            pending = set()
            if kinds:
                yield ServerSentEvent(event="change", data=json.dumps({"kinds": sorted(kinds)}))
            else:
                yield ServerSentEvent(comment="keep-alive")
    finally:
        catalog.unsubscribe(queue)


async def stream(request: Request) -> Response:
    try:
        await authenticate_viewer(request)
    except NavigatorError as error:
        return unauthenticated_json(error)
    return EventSourceResponse(
        _notices(request, services(request).catalog),
        ping=0,
        headers={"cache-control": "no-store"},
    )
