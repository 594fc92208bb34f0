"""Serving until stopped (``mesh.serving``, ADR 0026): what ends the server, and what is raised."""

from __future__ import annotations

import anyio
import pytest
import uvicorn
from starlette.applications import Starlette

from mesh.serving import Server, serve_until_stopped
from tests.harness import free_port


def _server() -> Server:
    config = uvicorn.Config(Starlette(), host="127.0.0.1", port=free_port(), log_level="warning")
    return Server(config)


async def test_an_error_of_the_work_stops_the_server_and_is_raised_as_it_was() -> None:
    """The demo's "only [db1] registered" reached the command line inside an exception group,
    which it printed as a traceback instead of one line."""

    class Refused(Exception):
        """The work's own failure, as the demo's nodes not registering is."""

    async def work() -> None:
        raise Refused("only [db1] registered")

    server = _server()
    with anyio.fail_after(30), pytest.raises(Refused, match="registered"):
        await serve_until_stopped(server, None, work)
    assert server.should_exit


async def test_work_that_returns_stops_the_server() -> None:
    async def work() -> None:
        await anyio.sleep(0)

    server = _server()
    with anyio.fail_after(30):
        await serve_until_stopped(server, None, work)
    assert server.started and server.should_exit
