"""Live updates: ``GET /console/events``, a server-sent-events stream fed by the catalogue.

The stream says only *that* the mesh changed (a registration, a tool change, a retirement, a
machine that stopped or started answering, the viewer's own grants) and of which kind — never
which machine, since the viewer may not be allowed to see it. The catalogue announces a machine
that went silent as soon as its follower notices (within a second). The page then fetches its
own fragment again, which applies the viewer's grants. Bursts are merged into one notice. The
viewer's token is authenticated again before every notice and keep-alive, so a revoked token
ends the stream within one keep-alive; the grant rows that apply to the viewer are compared then
too (an operator's, any grant row: their grants page lists them all), so a grant taken away or
given changes the page by the next keep-alive, though the catalogue did not move.
sse-starlette ends open streams when the server shuts down, so an open console never holds up a
restart.

Each open stream is woken, and its viewer authenticated again, on every change, so how many are
open bounds that work: a viewer holds at most ``STREAMS_PER_VIEWER`` (a few tabs) and all viewers
together ``STREAMS``; past either, the stream is refused with ``too_many_streams`` (429), and the
page stays as it is until reloaded. 6,000 streams of one token had held the navigator's other
requests up for 7.7 s after each change.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from navigator.access.grants import Caller
from navigator.access.tokens import ADMIN_SCOPE
from navigator.catalog.live_views import CatalogEvent
from navigator.catalog.registry_reads import short_read
from navigator.catalog.view import Catalog
from navigator.console.session import authenticate_viewer, error_json
from navigator.errors import NavigatorError, TooManyStreams, Unauthenticated, from_registry
from navigator.limits import LIMITS
from navigator.services import services
from registry import GrantSnapshot, RegistryError, read_snapshot

__all__ = ["STREAMS", "STREAMS_PER_VIEWER", "EventStreams"]

#: Changes arriving this soon after one another become one notice.
SETTLE_S = 0.15
#: How soon a viewer is checked again when the registry could not be read.
RECHECK_S = 1.0
#: How long a browser waits before reconnecting a dropped stream.
RETRY_MS = 2000
#: Open streams one viewer may hold, and all viewers together.
STREAMS_PER_VIEWER = 8
STREAMS = 256


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


async def _viewer_now(request: Request) -> tuple[Caller, str]:
    """The signed-in viewer, authenticated now, and a fingerprint of what their grants let a page
    show: their scopes and the grant rows that apply to them (ids and revisions) — for an
    operator, whose grants page lists every row, the registry's grant revision as well. Hashed
    from the rows as read, not compiled: it is taken for every open stream on every change."""
    caller = await authenticate_viewer(request)
    try:
        snapshot = await _grant_rows(request, caller)
    except RegistryError as error:
        raise from_registry(error) from None
    seen = sorted(caller.scopes)
    if snapshot is not None:  # too many rows apply: every page refuses them, none changes
        seen += [f"{row.id}:{row.revision}" for row in snapshot.rows]
        if ADMIN_SCOPE in caller.scopes:
            seen.append(f"revision {snapshot.revision}")
    return caller, hashlib.sha256("\n".join(seen).encode()).hexdigest()


async def _grant_rows(request: Request, caller: Caller) -> GrantSnapshot | None:
    """The grant rows that apply to the viewer: those their token was read with, or, for a JWT's
    viewer, read now."""
    if caller.grants is not None:
        return caller.grants
    registry = services(request).registry
    return await short_read(
        registry,
        lambda: read_snapshot(registry, caller.principal, caller.scopes, limit=LIMITS.grant_rows),
    )


async def _notices(
    request: Request, catalog: Catalog, grants: str
) -> AsyncIterator[ServerSentEvent]:
    keepalive_s = services(request).limits.console_keepalive_s
    queue = catalog.subscribe()
    pending: set[str] = set()  # changes not yet announced: the viewer could not be checked
    try:
        yield ServerSentEvent(comment="meshnav console events", retry=RETRY_MS)
        while True:
            # a change held back is announced once the viewer can be checked: try again soon
            kinds = pending | await _next_change(queue, RECHECK_S if pending else keepalive_s)
            try:
                _, seen = await _viewer_now(request)
            except Unauthenticated:
                yield ServerSentEvent(event="signed-out", data="{}")
                return
            except NavigatorError:  # the registry cannot be read now: not a sign-out
                pending = kinds
                yield ServerSentEvent(comment="keep-alive")
                continue
            if seen != grants:  # a grant row moved: what their pages show may have
                grants = seen
                kinds.add("grants")
            pending = set()
            if kinds:
                yield ServerSentEvent(event="change", data=json.dumps({"kinds": sorted(kinds)}))
            else:
                yield ServerSentEvent(comment="keep-alive")
    finally:
        catalog.unsubscribe(queue)


class _HeldStream(EventSourceResponse):
    """An event stream that gives its slot back when it ends, however it ends."""

    def __init__(self, notices: AsyncIterator[ServerSentEvent], release: Callable[[], None]):
        super().__init__(notices, ping=0, headers={"cache-control": "no-store"})
        self._release = release

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._release()


class EventStreams:
    """``GET /console/events`` for one app, with its open streams counted per viewer and in all
    (on one event loop: no lock)."""

    def __init__(self, *, per_viewer: int = STREAMS_PER_VIEWER, total: int = STREAMS) -> None:
        self.per_viewer = per_viewer
        self.total = total
        self._open: Counter[str] = Counter()

    async def stream(self, request: Request) -> Response:
        try:
            caller, grants = await _viewer_now(request)
        except NavigatorError as error:
            return error_json(error)
        viewer = caller.principal
        if self._open[viewer] >= self.per_viewer or self._open.total() >= self.total:
            return error_json(TooManyStreams())
        self._open[viewer] += 1
        return _HeldStream(
            _notices(request, services(request).catalog, grants), lambda: self._give_back(viewer)
        )

    def _give_back(self, viewer: str) -> None:
        self._open[viewer] -= 1
        if not self._open[viewer]:
            del self._open[viewer]
