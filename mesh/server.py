"""One node, many assignments: each module's MCP server at ``/mcp/ROLE`` on one port.

Every module server carries ``CallTokenMiddleware``: a ``tools/call`` runs only with a call token
the navigator signed for exactly this machine, role, tool and arguments (SPEC §6). Anything else —
no token, a forged, expired, replayed or mismatched one — is refused with ``tool_not_granted`` and
the tool does not run. A call that arrives before the node has registered (it has no key yet, just
after it started) is ``node_unavailable``: the node is not serving yet, the call is not refused.
The navigator reaches a module through tools alone, so a module's resources and prompts (a wrapped
``stdio`` server may have both) are not served at all: no call token could cover them, and an
agent that reaches a node directly gets nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import mcp_types as mt
from fastmcp import FastMCP
from fastmcp.exceptions import PromptError, ResourceError
from fastmcp.prompts import Prompt
from fastmcp.resources import Resource, ResourceTemplate
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from starlette.applications import Starlette

from mesh import tracing
from mesh.calltokens import META_KEY, CallTokenVerifier, caller
from mesh.errors import CallTokenRejected, NotEnrolled
from mesh.methods import UnknownMethods
from mesh.modules import ModuleSpec

__all__ = ["Assignment", "CallTokenMiddleware", "NodeApp"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


@dataclass(slots=True)
class Assignment:
    """A module instance this node serves."""

    spec: ModuleSpec
    server: FastMCP
    #: The mesh seat this assignment holds, if any (addressed ``mesh/SEAT``).
    seat: str | None = None

    @property
    def role(self) -> str:
        return self.spec.role

    @property
    def kind(self) -> str:
        return "node_seat" if self.spec.module == "node" else "assignment"


_TOOLS_ONLY = "A node serves only tool calls its navigator signed."
#: A method a module's server does not serve: named by nothing the client sent (``mesh.methods``).
_NO_SUCH_METHOD = {"error": "not_found", "status": 404, "message": _TOOLS_ONLY}


def _refusal(error: CallTokenRejected | NotEnrolled) -> ToolResult:
    body = {"error": error.code, "status": error.status, "message": str(error)}
    return ToolResult(
        content=[mt.TextContent(type="text", text=json.dumps(body))],
        structured_content=body,
        meta={"meshnav/error": error.code},
        is_error=True,
    )


class CallTokenMiddleware(Middleware):
    def __init__(self, verifier: CallTokenVerifier, role: str) -> None:
        self.verifier = verifier
        self.role = role

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        params = context.message
        request = context.fastmcp_context.request_context if context.fastmcp_context else None
        meta = getattr(request, "meta", None) or {}
        token = meta.get(META_KEY) if isinstance(meta, dict) else None
        try:
            claims = self.verifier.verify(
                token, role=self.role, tool=params.name, arguments=params.arguments or {}
            )
        except (CallTokenRejected, NotEnrolled) as error:
            # a root span: a trace context the navigator did not sign for is not continued
            with tracing.span("module call", kind="server", role=self.role) as refused:
                tracing.failed(refused, error.code)
            return _refusal(error)
        calling = caller.set(claims.principal)
        # the navigator's node-hop span's context, under the token that vouches for the call
        with tracing.span(
            "module call",
            parent=meta if isinstance(meta, dict) else None,
            kind="server",
            role=self.role,
            tool=params.name,
            principal=claims.principal,
        ) as module:
            try:
                result = await call_next(context)
            finally:
                caller.reset(calling)
            if result.meta and result.meta.get("meshnav/error"):
                tracing.failed(module, str(result.meta["meshnav/error"]))
            return result

    # -- what no call token covers: listed as nothing, refused when asked for ------------------

    async def on_list_tools(self, context: Any, call_next: Any) -> Sequence[Tool]:
        """The navigator never lists a node's tools (the node pushes them when it registers), and
        a client reaching the node directly is given nothing: not the schemas (a database
        module's name its databases), and not a wrapped server's start."""
        return []

    async def on_list_resources(self, context: Any, call_next: Any) -> Sequence[Resource]:
        return []

    async def on_list_resource_templates(
        self, context: Any, call_next: Any
    ) -> Sequence[ResourceTemplate]:
        return []

    async def on_list_prompts(self, context: Any, call_next: Any) -> Sequence[Prompt]:
        return []

    async def on_read_resource(self, context: Any, call_next: Any) -> Any:
        raise ResourceError(_TOOLS_ONLY)

    async def on_get_prompt(self, context: Any, call_next: Any) -> Any:
        raise PromptError(_TOOLS_ONLY)


class NodeApp:
    """An ASGI app routing ``/mcp/ROLE`` to each assignment's server; other paths are 404."""

    def __init__(
        self,
        assignments: list[Assignment],
        verifier: CallTokenVerifier,
        extra: dict[str, Callable[[Scope, Receive, Send], Awaitable[None]]] | None = None,
        *,
        advertise_url: str | None = None,
    ) -> None:
        """``advertise_url`` is where the navigator reaches the node: requests naming another
        host are refused (421), as a browser led there by DNS rebinding would; loopback names
        and the address the node listens on stay allowed."""
        self.assignments = assignments
        self._apps: dict[str, Starlette] = {}
        advertised = urlsplit(advertise_url).hostname if advertise_url else None
        for assignment in assignments:
            # first, so outermost: nothing a module adds (a stdio server's deadline, which
            # starts its subprocess) runs for a call without a token
            assignment.server.middleware.insert(0, CallTokenMiddleware(verifier, assignment.role))
            assignment.server.middleware.insert(0, UnknownMethods(_NO_SUCH_METHOD))
            path = f"/mcp/{assignment.role}"
            self._apps[path] = assignment.server.http_app(
                path=path,
                host_origin_protection="auto",
                allowed_hosts=[advertised] if advertised else None,
            )
        self._extra = extra or {}

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for app in self._apps.values():
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        path = scope.get("path", "").rstrip("/")
        app = self._apps.get(path) or self._extra.get(path)
        if app is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        started = False
        try:
            async with self.lifespan():
                await send({"type": "lifespan.startup.complete"})
                started = True
                await receive()  # lifespan.shutdown
        except anyio.get_cancelled_exc_class():
            if started:  # the process ends without a shutdown (the agent failed): modules closed
                return
            raise
        except Exception:
            failed = "lifespan.shutdown.failed" if started else "lifespan.startup.failed"
            await send({"type": failed, "message": "the modules' lifespan failed"})
            raise
        await send({"type": "lifespan.shutdown.complete"})
