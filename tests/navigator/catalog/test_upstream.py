"""Why a pull of an MCP server's ``tools/list`` failed (``meshnav register --endpoint``), in the
operator's terms: each kind of failure by its ``cause``, never the server's body (ADR 0036).
``tests/e2e/test_cli.py`` shows the same answers through ``meshnav register``."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

from navigator.catalog.upstream import pull_tools
from navigator.errors import NavigatorError, NodeTimeout, NodeUnavailable
from tests.harness import free_port, page_server

PAGE = b"<html><body>PAGE-CANARY a page, not MCP</body></html>"


@contextmanager
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers on them."""
    held: list[socket.socket] = []
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.1)
        stopping = threading.Event()

        def accept() -> None:
            while not stopping.is_set():
                try:
                    held.append(server.accept()[0])
                except TimeoutError:
                    continue

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            yield server.getsockname()[1]
        finally:
            stopping.set()
            thread.join()
            for connection in held:
                connection.close()


async def _refusal(url: str, **options: float) -> NavigatorError:
    with anyio.fail_after(30), pytest.raises(NavigatorError) as refused:
        await pull_tools(url, **options)  # type: ignore[arg-type]
    return refused.value


async def test_a_server_that_never_answers_is_a_timeout_naming_the_limit() -> None:
    with silent_server() as port:
        error = await _refusal(f"http://127.0.0.1:{port}/mcp", timeout_s=0.5)
    assert isinstance(error, NodeTimeout)
    assert (error.extra["cause"], error.message) == (
        "timeout",
        "The server did not list its tools within 0.5 s.",
    )


@pytest.mark.parametrize(
    ("where", "cause", "said"),
    [
        ("refused", "connection_refused", "connection refused"),
        ("dns", "dns", "host name does not resolve"),
        ("tls", "tls", "TLS handshake"),
        ("404", "http_status", "HTTP 404: check the URL's path"),
        ("401", "http_status", "HTTP 401: the server wants credentials"),
        ("503", "http_status", "HTTP 503: the server failed"),
        ("200", "not_mcp", "not as an MCP server"),
    ],
)
async def test_each_kind_of_failure_is_named_and_no_body_is_shown(
    where: str, cause: str, said: str
) -> None:
    with page_server(PAGE) as url:
        urls = {
            "refused": f"http://127.0.0.1:{free_port()}/mcp",
            "dns": "http://no-such-host.invalid:8000/mcp",
            "tls": url(200).replace("http://", "https://") + "/mcp",
        }
        error = await _refusal(urls[where] if where in urls else url(int(where)) + "/mcp")
    assert isinstance(error, NodeUnavailable)
    assert error.extra["cause"] == cause
    assert said in error.message
    assert "CANARY" not in error.message and "127.0.0.1" not in error.message
    if cause == "http_status":
        assert error.extra["httpStatus"] == int(where)
