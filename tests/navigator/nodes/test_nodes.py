"""The call path to a node over real HTTP: what a node receives, answers over the limit, progress,
and both protocol eras (the sessionless POST the navigator writes, and the legacy session)."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.server.dependencies import get_http_headers
from fastmcp.tools import ToolResult
from fastmcp.tools.base import InputRequiredToolResult
from mcp_types import InputRequiredResult, TextContent

from mesh.calltokens import META_KEY
from navigator.access.grants import Caller
from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.catalog.registrar import AssignmentSpec
from navigator.errors import NodeAnswerTooLarge, NodeTimeout, NodeUnavailable, ToolNotGranted
from navigator.limits import LIMITS
from navigator.nodes.connections import NodeConnections
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import AccessStore
from tests.harness import free_port, serving
from tests.navigator.inprocess import navigator_at, walker_client

Scope = dict[str, Any]


def _node() -> FastMCP:
    server = FastMCP("node-under-test")

    @server.tool
    def echo(text: str) -> dict[str, str]:
        return {"text": text}

    @server.tool
    def received(ctx: Context) -> dict[str, Any]:
        """What reached the node: its request's ``_meta`` keys and HTTP header names."""
        meta = dict((ctx.request_context.meta if ctx.request_context else None) or {})
        headers = sorted(get_http_headers(include_all=True))
        return {"meta": sorted(meta), "headers": headers, "token": meta.get(META_KEY)}

    @server.tool
    def big(size: int) -> str:
        return "x" * size

    @server.tool
    async def big_after_a_step(size: int, ctx: Context) -> str:
        await ctx.report_progress(1, 1)  # the answer comes as an event stream
        return "x" * size

    @server.tool
    async def steps(count: int, ctx: Context, note: int = 0) -> str:
        for step in range(count):
            await ctx.report_progress(step + 1, count, f"step {step + 1}" + "." * note)
        return "done"

    @server.tool
    async def sleep(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "slept"

    @server.tool
    def posing(code: str, error: bool = True) -> ToolResult:
        """An answer carrying the navigator's own error key, as any server can write one."""
        return ToolResult(
            content=[TextContent(type="text", text="node says no")],
            meta={"meshnav/error": code, "node/own": 1},
            is_error=error,
        )

    @server.tool
    def later(ctx: Context) -> ToolResult:
        """Answered in two rounds (SEP-2322): the first only asks to be sent again, with a state."""
        if ctx.request_state is None:
            return InputRequiredToolResult(InputRequiredResult(request_state="working"))
        return ToolResult(content=[TextContent(type="text", text=f"done, {ctx.request_state}")])

    @server.tool(output_schema=_COUNT_SCHEMA)
    def off_schema() -> ToolResult:
        """An answer its own output schema does not describe."""
        return ToolResult(
            content=[TextContent(type="text", text="a word")], structured_content={"n": "a word"}
        )

    return server


_COUNT_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _legacy_only(app: Any) -> Any:
    """The node's app as a server of the legacy era would answer: no ``server/discover``."""

    async def guarded(scope: Scope, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if scope["type"] == "http" and headers.get(b"mcp-method") == b"server/discover":
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    return guarded


@asynccontextmanager
async def _serving(*, legacy: bool = False) -> AsyncIterator[str]:
    app = _node().http_app(path="/mcp")
    async with serving(_legacy_only(app) if legacy else app, lifespan="on") as port:
        yield f"http://127.0.0.1:{port}/mcp"


@asynccontextmanager
async def _connections() -> AsyncIterator[NodeConnections]:
    connections = NodeConnections()
    try:
        yield connections
    finally:
        await connections.close()


def _text(result: Any) -> str:
    content = result.content[0]
    assert isinstance(content, TextContent)
    return content.text


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
async def test_a_node_receives_the_call_token_and_nothing_of_the_caller(legacy: bool) -> None:
    async with _serving(legacy=legacy) as url, _connections() as nodes:
        for _ in range(2):  # the second call on the held client and pool
            result = await nodes.call(url, "received", {}, token=lambda: "signed", deadline_s=30)
            seen = result.structured_content
            assert isinstance(seen, dict)
            assert seen["token"] == "signed"
            assert "authorization" not in seen["headers"]
            assert "cookie" not in seen["headers"]
            era = nodes._clients[url].protocol_version
            assert (era == "2026-07-28") is not legacy
        echoed = await nodes.call(url, "echo", {"text": "é ☃"}, token=None, deadline_s=30)
        assert echoed.structured_content == {"text": "é ☃"}
        assert not any(key.startswith("io.modelcontextprotocol/") for key in echoed.meta or {})


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
async def test_progress_is_passed_on(legacy: bool) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with _serving(legacy=legacy) as url, _connections() as nodes:
        result = await nodes.call(
            url, "steps", {"count": 3}, token=None, deadline_s=30, progress=sink
        )
    assert _text(result) == "done"
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
@pytest.mark.parametrize("streamed", [False, True], ids=["json", "events"])
async def test_an_answer_over_the_limit_is_refused_and_the_next_call_works(
    legacy: bool, streamed: bool
) -> None:
    async def sink(progress: float, total: float | None, message: str | None) -> None:
        return None

    tool = "big_after_a_step" if streamed else "big"
    async with _serving(legacy=legacy) as url, _connections() as nodes:
        with pytest.raises(NodeAnswerTooLarge):
            await nodes.call(
                url,
                tool,
                {"size": LIMITS.node_answer_bytes + 1},
                token=None,
                deadline_s=60,
                progress=sink if streamed else None,
            )
        fits = await nodes.call(url, tool, {"size": 1000}, token=None, deadline_s=30)
        assert _text(fits) == "x" * 1000


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
async def test_the_first_call_after_a_server_restarts_is_answered(legacy: bool) -> None:
    """SPEC §3: after a node restarts, the first call to it succeeds. A server registered by URL
    never registers again; a legacy-era one that restarted has forgotten the session the held
    client names, and answers 404 for it without reading the request (MCP: start a new session).
    The call goes once more, on a fresh client; the node never saw it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    async with _connections() as nodes:
        for _ in range(2):  # the server, then the same server started again
            app = _node().http_app(path="/mcp")
            async with serving(_legacy_only(app) if legacy else app, port=port, lifespan="on"):
                echoed = await nodes.call(url, "echo", {"text": "hi"}, token=None, deadline_s=30)
                assert echoed.structured_content == {"text": "hi"}


async def test_a_node_asking_to_be_called_again_is_called_again_and_answers() -> None:
    """A node of the sessionless era may answer ``tools/call`` with an ``InputRequiredResult``
    (SEP-2322), here a request state alone, to be sent back: the client's own driver sends the
    call again with it (``navigator.nodes.sdk.drive_input_required``), and the final answer is
    relayed."""
    async with _serving() as url, _connections() as nodes:
        result = await nodes.call(url, "later", {}, token=None, deadline_s=30)
    assert _text(result) == "done, working"


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
async def test_an_answer_outside_the_nodes_output_schema_is_relayed(legacy: bool) -> None:
    """The navigator relays a node's answer and does not judge it: the agent's client holds it to
    the schema it was given. A node's schema bug must not become a navigator error that hides the
    answer (the sessions of ``navigator.nodes.sdk.relay_transport_class``)."""
    async with _serving(legacy=legacy) as url, _connections() as nodes:
        result = await nodes.call(url, "off_schema", {}, token=None, deadline_s=30)
    assert not result.is_error
    assert result.structured_content == {"n": "a word"}


def _moving_calls(app: Any, *, elsewhere: bool) -> Any:
    """The node's app, answering each ``tools/call`` POST with a 307 to the same endpoint at
    ``?moved=1``: on its own origin, or (``elsewhere``) on another, ``localhost`` for
    ``127.0.0.1``, which reaches the same node."""

    async def moving(scope: Scope, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or [])
        if (
            scope["type"] == "http"
            and headers.get(b"mcp-method") == b"tools/call"
            and scope.get("query_string") != b"moved=1"
        ):
            origin = f"http://localhost:{scope['server'][1]}" if elsewhere else ""
            location = f"{origin}/mcp?moved=1".encode()
            await send(
                {"type": "http.response.start", "status": 307, "headers": [(b"location", location)]}
            )
            await send({"type": "http.response.body", "body": b""})
            return
        await app({**scope, "query_string": b""}, receive, send)

    return moving


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same origin", "another origin"])
async def test_the_call_post_follows_a_redirect_within_the_nodes_origin_only(
    elsewhere: bool,
) -> None:
    """Our sessionless POST follows redirects as the SDK's own transport does
    (``navigator.nodes.sdk.stream_within_origin``): within the node's origin (a trailing-slash
    move), never to another, where what was configured for this endpoint does not belong."""
    app = _moving_calls(_node().http_app(path="/mcp"), elsewhere=elsewhere)
    async with serving(app, lifespan="on") as port, _connections() as nodes:
        url = f"http://127.0.0.1:{port}/mcp"
        if elsewhere:
            with pytest.raises(NodeUnavailable):
                await nodes.call(url, "echo", {"text": "moved"}, token=None, deadline_s=30)
        else:
            echoed = await nodes.call(url, "echo", {"text": "moved"}, token=None, deadline_s=30)
            assert echoed.structured_content == {"text": "moved"}
        assert nodes._clients[url].protocol_version == "2026-07-28"


async def test_an_unknown_tool_and_a_gone_node_are_unavailable() -> None:
    async with _serving() as url, _connections() as nodes:
        result = await nodes.call(url, "no_such_tool", {}, token=None, deadline_s=30)
        assert result.is_error  # the node's own answer, relayed
    with pytest.raises(NodeUnavailable):
        async with _connections() as nodes:
            await nodes.call(url, "echo", {"text": "hi"}, token=None, deadline_s=30)


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
async def test_one_calls_timeout_or_oversized_answer_ends_that_call_only(legacy: bool) -> None:
    """Calls in flight on the same client outlive a call beside them that timed out or was
    answered past the limit (closing the shared client failed them all as node_unavailable)."""
    async with _serving(legacy=legacy) as url, _connections() as nodes:
        await nodes.call(url, "echo", {"text": "open"}, token=None, deadline_s=30)
        outcomes: dict[str, object] = {}

        async def run(name: str, tool: str, arguments: dict[str, Any], deadline: float) -> None:
            try:
                result = await nodes.call(url, tool, arguments, token=None, deadline_s=deadline)
                outcomes[name] = _text(result)
            except Exception as error:  # the outcome is what is compared
                outcomes[name] = type(error).__name__

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run, "beside", "sleep", {"seconds": 2.0}, 30)
            await anyio.sleep(0.3)
            tasks.start_soon(run, "late", "sleep", {"seconds": 30.0}, 0.5)
            size = {"size": LIMITS.node_answer_bytes + 1}
            tasks.start_soon(run, "large", "big", size, 30)
        again = await nodes.call(url, "echo", {"text": "after"}, token=None, deadline_s=30)
    assert outcomes == {"beside": "slept", "late": "NodeTimeout", "large": "NodeAnswerTooLarge"}
    assert again.structured_content == {"text": "after"}


async def test_a_node_that_never_answers_holds_up_calls_to_itself_only() -> None:
    """A node that takes connections and never answers keeps its own first call waiting until
    the deadline; a first call to another node goes ahead meanwhile."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        hung = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
        async with _serving() as url, _connections() as nodes:
            finished: list[str] = []

            async def call_hung() -> None:
                with pytest.raises(NodeTimeout):
                    await nodes.call(hung, "echo", {"text": "x"}, token=None, deadline_s=10)
                finished.append("hung")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call_hung)
                await anyio.sleep(0.5)  # the hung node's client is opening, its lock held
                result = await nodes.call(url, "echo", {"text": "y"}, token=None, deadline_s=30)
                finished.append("healthy")
    assert result.structured_content == {"text": "y"}
    assert finished == ["healthy", "hung"]


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
async def test_progress_does_not_count_towards_the_answer_limit(legacy: bool) -> None:
    """A long job may report progress past 4 MiB in all; only its answer is bounded."""
    seen: list[float] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    note = 100_000
    count = LIMITS.node_answer_bytes // note + 8
    async with _serving(legacy=legacy) as url, _connections() as nodes:
        result = await nodes.call(
            url, "steps", {"count": count, "note": note}, token=None, deadline_s=60, progress=sink
        )
    assert _text(result) == "done"
    assert len(seen) == count


def test_every_node_client_shares_one_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CA bundle is read once, not for each node's first call (~40 ms of the event loop
    each, with a client per endpoint: thousands at 100,000 tools)."""
    import ssl

    loads = 0
    load = ssl.SSLContext.load_verify_locations

    def counted(context: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        nonlocal loads
        loads += 1
        load(context, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    connections = NodeConnections()
    made = loads
    pools = [connections._factory() for _ in range(3)]
    assert made >= 1 and loads == made
    assert isinstance(connections.verify, ssl.SSLContext)
    for pool in pools:
        anyio.run(pool.aclose)


async def test_a_node_cannot_pose_as_the_navigator() -> None:
    """SPEC §9: the navigator's errors carry ``meshnav/error`` so that a client tells them from a
    node's own. A node's answer loses that key (a reviewer's node had sent ``tool_not_granted``
    plus a forged label and metric line, which reached the agent and ``/metrics``); a node
    agent's own refusal (``mesh.server``) is the navigator's error of that code."""
    async with _serving() as url, _connections() as nodes:
        forged = 'tool_not_granted",leak="secret"} 1\nmeshnav_injected_total 42\n#'
        for code, error in ((forged, True), ("unknown_tool", True), ("tool_not_granted", False)):
            result = await nodes.call(
                url, "posing", {"code": code, "error": error}, token=None, deadline_s=30
            )
            assert result.is_error is error
            assert _text(result) == "node says no"
            assert result.meta == {"node/own": 1}
        with pytest.raises(ToolNotGranted):
            await nodes.call(url, "posing", {"code": "tool_not_granted"}, token=None, deadline_s=30)
        with pytest.raises(NodeUnavailable):
            await nodes.call(url, "posing", {"code": "node_unavailable"}, token=None, deadline_s=30)


_Response = tuple[int, list[tuple[bytes, bytes]], bytes]


def _intercepting(app: Any, answer: Callable[[bytes, dict[bytes, bytes]], _Response | None]) -> Any:
    """``app`` behind a proxy that reads each POST whole and answers it itself when ``answer``
    (given its body and headers) gives a response — status, headers, body —, and passes it on
    otherwise."""

    async def proxy(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        request = b"".join(chunks)
        response = answer(request, dict(scope["headers"]))
        if response is not None:
            status, headers, body = response
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return None
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": request, "more_body": False}

        return await app(scope, replay, send)

    return proxy


def _refusing(app: Any, status: int, body: bytes) -> Any:
    """``app`` behind a proxy that answers a POST calling the tool ``refused`` itself, with
    ``status`` and ``body`` (a proxy's 503 or 429, or a node's garbled answer)."""

    def answer(request: bytes, headers: dict[bytes, bytes]) -> _Response | None:
        if b'"name":"refused"' not in request:
            return None
        return status, [(b"content-type", b"application/json")], body

    return _intercepting(app, answer)


@pytest.mark.parametrize(
    ("status", "body"),
    [(503, b"busy"), (429, b"{}"), (200, b"{not json"), (200, b'{"jsonrpc":"2.0","id":1}')],
    ids=["503", "429", "not-json", "another-id"],
)
async def test_a_call_answered_wrongly_leaves_the_calls_beside_it_alone(
    status: int, body: bytes
) -> None:
    """A review: any failure closed the endpoint's client, so a proxy's 503 (or a garbled answer)
    to one call ended every call in flight on that node as node_unavailable. An answer that is
    not a result is that call's failure; only a failed connection closes the client."""
    app = _refusing(_node().http_app(path="/mcp"), status, body)
    async with serving(app, lifespan="on") as port, _connections() as nodes:
        url = f"http://127.0.0.1:{port}/mcp"
        await nodes.call(url, "echo", {"text": "open"}, token=None, deadline_s=30)
        client = nodes._clients[url]
        outcome: list[str] = []

        async def long_call() -> None:
            result = await nodes.call(url, "sleep", {"seconds": 1.0}, token=None, deadline_s=30)
            outcome.append(_text(result))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(long_call)
            await anyio.sleep(0.3)
            with pytest.raises(NodeUnavailable):
                await nodes.call(url, "refused", {}, token=None, deadline_s=30)
        assert outcome == ["slept"]
        assert nodes._clients[url] is client


def _answering(app: Any, structured: str, *, streamed: bool) -> Any:
    """``app`` behind a proxy that answers a POST calling the tool ``deep`` itself: a result whose
    structured content is the text ``structured``, as JSON or as an event stream."""

    def answer(body: bytes, headers: dict[bytes, bytes]) -> _Response | None:
        request = json.loads(body)
        if request.get("method") != "tools/call" or request["params"]["name"] != "deep":
            return None
        result = f'{{"content":[],"structuredContent":{structured}}}'
        answered = f'{{"jsonrpc":"2.0","id":{json.dumps(request["id"])},"result":{result}}}'
        kind = b"text/event-stream" if streamed else b"application/json"
        text = f"event: message\ndata: {answered}\n\n" if streamed else answered
        sent = [(b"content-type", kind)]
        session = headers.get(b"mcp-session-id")
        if session is not None:
            sent.append((b"mcp-session-id", session))
        return 200, sent, text.encode()

    return _intercepting(app, answer)


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
@pytest.mark.parametrize("streamed", [False, True], ids=["json", "events"])
@pytest.mark.parametrize("depth", [300, 5000])
async def test_an_answer_nested_deeper_than_the_session_reads_is_unavailable(
    legacy: bool, streamed: bool, depth: int
) -> None:
    """The session reads answers with pydantic's JSON reader, which refuses more than 200 levels
    of nesting: a legacy-era call of such an answer was node_unavailable. Our sessionless POST
    read it with ``json.loads``: 300 levels were relayed, and writing them on to the agent
    (pydantic again, 254 levels at most) failed, so the agent got internal_error; 5,000 levels
    raised RecursionError, taken for a failed connection, which closed the client of every call
    in flight to the node (a review). Both eras read alike, and on our POST it is that call's
    failure only."""
    node = _node().http_app(path="/mcp")
    nested = '{"a":' * depth + "1" + "}" * depth
    app = _answering(_legacy_only(node) if legacy else node, nested, streamed=streamed)
    async with serving(app, lifespan="on") as port, _connections() as nodes:
        url = f"http://127.0.0.1:{port}/mcp"
        await nodes.call(url, "echo", {"text": "open"}, token=None, deadline_s=30)
        client = nodes._clients[url]
        with pytest.raises(NodeUnavailable):
            await nodes.call(url, "deep", {}, token=None, deadline_s=30)
        if not legacy:
            assert nodes._clients.get(url) is client
        fits = await nodes.call(url, "echo", {"text": "after"}, token=None, deadline_s=30)
    assert fits.structured_content == {"text": "after"}


@pytest.mark.parametrize("legacy", [False, True], ids=["sessionless", "legacy"])
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-1e999"])
async def test_a_node_answer_json_cannot_write_is_node_unavailable(
    tmp_path: Path, legacy: bool, number: str
) -> None:
    """Both eras' readers take NaN and Infinity (and 1e999 as Infinity) in a node's structured
    content, which JSON cannot write: passing it on failed in FastMCP, and the agent got
    internal_error instead of a SPEC §9 code (a review). It is no result to pass on."""
    node = _node().http_app(path="/mcp")
    structured = f'{{"value":{number}}}'
    app = _answering(_legacy_only(node) if legacy else node, structured, streamed=False)
    async with serving(app, lifespan="on") as port, navigator_at(tmp_path) as services:
        url = f"http://127.0.0.1:{port}/mcp"
        tools = [
            {"name": name, "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
            for name in ("deep", "echo")
        ]
        spec = AssignmentSpec(role="r", module="x", tools=tools, endpoint=url)
        await services.registrar.put_assignment("m1", spec)
        with services.registry.transaction() as session:
            AccessStore(session).grant("alice", "m1/r/*", effect="allow")
        async with walker_client(services, Caller("alice", frozenset())) as client:
            refused = await client.call_tool_mcp("call", {"address": "m1/r/deep"})
            echoed = await client.call_tool_mcp(
                "call", {"address": "m1/r/echo", "args": {"text": "after"}}
            )
    assert refused.is_error
    assert refused.structured_content is not None
    assert refused.structured_content["error"] == "node_unavailable"
    assert echoed.structured_content == {"text": "after"}


async def test_progress_json_cannot_carry_is_not_passed_on() -> None:
    """A node's progress of a 400-digit integer raised OverflowError, taken for a failed
    connection: node_unavailable, and the node's client closed under every call in flight to it.
    NaN or an infinity went on to the agent, whose notification JSON cannot write (a review)."""
    from navigator.nodes.relay import _answer_in

    def progress(figure: str, total: str = "null") -> str:
        params = f'{{"progressToken":7,"progress":{figure},"total":{total}}}'
        return f'{{"jsonrpc":"2.0","method":"notifications/progress","params":{params}}}'

    answer = '{"jsonrpc":"2.0","id":7,"result":{"content":[]}}'
    lines = [progress("9" * 400), progress("NaN"), progress("1", "Infinity"), progress("2", "4")]

    async def events() -> AsyncIterator[SimpleNamespace]:
        for data in [*lines, answer]:
            yield SimpleNamespace(data=data)

    seen: list[tuple[float, float | None, str | None]] = []

    async def sink(figure: float, total: float | None, message: str | None) -> None:
        seen.append((figure, total, message))

    assert await _answer_in(events(), 7, sink) == json.loads(answer)  # type: ignore[arg-type]
    assert seen == [(1.0, None, None), (2.0, 4.0, None)]


@pytest.mark.parametrize("node_legacy", [False, True], ids=["sessionless node", "legacy node"])
@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["sessionless agent", "legacy agent"])
async def test_a_call_the_agent_cancels_is_cancelled_at_the_node(
    tmp_path: Path, mode: str, node_legacy: bool
) -> None:
    """SPEC §3.6: a call the client cancels is cancelled at the node. The sessionless era cancels
    by closing the call's response stream, the legacy era with ``notifications/cancelled``; the
    navigator's forwarded call ends either way, on a node of either era."""
    seen: list[str] = []
    node = FastMCP("node")

    @node.tool
    async def wait(seconds: float) -> str:
        seen.append("started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            seen.append("cancelled")
            raise
        seen.append("finished")
        return "waited"

    node_app = node.http_app(path="/mcp")
    app = build_app(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}"))
    token = mint_token()
    async with (
        serving(_legacy_only(node_app) if node_legacy else node_app, lifespan="on") as node_port,
        serving(app, lifespan="on") as port,
    ):
        services: Services = app.state.meshnav
        tool = {
            "name": "wait",
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True},
        }
        spec = AssignmentSpec(
            role="r", module="x", tools=[tool], endpoint=f"http://127.0.0.1:{node_port}/mcp"
        )
        await services.registrar.put_assignment("m1", spec)

        def alice(session: Any) -> None:
            AccessStore(session).add_principal("alice", scopes=[], token_hash=hash_token(token))
            AccessStore(session).grant("alice", "m1/r/*", effect="allow")

        await services.transact(alice)
        transport = StreamableHttpTransport(
            f"http://127.0.0.1:{port}/mcp", headers={"Authorization": f"Bearer {token}"}
        )
        async with Client(transport, mode=mode, timeout=60) as client:  # type: ignore[arg-type]
            async with anyio.create_task_group() as tasks:

                async def call() -> None:
                    arguments = {"address": "m1/r/wait", "args": {"seconds": 30}}
                    await client.call_tool_mcp("call", arguments)

                tasks.start_soon(call)
                with anyio.fail_after(10):
                    while seen != ["started"]:
                        await anyio.sleep(0.05)
                tasks.cancel_scope.cancel()
            with anyio.fail_after(10):
                while len(seen) < 2:
                    await anyio.sleep(0.05)
            assert not (await client.call_tool_mcp("seats", {})).is_error  # the session lives on
    assert seen == ["started", "cancelled"]
