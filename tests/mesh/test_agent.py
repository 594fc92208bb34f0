"""The node agent's enrolment against a navigator that is away, or cannot serve for a while."""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest
from fastmcp import FastMCP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mesh.agent import NodeAgent
from mesh.errors import EnrolmentFailed
from mesh.modules import build_module, parse_module_spec
from mesh.server import Assignment
from mesh.settings import NodeSettings
from tests.harness import serving


def _navigator(answers: list[tuple[int, str]]) -> tuple[Starlette, list[int]]:
    """A navigator's registration route that answers ``answers`` in turn (status, §9 code), then
    takes the registration; the statuses it gave are recorded."""
    given: list[int] = []

    async def register(request: Request) -> JSONResponse:
        await request.json()
        if len(given) < len(answers):
            status, code = answers[len(given)]
            given.append(status)
            return JSONResponse({"error": code, "status": status, "message": "…"}, status)
        given.append(200)
        key = base64.b64encode(b"k" * 32).decode()
        return JSONResponse({"key": key, "registeredAt": 1.0, "registered": [], "refused": []})

    return Starlette(routes=[Route("/api/v1/nodes/register", register, methods=["POST"])]), given


async def _enrol(
    answers: list[tuple[int, str]],
) -> tuple[NodeAgent, list[int], EnrolmentFailed | None]:
    app, given = _navigator(answers)
    failed = None
    async with serving(app) as port:
        settings = NodeSettings(name="n1", navigator_url=f"http://127.0.0.1:{port}", token="t")
        spec = parse_module_spec("node")
        agent = NodeAgent(settings, [Assignment(spec, build_module(spec))])
        try:
            await agent.enrol()
        except EnrolmentFailed as error:
            failed = error
        finally:
            await agent.http.aclose()
    return agent, given, failed


async def test_a_navigator_that_cannot_serve_for_a_while_is_asked_again() -> None:
    """One ``registry_unavailable`` ended the node for good (a review): the agent tried once,
    exited 1, and never came back when the registry did."""
    agent, given, failed = await _enrol([(503, "registry_unavailable"), (502, "bad_gateway")])
    assert failed is None
    assert given == [503, 502, 200]
    assert agent.key == b"k" * 32
    assert agent.registered_at == 1.0


@pytest.mark.parametrize(("status", "code"), [(401, "unauthenticated"), (409, "conflict")])
async def test_a_refusal_of_the_node_is_final(status: int, code: str) -> None:
    agent, given, failed = await _enrol([(status, code)])
    assert failed is not None and code in str(failed) and not failed.transient
    assert given == [status]
    assert agent.key is None


def test_a_node_keeps_its_token_from_its_modules_processes() -> None:
    """A review: a ``stdio`` module's subprocess, running as the node's user, read the node's
    token from ``/proc/PPID/environ`` — and with it the key the node's call tokens are signed
    with. The node makes itself non-dumpable, so its ``/proc`` files are root's alone."""
    if not sys.platform.startswith("linux"):
        pytest.skip("prctl is Linux's")
    script = (
        "import ctypes; from mesh.agent import keep_secrets_from_children as keep; "
        "print(keep(), ctypes.CDLL(None).prctl(3))"
    )
    answer = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert answer.stdout.split() == ["True", "0"]


async def test_a_tool_list_push_that_failed_is_pushed_again() -> None:
    """The changed list was recorded as pushed before the navigator took it: one push that
    failed (the navigator away a moment, or answering 503) and the change never reached the
    mesh, while the heartbeats, answered 200, gave the node no cause to register again."""
    pushes: list[int] = []

    async def register(request: Request) -> JSONResponse:
        await request.json()
        key = base64.b64encode(b"k" * 32).decode()
        return JSONResponse({"key": key, "registeredAt": 1.0, "registered": [], "refused": []})

    async def put(request: Request) -> JSONResponse:
        await request.json()
        status = 503 if not pushes else 200
        pushes.append(status)
        if status != 200:
            return JSONResponse({"error": "registry_unavailable", "status": 503}, 503)
        return JSONResponse({"registered": [], "refused": []})

    app = Starlette(
        routes=[
            Route("/api/v1/nodes/register", register, methods=["POST"]),
            Route("/api/v1/nodes/n1/assignments/{role}", put, methods=["PUT"]),
        ]
    )
    server = FastMCP("changing")

    @server.tool
    def first() -> str:
        return "1"

    async with serving(app) as port:
        settings = NodeSettings(name="n1", navigator_url=f"http://127.0.0.1:{port}", token="t")
        agent = NodeAgent(settings, [Assignment(parse_module_spec("node"), server)])
        try:
            await agent.register()

            @server.tool
            def second() -> str:
                return "2"

            await agent.push_changes()  # refused: the navigator cannot take it now
            await agent.push_changes()  # the change is still to be pushed
        finally:
            await agent.http.aclose()
    assert pushes == [503, 200]
