"""``mesh.tools.discover``: search as a JSON-RPC method of its own, for clients that discover tools
outside ``tools/call`` (issue 4).

It answers exactly as the ``search`` walker tool does with ``schemas: true`` — the same index, the
same grants, the same paging and cursors — and fails with JSON-RPC errors whose ``data`` is the
SPEC §9 body. Its params are checked by the navigator's own validator: unknown params are refused
and nothing the client sent is repeated. It is served through a FastMCP server extension
(SEP-2133), advertised as ``io.meshnav/discover``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastmcp.server.extensions import MethodBinding, ServerExtension
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, RequestParams
from pydantic import ConfigDict

from navigator.errors import NavigatorError, error_body, from_registry
from navigator.limits import LIMITS
from navigator.mcp.middleware import CallerSource, resolve_caller
from navigator.mcp.tools import WALKER_TOOLS, check_arguments
from navigator.validation import compile_schema
from navigator.walker.operations import Navigator
from navigator.walker.sizing import room_for
from registry import RegistryError

__all__ = ["METHOD", "DiscoverExtension"]

METHOD = "mesh.tools.discover"

#: search's own argument schema, less ``schemas`` (always true here).
_SEARCH = WALKER_TOOLS["search"][1]["parameters"]
PARAMS_SCHEMA = {
    **_SEARCH,
    "properties": {k: v for k, v in _SEARCH["properties"].items() if k != "schemas"},
}


class DiscoverParams(RequestParams):
    """Whatever the client sent; judged by ``PARAMS_SCHEMA`` in the handler, not by pydantic,
    whose errors would repeat the input."""

    model_config = ConfigDict(extra="allow")


def _rpc_error(error: NavigatorError) -> MCPError:
    code = INVALID_PARAMS if error.status == 400 else INTERNAL_ERROR
    return MCPError(code=code, message=error.message, data=error_body(error))


class DiscoverExtension(ServerExtension):
    identifier = "io.meshnav/discover"

    def __init__(self, navigator: Navigator, source: CallerSource | None = None) -> None:
        self.navigator = navigator
        self.source = source
        self._checker = compile_schema(PARAMS_SCHEMA)

    def settings(self) -> dict[str, Any]:
        return {"method": METHOD}

    def methods(self) -> Sequence[MethodBinding]:
        return (MethodBinding(method=METHOD, params_type=DiscoverParams, handler=self._discover),)

    async def _discover(
        self, context: ServerRequestContext[Any, Any], params: Any
    ) -> dict[str, Any]:
        arguments = dict(params.model_extra or {}) if isinstance(params, DiscoverParams) else {}
        try:
            check_arguments(self._checker, arguments, "search")  # its arguments, less schemas
            answer, meta = await self.navigator.search(
                await resolve_caller(self.source),
                arguments["query"],
                limit=int(arguments.get("limit", LIMITS.search_limit_default)),
                within=arguments.get("within"),
                schemas=True,
                cursor=arguments.get("cursor"),
                answer_bytes=room_for(context.request_id),
                with_text=False,  # a JSON-RPC result, not a tool's answer with its text block
            )
        except NavigatorError as error:
            raise _rpc_error(error) from None
        except RegistryError as error:
            raise _rpc_error(from_registry(error)) from None
        return {**answer, "_meta": meta}
