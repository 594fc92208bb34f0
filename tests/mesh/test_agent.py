"""The node agent's enrolment against a navigator that is away, or cannot serve for a while."""

from __future__ import annotations

import base64
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client, FastMCP
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mesh.agent import NodeAgent
from mesh.errors import EnrolmentFailed, InstanceReplaced
from mesh.modules import build_module, parse_module_spec
from mesh.server import Assignment
from mesh.settings import NodeSettings
from tests.harness import serving

ECHO = Path(__file__).parent / "fixtures" / "echo_server.py"


def _navigator(answers: list[tuple[int, str]]) -> tuple[Starlette, list[int]]:
    """A navigator's registration route that answers ``answers`` in turn (status, §9 code; for
    a 200, the body itself), then takes the registration; the statuses it gave are recorded."""
    given: list[int] = []

    async def register(request: Request) -> Response:
        await request.json()
        if len(given) < len(answers):
            status, code = answers[len(given)]
            given.append(status)
            if status == 200:
                return Response(code, 200, media_type="text/html")
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


@pytest.mark.parametrize(
    "body",
    [
        "<html>a proxy's page</html>",
        '{"ok": true}',
        '{"key": "not base64!", "registeredAt": 1.0, "registered": [], "refused": []}',
        '{"key": "a2tra2tra2tra2tra2tra2tra2tra2tra2tra2tra2s=", "registeredAt": 1.0, "registered": [], "refused": [{"why": 1}]}',
        '{"key": "", "registeredAt": 1.0, "registered": [], "refused": []}',
    ],
)
async def test_an_answer_that_is_not_a_registration_is_asked_again(body: str) -> None:
    """A 200 that is not the navigator's registration (a proxy's page, another service on the
    port) ended the node in a traceback, where an unreachable navigator is asked again."""
    agent, given, failed = await _enrol([(200, body)])
    assert failed is None
    assert given == [200, 200]
    assert agent.key == b"k" * 32


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


async def test_a_module_that_never_lists_its_tools_does_not_hold_the_registration() -> None:
    """A review: a wrapped server that answers its handshake but never a ``tools/list`` (hung on
    a backend) held the node's registration for good, and with it every other module of the
    machine: none reached the mesh, and a node the navigator forgot never registered again. A
    listing is given up after ``LIST_DEADLINE_S``, and the module keeps the list it last gave."""
    bodies: list[dict[str, Any]] = []

    async def register(request: Request) -> JSONResponse:
        bodies.append(await request.json())
        key = base64.b64encode(b"k" * 32).decode()
        return JSONResponse({"key": key, "registeredAt": 1.0, "registered": [], "refused": []})

    app = Starlette(routes=[Route("/api/v1/nodes/register", register, methods=["POST"])])
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(ECHO))} --never-list"
    hung = parse_module_spec(f"stdio:hung={command}")
    node = parse_module_spec("node")
    hung_server = build_module(hung)
    async with serving(app) as port, Client(hung_server):  # its lifespan ends the subprocess
        settings = NodeSettings(name="n1", navigator_url=f"http://127.0.0.1:{port}", token="t")
        assignments = [Assignment(node, build_module(node)), Assignment(hung, hung_server)]
        agent = NodeAgent(settings, assignments, list_deadline_s=2.0)
        try:
            with anyio.fail_after(30):
                await agent.enrol()
        finally:
            await agent.http.aclose()
    assert agent.key == b"k" * 32
    # registered not listing, with the cause and no tools: left out, it was retired (ADR 0057)
    listed = [(a["role"], a.get("notListing")) for a in bodies[0]["assignments"]]
    assert listed == [("node", None), ("hung", "timeout")]
    assert bodies[0]["assignments"][1]["tools"] == []


def _instance_navigator(beat: tuple[int, str]) -> tuple[Starlette, dict[str, list[Any]]]:
    """A navigator that takes the registration, answers every heartbeat ``beat`` (status, §9
    code) and takes a stop; what each route was sent is recorded."""
    sent: dict[str, list[Any]] = {"register": [], "heartbeat": [], "stop": []}

    async def register(request: Request) -> Response:
        sent["register"].append(await request.json())
        key = base64.b64encode(b"k" * 32).decode()
        return JSONResponse({"key": key, "registeredAt": 1.0, "registered": [], "refused": []})

    async def heartbeat(request: Request) -> Response:
        sent["heartbeat"].append(await request.json())
        status, code = beat
        return JSONResponse({"error": code, "status": status, "message": "at http://n2:1"}, status)

    async def stop(request: Request) -> Response:
        sent["stop"].append(await request.json())
        return JSONResponse({"machine": "n1", "stopped": True})

    routes = [
        Route("/api/v1/nodes/register", register, methods=["POST"]),
        Route("/api/v1/nodes/n1/heartbeat", heartbeat, methods=["POST"]),
        Route("/api/v1/nodes/n1/stop", stop, methods=["POST"]),
    ]
    return Starlette(routes=routes), sent


def _agent(port: int, **settings: Any) -> NodeAgent:
    spec = parse_module_spec("node")
    return NodeAgent(
        NodeSettings(
            name="n1",
            navigator_url=f"http://127.0.0.1:{port}",
            token="t",
            heartbeat_s=0.05,
            **settings,
        ),
        [Assignment(spec, build_module(spec))],
    )


async def test_a_node_told_replaced_stops_saying_why_and_tells_no_stop() -> None:
    app, sent = _instance_navigator((409, "replaced"))
    async with serving(app) as port:
        agent = _agent(port, replace=True)
        try:
            with anyio.fail_after(10), pytest.raises(InstanceReplaced) as replaced:
                await agent.run()
        finally:
            await agent.http.aclose()
    assert "http://n2:1" in str(replaced.value)
    assert [r["instance"] for r in sent["register"]] == [agent.instance]
    assert sent["register"][0]["replace"] is True
    assert sent["heartbeat"] == [{"instance": agent.instance}]
    assert sent["stop"] == [], "a replaced instance has nothing to stop"


async def test_a_node_stopped_tells_the_navigator_which_instance_stops() -> None:
    app, sent = _instance_navigator((200, "ok"))
    async with serving(app) as port:
        agent = _agent(port)
        try:
            with anyio.move_on_after(0.5):
                await agent.run()
        finally:
            await agent.http.aclose()
    assert sent["register"][0]["replace"] is False
    assert sent["stop"] == [{"instance": agent.instance}]


@pytest.mark.parametrize("upstream", ["refused", "401"])
async def test_an_upstream_down_at_the_start_is_registered_not_listing_with_its_cause(
    upstream: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue: an upstream down when the node started made its assignment ``retired`` (left out
    of the registration), after a log line saying the node kept "its last list" — it had none —
    and no cause. It is registered ``not listing`` with the cause, and pushed with its tools once
    it lists them."""
    bodies: list[dict[str, Any]] = []
    pushed: list[dict[str, Any]] = []

    async def register(request: Request) -> JSONResponse:
        bodies.append(await request.json())
        key = base64.b64encode(b"k" * 32).decode()
        return JSONResponse({"key": key, "registeredAt": 1.0, "registered": [], "refused": []})

    async def push(request: Request) -> JSONResponse:
        pushed.append((await request.json())["assignment"])
        return JSONResponse({"registered": [], "refused": []})

    async def refuse(request: Request) -> Response:
        return Response(status_code=401)

    app = Starlette(
        routes=[
            Route("/api/v1/nodes/register", register, methods=["POST"]),
            Route("/api/v1/nodes/n1/assignments/up", push, methods=["PUT"]),
            Route("/mcp", refuse, methods=["GET", "POST", "DELETE"]),
        ]
    )
    async with serving(app) as port:
        url = "http://127.0.0.1:9/mcp" if upstream == "refused" else f"http://127.0.0.1:{port}/mcp"
        spec = parse_module_spec(f"http:up={url}")
        settings = NodeSettings(name="n1", navigator_url=f"http://127.0.0.1:{port}", token="t")
        agent = NodeAgent(settings, [Assignment(spec, build_module(spec))], list_deadline_s=10.0)
        try:
            caplog.set_level("INFO", logger="meshnav")
            with anyio.fail_after(30):
                await agent.enrol()
                await agent.push_changes()  # the same cause: nothing new to push
                back = FastMCP("up")

                @back.tool
                def ping() -> str:
                    return "pong"

                agent.assignments = [Assignment(spec, back)]  # the upstream answers again
                await agent.push_changes()
        finally:
            await agent.http.aclose()
    (body,) = bodies[0]["assignments"]
    cause = "connection refused" if upstream == "refused" else "401"
    assert (body["notListing"], body["tools"]) == (cause, [])
    ((back_again),) = pushed
    assert "notListing" not in back_again and [t["name"] for t in back_again["tools"]] == ["ping"]
    said = " ".join(r.getMessage() for r in caplog.records)
    assert f"cannot list its tools ({cause}); not listing until it can" in said
    assert "keeping its last list" not in said
