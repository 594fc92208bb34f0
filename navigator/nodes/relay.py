"""One ``tools/call`` relayed to a node: the request sent, and the node's answer read and made ours.

On the sessionless era (2026-07-28), where a ``tools/call`` is one self-contained POST, the
navigator writes that POST itself on the client's own pool — the body and headers the client's
session would write, stamped by the session's own code — and reads the one answer it gets back,
JSON or an event stream (progress passed on), never more than the answer limit (ADR 0018). This
skips the session's message streams and tasks, ~15% of a relayed call's CPU. A node's request for
input (``InputRequiredResult``) is driven by the client itself, as are all calls on the legacy
era; the answers the session reads are bounded as they arrive by the client's pool
(``navigator.nodes.bounded``: no body but an event stream is read past the answer limit, and an
event stream's events are bounded one by one) and measured once read (``_check_size``).

The navigator relays a node's answer; it does not consume it. Like FastMCP's own proxy, it does not
hold the answer to the node's declared output schema (the agent's client checks what it receives;
a node's schema bug must not turn into a navigator error that hides the real answer). What it
takes out is what only the navigator may say (``as_ours``), and a node's request carries nothing
of the caller's but a fresh call token (``call_meta``).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import httpx2
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, InputRequiredResult, InputResponses, RequestParamsMeta
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic_core import from_json

from mesh import tracing
from mesh.calltokens import META_KEY
from navigator.errors import (
    ERROR_META_KEY,
    NavigatorError,
    NodeAnswerTooLarge,
    NodeUnavailable,
    ToolNotGranted,
)
from navigator.limits import LIMITS
from navigator.nodes import sdk
from navigator.nodes.bounded import AnswerTooLarge, passed_limit

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

__all__ = [
    "NODE_REFUSALS",
    "READ_LIMIT",
    "NoAnswer",
    "NodeAnswer",
    "ProgressSink",
    "as_ours",
    "call_meta",
    "call_tool",
]

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]

#: What the node answered, relayed as it is: the name the walker gives it, without MCP's types.
NodeAnswer = CallToolResult

RESERVED_META_PREFIX = "io.modelcontextprotocol/"


class NoAnswer(Exception):
    """The node answered the POST with something other than a result for it."""


_REQUEST_IDS = itertools.count(1)
_ACCEPT = "application/json, text/event-stream"
#: The most of one answer read from a node: the answer limit and room for the JSON-RPC envelope.
READ_LIMIT = LIMITS.node_answer_bytes + LIMITS.envelope_bytes
#: How the client's event reader, given ``READ_LIMIT``, says an answer passed it (httpx2's
#: ``SSEError`` text, carried in the error the session raises; tests/navigator/nodes/test_nodes.py).
_PASSED_READ_LIMIT = f"exceeded the {READ_LIMIT} byte limit"


def _too_large() -> AnswerTooLarge:
    return AnswerTooLarge(READ_LIMIT)


async def _read_capped(response: httpx2.Response, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _too_large()
        chunks.append(chunk)
    return b"".join(chunks)


async def _answer_from_events(
    response: httpx2.Response, request_id: int, progress: ProgressSink | None, limit: int
) -> dict[str, Any]:
    """The response to ``request_id`` from an event stream, progress notifications passed on;
    anything else the node streams (its log messages) is not the agent's and is dropped."""
    try:
        return await _answer_in(
            httpx2.EventSource(response, max_event_size=limit), request_id, progress
        )
    except httpx2.SSEError:  # the content type was checked: one event passed the limit
        raise _too_large() from None


async def _answer_in(
    events: httpx2.EventSource, request_id: int, progress: ProgressSink | None
) -> dict[str, Any]:
    """Each event is read whole only up to the limit (the event source's own bound) and none is
    kept but the answer: a long job may report progress for as long as its deadline allows."""
    async for event in events:
        if not event.data:
            continue
        message = from_json(event.data)
        if not isinstance(message, dict):
            continue
        if message.get("id") == request_id and ("result" in message or "error" in message):
            return message
        params = message.get("params")
        if (
            progress is not None
            and message.get("method") == "notifications/progress"
            and isinstance(params, dict)
            and params.get("progressToken") == request_id
            and (done := _figure(params.get("progress"))) is not None
        ):
            note = params.get("message")
            await progress(
                done, _figure(params.get("total")), note if isinstance(note, str) else None
            )
    raise NoAnswer()


def _figure(value: object) -> float | None:
    """A progress figure the agent's notification can carry; ``None`` for anything else: an
    integer past a float's range raised OverflowError, taken for a failed connection (which
    closed the node's client under every call in flight), and NaN or an infinity is no JSON."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        figure = float(value)
    except OverflowError:
        return None
    return figure if math.isfinite(figure) else None


async def _post_call(
    client: Client[StreamableHttpTransport],
    http: httpx2.AsyncClient,
    endpoint: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    meta: dict[str, Any] | None,
    progress: ProgressSink | None,
) -> CallToolResult | InputRequiredResult:
    """One sessionless ``tools/call`` POST on the client's pool, as its session would send it."""
    session = client.session
    request_id = next(_REQUEST_IDS)
    request_meta = dict(meta or {})
    if progress is not None:
        request_meta["progressToken"] = request_id
    request: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"_meta": request_meta, "name": tool, "arguments": arguments},
    }
    stamped = sdk.stamp(session, request)  # protocol _meta, routing headers
    headers = {"accept": _ACCEPT, "content-type": "application/json", **stamped}
    body = json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode()
    async with sdk.stream_within_origin(
        http, "POST", endpoint, content=body, headers=headers
    ) as response:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if response.status_code != 200:
            raise NoAnswer()
        try:
            if kind == "application/json":
                message = from_json(await _read_capped(response, READ_LIMIT))
            elif kind == "text/event-stream":
                message = await _answer_from_events(response, request_id, progress, READ_LIMIT)
            else:
                raise NoAnswer()
        except ValueError:  # JSON that does not parse, or nests deeper than the session reads
            raise NoAnswer() from None
    if not isinstance(message, dict) or message.get("id") != request_id:
        raise NoAnswer()
    try:
        result = sdk.read_call_result(session, message.get("result"))
    except ValueError:  # pydantic's ValidationError: not a result
        raise NoAnswer() from None
    if not isinstance(result, CallToolResult | InputRequiredResult):
        raise NoAnswer()
    return result


async def call_tool(
    client: Client[StreamableHttpTransport],
    http: httpx2.AsyncClient | None,
    endpoint: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    meta: dict[str, Any] | None,
    progress: ProgressSink | None,
) -> CallToolResult:
    """One ``tools/call``: on the sessionless era, our own POST on the client's pool; otherwise
    on the held session, watched by the session monitor (a dead connection fails the call instead
    of leaving it waiting). A node's request for input (SEP-2322) is driven through the client's
    own handlers, as ``call_tool_mcp`` would."""
    request_meta = cast(RequestParamsMeta | None, meta)

    async def send(
        input_responses: InputResponses | None, request_state: str | None
    ) -> CallToolResult | InputRequiredResult:
        """On the session: its answers are measured here (ours are measured as they are read)."""
        try:
            result = await client.session.call_tool(
                name=tool,
                arguments=arguments,
                progress_callback=cast(ProgressFnT | None, progress),
                meta=request_meta,
                input_responses=input_responses,
                request_state=request_state,
                allow_input_required=True,
            )
        except MCPError as error:
            if _PASSED_READ_LIMIT in error.message or passed_limit(error.message, READ_LIMIT):
                raise _too_large() from None
            raise
        if isinstance(result, CallToolResult):
            _check_size(result)
        return result

    if http is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        first = await _post_call(
            client, http, endpoint, tool, arguments, meta=meta, progress=progress
        )
    else:
        first = await sdk.monitored(client, send(None, None))
    if isinstance(first, CallToolResult):
        return first
    driven = await sdk.monitored(client, sdk.drive_input_required(client, first, send))
    if not isinstance(driven, CallToolResult):
        raise TypeError("the node answered tools/call with something else")
    return driven


def call_meta(token: Callable[[], str] | None) -> dict[str, Any] | None:
    """What the navigator's ``tools/call`` carries in ``_meta``: a fresh call token, and its own
    node-hop span's trace context when tracing (ADR 0040); nothing of the caller's request."""
    meta: dict[str, Any] = tracing.trace_context()
    if token is not None:
        meta[META_KEY] = token()
    return meta or None


def _check_size(result: CallToolResult) -> None:
    """An answer the session read, measured as the agent will receive it."""
    size = len(result.model_dump_json(by_alias=True, exclude_none=True))
    if size > LIMITS.node_answer_bytes:
        raise _too_large()


#: A node agent's own refusals of a call (``mesh.server``), and its answer when an upstream said
#: more than it reads (``mesh.modules.upstream``), which the navigator answers as its own errors
#: of those codes (SPEC §9: ``tool_not_granted`` "also for a node refusing a token").
NODE_REFUSALS: dict[str, type[NavigatorError]] = {
    ToolNotGranted.code: ToolNotGranted,
    NodeUnavailable.code: NodeUnavailable,
    NodeAnswerTooLarge.code: NodeAnswerTooLarge,
}


def as_ours(result: CallToolResult) -> CallToolResult:
    """The node's answer, less what only the navigator may say: the protocol's reserved
    ``_meta`` keys (the node's serverInfo) and meshnav's error key, by which a client tells the
    navigator's errors from a node's (SPEC §9). A node that set that key posed as the navigator
    to the agent, and put its own text into ``/metrics`` as an error code. A node agent's
    refusal of the call becomes the navigator's own error of that code (any server refusing its
    own call could say as much); every other answer passes through, its content whole."""
    meta = result.meta
    if not meta:
        return result
    code = meta.get(ERROR_META_KEY)
    refusal = NODE_REFUSALS.get(code) if result.is_error and isinstance(code, str) else None
    if refusal is not None:
        raise refusal("The node refused the call." if refusal is ToolNotGranted else None)
    if ERROR_META_KEY not in meta and not any(k.startswith(RESERVED_META_PREFIX) for k in meta):
        return result
    kept = {
        k: v
        for k, v in meta.items()
        if k != ERROR_META_KEY and not k.startswith(RESERVED_META_PREFIX)
    }
    return result.model_copy(update={"meta": kept or None})
