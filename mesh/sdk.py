"""The node agent's uses of private names of the pinned MCP libraries, each behind one function.

**Warning: every name wrapped here is private to the library that defines it**, in the versions
``pyproject.toml`` pins — FastMCP 4.2.3, the MCP SDK (``mcp``, ``mcp-types``) 2.3.0. None is
promised to survive a release of its library: before upgrading one, read this module, and run
the test named beside each use, which fails if it changed shape. No other module of ``mesh/``
touches a private name of these libraries: they call the functions here
(``tests/test_architecture.py`` asserts it, against the names this module reaches for). This is
the navigator's ``navigator.nodes.sdk`` for the node's side: ``mesh/`` imports no ``navigator``.

All of them serve the ``stdio`` module (``mesh.modules.stdio``), which holds ONE FastMCP client
session with its subprocess for every request:

- ``Client._session_state`` (``share_session``): each request's view of the client
  (``ProxyClient.new()``) shares the live session and its holds, and keeps its own request-context
  slot, so that progress reaches the caller that made it — ``tests/mesh/test_stdio_module.py``,
  ``test_calls_share_one_long_lived_session``, ``test_progress_reaches_the_caller_that_made_it``.
- ``StdioTransport._is_session_dead`` (``session_dead``): a subprocess that exited leaves the
  client "connected" to a closed dispatcher; the transport's own check (the one its keep-alive
  reconnect uses) tells the two apart — ``test_a_crashed_subprocess_is_started_again``.
- ``ProxyProvider._tools_cache`` (``forget_cached_tools``): a ``tools/list_changed`` from the
  subprocess drops the provider's cached tool list at once —
  ``test_a_tool_list_change_is_seen_at_once``.
- ``mcp.client.stdio.TextReceiveStream`` (``read_stdio_with``): not underscored, but the SDK's
  stdio client takes the stream it reads the subprocess through from its module's globals; the
  node's ``BoundedLines`` goes there — ``test_an_endless_line_ends_the_session_not_the_node``,
  ``test_a_line_that_is_not_utf_8_does_not_wedge_the_session``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anyio.streams.text import TextReceiveStream
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport
    from fastmcp.server.providers.proxy import ProxyProvider

__all__ = ["forget_cached_tools", "read_stdio_with", "session_dead", "share_session"]


def share_session(view: Client[Any], client: Client[Any]) -> None:
    """``view`` (a ``client.new()``) on ``client``'s live session and its holds
    (``Client._session_state``), its own request-context slot kept."""
    view._session_state = client._session_state


def session_dead(transport: StdioTransport) -> bool:
    """Whether the transport's session ended under it: its subprocess exited
    (``StdioTransport._is_session_dead``)."""
    return transport._is_session_dead()


def forget_cached_tools(provider: ProxyProvider) -> None:
    """Drop ``provider``'s cached tool list (``ProxyProvider._tools_cache``), so that its next
    lookup asks the server behind it again."""
    provider._tools_cache = None


def read_stdio_with(stream: type[TextReceiveStream]) -> None:
    """Every stdio client of this process reads its subprocess's output through ``stream``: the
    SDK's stdio client takes ``TextReceiveStream`` from its module's globals."""
    import mcp.client.stdio

    mcp.client.stdio.TextReceiveStream = stream  # type: ignore[attr-defined,misc]
