"""The navigator's uses of private names of the pinned MCP libraries, each behind one function.

**Warning: every name wrapped here is private to the library that defines it**, in the versions
``pyproject.toml`` pins — FastMCP 4.2.3, the MCP SDK (``mcp``, ``mcp-types``) 2.3.0, httpx2 and
httpcore2 2.16.2. None is promised to survive a release of its library: before upgrading one,
read this module, and run the test named beside each use, which fails if it changed shape (or,
for a type, ``make check``). No other module of ``navigator/`` touches a private name of these
libraries: they call the functions here (``tests/test_architecture.py`` asserts it, against the
names this module reaches for).

- ``mcp.shared._httpx_utils.stream_within_origin`` (``stream_within_origin``): our sessionless
  ``tools/call`` POST follows redirects only within the node's origin, as the SDK's own transport
  does — ``tests/navigator/nodes/test_nodes.py``,
  ``test_the_call_post_follows_a_redirect_within_the_nodes_origin_only``.
- ``mcp.shared._httpx_utils.McpHttpClientFactory`` (``relay_transport``): the type of the pool
  factory a node's transport is given; only mypy reads it.
- ``ClientSession._stamp`` (``stamp``): the protocol ``_meta`` and the routing headers
  (``Mcp-Method``, ``Mcp-Name``) the session would put on our POST —
  ``tests/navigator/nodes/test_nodes.py``,
  ``test_a_node_receives_the_call_token_and_nothing_of_the_caller[sessionless]``.
- ``ClientSession._call_tool_adapter`` (``read_call_result``): our POST's answer read as the
  session reads one, with the result types the negotiated version allows —
  ``tests/navigator/nodes/test_nodes.py``, every ``[sessionless]`` call.
- ``Client._await_with_session_monitoring`` (``monitored``): a call on a held session (the
  legacy era, or a node's request for input) fails when the session's connection does, instead of
  waiting for an answer that cannot come — ``tests/navigator/nodes/test_nodes.py``, every
  ``[legacy]`` call.
- ``Client._drive_input_required`` (``drive_input_required``): a node's request for input
  (SEP-2322, ``InputRequiredResult``) answered through the client's own handlers, as its
  ``call_tool_mcp`` would — ``tests/navigator/nodes/test_nodes.py``,
  ``test_a_node_asking_to_be_called_again_is_called_again_and_answers``.
- ``StreamableHttpTransport.connect_session``'s ``transport_options`` and
  ``VersionAwareClientSession.validate_tool_result`` (``relay_transport``): not underscored, but
  the transport's and the session's inner workings; the sessions of a node's client relay a
  ``tools/call`` result without holding it to the node's output schema —
  ``tests/navigator/nodes/test_nodes.py``,
  ``test_an_answer_outside_the_nodes_output_schema_is_relayed[legacy]``.
- ``Context._is_modern_protocol`` (``is_modern_protocol``): whether the agent's request came on the
  sessionless era, which has no channel back for an elicitation (ADR 0012) —
  ``tests/navigator/mcp/test_elicitation.py``, ``test_the_person_is_asked_in_words_not_in_code``;
  ``tests/e2e/test_call_safety.py``, ``test_elicitation_asks_the_person_in_both_protocol_eras``.
- ``StreamableHTTPSessionManager._server_instances`` (``server_instances``): the MCP sessions the
  SDK still holds, by which the navigator counts a principal's (``navigator.mcp.sessions``) —
  ``tests/security/test_sessions.py``,
  ``test_a_principal_at_its_session_cap_leaves_room_for_another``.
- ``httpx2.AsyncHTTPTransport._pool`` (``use_pool``): httpx2's transport takes no network
  backend, its pool does; the navigator's outbound transport is httpx2's own over a pool whose
  backend checks every address it connects to (ADR 0032) — ``tests/security/test_url_policy.py``,
  ``test_a_node_name_rebound_to_a_forbidden_address_is_not_called``.

Nothing of ``mcp`` or ``fastmcp`` is imported until a function here needs it: the operator's
commands import ``navigator.nodes.destinations`` without loading an MCP library
(``tests/test_cli.py``), and FastMCP's client takes ~0.4 s to import.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

import httpcore2
import httpx2

if TYPE_CHECKING:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport
    from fastmcp.server.context import Context
    from mcp import ClientSession
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.shared._httpx_utils import McpHttpClientFactory
    from mcp.shared.dispatcher import CallOptions
    from mcp_types import CallToolResult, InputRequiredResult, InputResponses

__all__ = [
    "drive_input_required",
    "is_modern_protocol",
    "monitored",
    "read_call_result",
    "relay_transport",
    "relay_transport_class",
    "server_instances",
    "stamp",
    "stream_within_origin",
    "use_pool",
]

T = TypeVar("T")

#: A ``tools/call`` sent on a client's session, again with the answers to a node's request for
#: input (``drive_input_required``).
Resend = Callable[
    ["InputResponses | None", "str | None"],
    Coroutine[Any, Any, "CallToolResult | InputRequiredResult"],
]


def stream_within_origin(
    http: httpx2.AsyncClient, method: str, url: str, **kwargs: Any
) -> AbstractAsyncContextManager[httpx2.Response]:
    """``http.stream(method, url, ...)``, following redirects only within the URL's origin, as
    the SDK's streamable HTTP transport does (``mcp.shared._httpx_utils``)."""
    from mcp.shared._httpx_utils import stream_within_origin as within_origin

    return within_origin(http, method, url, **kwargs)


def stamp(session: ClientSession, request: dict[str, Any]) -> dict[str, str]:
    """The headers the session would send ``request`` with, its protocol ``_meta`` written into
    ``request`` (``ClientSession._stamp``, as set by the era the session negotiated)."""
    options: dict[str, Any] = {}
    session._stamp(request, cast("CallOptions", options))
    return cast("dict[str, str]", options["headers"])


def read_call_result(session: ClientSession, result: object) -> object:
    """``result``, a ``tools/call`` answer's ``result`` member, read as the session reads one
    (``ClientSession._call_tool_adapter``); pydantic's ``ValidationError`` (a ``ValueError``)
    when it is no result."""
    return session._call_tool_adapter.validate_python(result)


def monitored(client: Client[Any], call: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
    """``call``, to be awaited while the client watches its session's task
    (``Client._await_with_session_monitoring``): a failed connection fails the call."""
    return client._await_with_session_monitoring(call)


def drive_input_required(
    client: Client[Any], first: InputRequiredResult, resend: Resend
) -> Coroutine[Any, Any, CallToolResult | InputRequiredResult]:
    """The call's final answer, each request for input of the node's (``first`` and any after it)
    answered by the client's own handlers and the call sent again with the answers
    (``Client._drive_input_required``)."""
    return client._drive_input_required(first, resend)


@functools.cache
def relay_transport_class() -> type[StreamableHttpTransport]:
    """Streamable HTTP whose sessions relay ``tools/call`` results without enforcing the node's
    output schema. Made on the first node call (or by ``import_client``): FastMCP's client takes
    ~0.4 s to import, which a navigator's start need not wait for."""
    from fastmcp.client.transports import StreamableHttpTransport
    from fastmcp.client.transports.base import TransportOptions, VersionAwareClientSession

    class _RelaySession(VersionAwareClientSession):
        """Relays ``tools/call`` results without enforcing the node's output schema."""

        async def validate_tool_result(self, name: str, result: CallToolResult) -> None:
            return None

    class _RelayTransport(StreamableHttpTransport):
        """Streamable HTTP whose sessions are ``_RelaySession``."""

        def connect_session(  # type: ignore[override]  # the same keywords, passed on as they are
            self, *, transport_options: TransportOptions | None = None, **kwargs: Any
        ) -> AbstractAsyncContextManager[ClientSession]:
            options = replace(transport_options or TransportOptions(), session_class=_RelaySession)
            connect: Callable[..., AbstractAsyncContextManager[ClientSession]] = (
                super().connect_session
            )
            return connect(transport_options=options, **kwargs)

    return _RelayTransport


def relay_transport(
    endpoint: str, pool: Callable[..., httpx2.AsyncClient], *, max_sse_event_size: int
) -> StreamableHttpTransport:
    """A node's transport (``relay_transport_class``), its HTTP client made by ``pool``."""
    return relay_transport_class()(
        endpoint,
        httpx_client_factory=cast("McpHttpClientFactory", pool),
        max_sse_event_size=max_sse_event_size,
    )


def is_modern_protocol(context: Context) -> bool:
    """Whether the request ``context`` serves came on the sessionless era, with no channel back to
    the client (``Context._is_modern_protocol``)."""
    return context._is_modern_protocol()


def server_instances(manager: StreamableHTTPSessionManager) -> dict[str, Any]:
    """The sessions ``manager`` still holds, by session id
    (``StreamableHTTPSessionManager._server_instances``)."""
    return cast("dict[str, Any]", manager._server_instances)


def use_pool(transport: httpx2.AsyncHTTPTransport, pool: httpcore2.AsyncConnectionPool) -> None:
    """``transport`` sending through ``pool`` in place of the one it made
    (``httpx2.AsyncHTTPTransport._pool``)."""
    transport._pool = pool
