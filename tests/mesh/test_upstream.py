"""``mesh.modules.upstream``'s parts on their own: the bounded reader, the error log's interval.
End to end, with real upstreams: ``tests/security/test_upstream_bounds.py``."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable

import httpx2
import pytest

from mesh.modules.upstream import ErrorLog, bounded_http_client

LIMIT = 1024


def _client(answer: Callable[[httpx2.Request], httpx2.Response]) -> httpx2.AsyncClient:
    """A client as an ``http`` module builds it, before a server of the test's own."""
    return bounded_http_client(LIMIT)(headers={"x": "1"}, transport=httpx2.MockTransport(answer))


async def _streamed(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 256):
        yield body[start : start + 256]


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({}, b"a" * (LIMIT + 1)),  # counted as it arrives
        ({"content-length": str(LIMIT + 1)}, b""),  # declared past the bound: not read at all
        ({"content-encoding": "gzip"}, b"a"),  # coded: would be counted before it is inflated
    ],
)
async def test_a_body_past_the_bound_is_not_read(headers: dict[str, str], body: bytes) -> None:
    def answer(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers=headers, content=_streamed(body))

    async with _client(answer) as client:
        with pytest.raises(httpx2.StreamError, match="passed the node's bound of 1024 bytes"):
            await client.get("http://upstream/mcp")


async def test_a_body_within_the_bound_is_read_uncoded() -> None:
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=_streamed(b"a" * LIMIT))

    async with _client(answer) as client:
        assert len((await client.get("http://upstream/mcp")).content) == LIMIT
    assert seen[0].headers["accept-encoding"] == "identity"
    assert seen[0].headers["x"] == "1"


def test_an_upstreams_failures_are_one_line_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    log = ErrorLog("github", 60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="meshnav.node"):
        log.failed("MCPError", -32603)
        log.failed("MCPError", -32603)
        log.failed("ReadTimeout", None)
        now[0] += 61
        log.failed("HTTPStatusError", 502)
    assert caplog.messages == [
        "upstream github failed a call (MCPError -32603)",
        "upstream github failed a call (HTTPStatusError 502); 2 more failed since the last line",
    ]
