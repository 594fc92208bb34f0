"""What the navigator reads of a node (or of a server registered by URL) that answers without end:
never much past the answer limit, in either protocol era, before ``node_answer_too_large``.

The node here is a real FastMCP app whose ``tools/call`` (or ``tools/list``) answer is replaced by
16 MiB of one JSON string; what the navigator pulled off the connection is counted under its
own bound, at the HTTP transport every client of the navigator uses."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest

from navigator.catalog.upstream import pull_tools
from navigator.errors import NodeAnswerTooLarge
from navigator.limits import LIMITS
from navigator.nodes.connections import NodeConnections
from tests.harness import serving
from tests.navigator.nodes.test_nodes import _legacy_only, _node

Scope = dict[str, Any]

STREAMED = 16 << 20
CHUNK = 256 << 10
#: What the navigator may read: the limit and the envelope's room, and the chunk it stopped in.
READ_AT_MOST = LIMITS.node_answer_bytes + LIMITS.envelope_bytes + CHUNK


def _answering_without_end(
    app: Any, method: bytes, *, declared: bool = False, redirected: bool = False
) -> Any:
    """``app``, but a ``method`` request (other than the opening echo) is answered with
    ``STREAMED`` bytes of JSON; with ``declared``, its ``Content-Length`` says so up front; with
    ``redirected``, they are the body of a same-origin redirect labelled an event stream, and the
    request it sends on is answered as ever."""

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        if b'"method":"' + method + b'"' not in body.replace(b" ", b"") or b'"open"' in body:
            return await app(scope, replay, send)
        if redirected:
            if scope.get("query_string") == b"again=1":
                return await app({**scope, "query_string": b""}, replay, send)
            headers = [(b"location", b"/mcp?again=1"), (b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 307, "headers": headers})
            for _ in range(STREAMED // CHUNK):
                comment = b": " + b"x" * (CHUNK - 3) + b"\n"
                await send({"type": "http.response.body", "body": comment, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return None
        request_id = json.loads(body)["id"]
        head = b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"' % request_id
        tail = b'"}],"tools":[]}}'
        headers = [(b"content-type", b"application/json")]
        if declared:
            headers.append((b"content-length", b"%d" % (len(head) + STREAMED + len(tail))))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": head, "more_body": True})
        for _ in range(STREAMED // CHUNK):
            await send({"type": "http.response.body", "body": b"x" * CHUNK, "more_body": True})
        await send({"type": "http.response.body", "body": tail})
        return None

    return wrapped


@pytest.fixture
def bodies_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes of each response body the navigator's HTTP clients pulled off a connection."""
    counts: list[int] = []
    handle = httpx2.AsyncHTTPTransport.handle_async_request

    class Counted(httpx2.AsyncByteStream):
        def __init__(self, stream: Any) -> None:
            self._stream, self._index = stream, len(counts)
            counts.append(0)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._stream:
                counts[self._index] += len(chunk)
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    async def counted(self: Any, request: httpx2.Request) -> httpx2.Response:
        response = await handle(self, request)
        response.stream = Counted(response.stream)
        return response

    monkeypatch.setattr(httpx2.AsyncHTTPTransport, "handle_async_request", counted)
    return counts


@asynccontextmanager
async def _node_answering_without_end(
    method: bytes, *, legacy: bool = False, declared: bool = False, redirected: bool = False
) -> AsyncIterator[str]:
    app = _node().http_app(path="/mcp")
    inner = _legacy_only(app) if legacy else app
    answering = _answering_without_end(inner, method, declared=declared, redirected=redirected)
    async with serving(answering, lifespan="on") as port:
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.mark.parametrize("declared", [False, True], ids=["streamed", "declared"])
@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
async def test_a_node_answering_without_end_is_read_to_the_limit_only(
    bodies_read: list[int], legacy: bool, declared: bool
) -> None:
    """The legacy era's session read a JSON answer whole, then measured it: 1.5 GiB read, the
    loop blocked parsing it, the deadline broken. Now no body is read past the limit, and one
    whose ``Content-Length`` is past it is not read at all."""
    async with _node_answering_without_end(b"tools/call", legacy=legacy, declared=declared) as url:
        nodes = NodeConnections()
        try:
            opened = await nodes.call(url, "echo", {"text": "open"}, token=None, deadline_s=30)
            assert opened.structured_content == {"text": "open"}
            bodies_read.clear()
            started = time.monotonic()
            with pytest.raises(NodeAnswerTooLarge):
                await nodes.call(url, "echo", {"text": "x"}, token=None, deadline_s=30)
            elapsed, read = time.monotonic() - started, list(bodies_read)
            again = await nodes.call(url, "echo", {"text": "open"}, token=None, deadline_s=30)
        finally:
            await nodes.close()
    assert again.structured_content == {"text": "open"}  # the client, and its session, live on
    assert elapsed < 10
    assert read and max(read) <= (0 if declared else READ_AT_MOST), read


async def test_a_redirect_labelled_an_event_stream_is_read_to_the_limit_only(
    bodies_read: list[int],
) -> None:
    """A review: any body labelled an event stream went unbounded, but the SDK reads a same-origin
    redirect's body whole before following it — 512 MiB read, and the call then answered. Only
    a 200 to a GET or POST, which the event reader reads event by event, goes unbounded. (The
    legacy era's session follows redirects through the same code and the same transport; there
    the refusal reaches the navigator as a failed session, ``node_unavailable``: ADR 0018.)"""
    async with _node_answering_without_end(b"tools/call", redirected=True) as url:
        nodes = NodeConnections()
        try:
            await nodes.call(url, "echo", {"text": "open"}, token=None, deadline_s=30)
            bodies_read.clear()
            with pytest.raises(NodeAnswerTooLarge):
                await nodes.call(url, "echo", {"text": "x"}, token=None, deadline_s=30)
            read = list(bodies_read)
        finally:
            await nodes.close()
    assert read and max(read) <= READ_AT_MOST, read


async def test_a_server_listing_its_tools_without_end_is_read_to_the_limit_only(
    bodies_read: list[int],
) -> None:
    """Registering a server by URL read its ``tools/list`` answer whole, too."""
    async with _node_answering_without_end(b"tools/list") as url:
        with anyio.fail_after(10), pytest.raises(NodeAnswerTooLarge):
            await pull_tools(url)
    assert bodies_read and max(bodies_read) <= READ_AT_MOST, bodies_read


async def test_a_coded_answer_is_refused_unread(bodies_read: list[int]) -> None:
    """Bodies are asked for as sent; one sent gzip'd all the same would be bounded before it is
    inflated, not after: it is refused, not one byte of it read."""
    app = _node().http_app(path="/mcp")

    async def gzipping(scope: Scope, receive: Any, send: Any) -> None:
        async def coded(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                assert dict(scope["headers"]).get(b"accept-encoding") == b"identity"
                if b'"big"' in body:
                    message["headers"] = [*message["headers"], (b"content-encoding", b"gzip")]
            await send(message)

        body = b""

        async def recorded() -> dict[str, Any]:
            nonlocal body
            message = await receive()
            body += message.get("body", b"")
            return message

        await app(scope, recorded, coded if scope["type"] == "http" else send)

    async with serving(gzipping, lifespan="on") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        nodes = NodeConnections()
        try:
            await nodes.call(url, "echo", {"text": "open"}, token=None, deadline_s=30)
            bodies_read.clear()
            with pytest.raises(Exception) as refused:
                await nodes.call(url, "big", {"size": 10}, token=None, deadline_s=30)
        finally:
            await nodes.close()
    assert getattr(refused.value, "code", None) == "node_unavailable"
    assert bodies_read == [0]
