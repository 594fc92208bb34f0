"""The four walker tools — the only tools the navigator advertises (SPEC §3).

Each is a ``Tool`` subclass with a hand-written schema that advertises only arguments that work;
arguments are checked with the navigator's own bounded validator (FastMCP validates nothing for
hand-written schemas, and its own errors would echo the input). Errors become SPEC §9 answers in
one place, ``navigator.mcp.answers.error_answer``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp.exceptions import ToolError
from fastmcp.server.dependencies import get_context
from fastmcp.tools.base import InputRequiredToolResult, Tool, ToolResult
from mcp_types import CallToolResult, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import Field

from navigator.errors import (
    InvalidArguments,
    NavigatorError,
    NodeUnavailable,
    ToolValidationUnavailable,
    from_registry,
)
from navigator.limits import LIMITS
from navigator.mcp.answers import answer, error_answer
from navigator.mcp.elicitation import InputNeeded, elicitor_for
from navigator.mcp.middleware import current_caller
from navigator.validation import NOT_UNICODE, CompiledSchema, compile_schema, is_unicode_text
from navigator.walker.calling import WALKER_ARGUMENTS
from navigator.walker.operations import Navigator
from navigator.walker.sizing import room_for
from registry import RegistryError

__all__ = ["WALKER_TOOLS", "check_arguments", "walker_tools"]

_ADDRESS: dict[str, Any] = {
    "type": "string"
}  # the address parser judges the rest (invalid_address)
#: The previous page's ``nextCursor`` (the name says it; the listing's bytes are few).
_CURSOR = {"type": "string", "minLength": 1, "maxLength": 512}

#: A node's answer holding a number JSON cannot write (both eras' readers take NaN and Infinity).
_NOT_JSON = "The node's answer is not JSON: it holds NaN or Infinity."

#: Every field a walker answers is declared, so that a typed client (FastMCP's ``.data``) keeps
#: it, each by its type (the Inspector's strict check refuses a field declared ``{}``); what each
#: means is in the tools' descriptions and the reference (docs/reference/walker-tools.md).
_TEXT: dict[str, Any] = {"type": "string"}
_COUNT: dict[str, Any] = {"type": "integer"}
_OBJECT: dict[str, Any] = {"type": "object"}
_HOLDERS = {"holders": {"type": "array"}, "holderCount": _COUNT}  # holders: names
#: A tool's status; ``no endpoint``: a tools file's, never callable (ADR 0057). Declared once, in
#: describe's answer (the listing's bytes are few); the reference lists every status.
_STATUS = {"enum": ["answering", "not answering", "no endpoint", "retired"]}
_SHOWN = {"title": _TEXT, "summary": _TEXT, "status": _TEXT}
_ENTRY = {
    "type": "object",
    "properties": {
        "address": _TEXT,
        "kind": _TEXT,
        **_SHOWN,
        "module": _TEXT,
        "tools": _COUNT,
        "heartbeats": _TEXT,  # a machine's: missed, or unrecorded (ADR 0031)
        **_HOLDERS,
    },
    "required": ["address", "kind"],
}
_RESULT = {
    "type": "object",
    "properties": {
        "address": _TEXT,
        **_SHOWN,
        "contractDigest": _TEXT,
        **_HOLDERS,
        "inputSchema": _OBJECT,
    },
    "required": ["address", "title", "summary", "status"],
}


class WalkerTool(Tool):
    """Checks the arguments against the tool's own schema, then runs ``answer``."""

    navigator: Annotated[Any, Field(exclude=True)] = None

    def _checker(self) -> CompiledSchema:
        """The tool's own schema, compiled once."""
        checker = self.__dict__.get("_compiled")
        if checker is None:
            checker = compile_schema(self.parameters)
            self.__dict__["_compiled"] = checker
        return checker

    def get_meta(self) -> dict[str, Any]:
        """No FastMCP bookkeeping in the listing: every byte of it is read by each agent."""
        return {}

    def to_mcp_tool(self, **overrides: Any) -> MCPTool:
        """Not even ``_meta: {}``."""
        return super().to_mcp_tool(**{"_meta": None, **overrides})

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            check_arguments(self._checker(), arguments, self.name)
            return await self.answer(arguments)
        except NavigatorError as error:
            return error_answer(error)
        except RegistryError as error:
            return error_answer(from_registry(error))

    async def answer(self, arguments: dict[str, Any]) -> ToolResult:
        """Each walker tool's own work, on arguments its schema accepted."""
        raise TypeError(f"{type(self).__name__} must define answer()")


def _answer_room() -> int:
    """What this request's answer may take of the 64 KiB: less its JSON-RPC id (ADR 0022)."""
    request = get_context().request_context
    return room_for(None if request is None else request.request_id)


class SeatsTool(WalkerTool):
    async def answer(self, arguments: dict[str, Any]) -> ToolResult:
        listing = await self.navigator.seats(
            current_caller(),
            arguments.get("address"),
            arguments.get("cursor"),
            answer_bytes=_answer_room(),
        )
        return answer(listing)


class SearchTool(WalkerTool):
    async def answer(self, arguments: dict[str, Any]) -> ToolResult:
        results, meta = await self.navigator.search(
            current_caller(),
            arguments["query"],
            limit=int(arguments.get("limit", LIMITS.search_limit_default)),  # 2.0 is an integer
            within=arguments.get("within"),
            schemas=arguments.get("schemas", False),
            cursor=arguments.get("cursor"),
            answer_bytes=_answer_room(),
        )
        return answer(results, meta=meta)


class DescribeTool(WalkerTool):
    async def answer(self, arguments: dict[str, Any]) -> ToolResult:
        contract = await self.navigator.describe(
            current_caller(), arguments["address"], answer_bytes=_answer_room()
        )
        return answer(contract)


class CallTool(WalkerTool):
    async def answer(self, arguments: dict[str, Any]) -> ToolResult:
        context = get_context()

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await context.report_progress(value, total, message)

        try:
            result = await self.navigator.call(
                current_caller(),
                arguments["address"],
                arguments.get("args", {}),
                confirm=arguments.get("confirm"),
                contract=arguments.get("contract"),
                elicitor=elicitor_for(context),
                progress=progress,
            )
        except InputNeeded as needed:
            return InputRequiredToolResult(needed.result)
        if result.structured_content is None and not result.is_error:
            # call declares an outputSchema, and a client then requires structured content: a
            # node's content-only answer (a wrapped stdio server's text) also comes as its blocks
            result = result.model_copy(update={"structured_content": {"content": _blocks(result)}})
        try:
            return ToolResult.from_mcp_result(result)
        except ToolError:  # NaN or Infinity, which the node wrote and JSON cannot: no result
            raise NodeUnavailable(_NOT_JSON) from None


def _blocks(result: CallToolResult) -> list[dict[str, Any]]:
    return [
        block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content
    ]


def check_arguments(checker: CompiledSchema, arguments: dict[str, Any], tool: str) -> None:
    """A walker's own arguments against its schema: any failure, a size bound included, is
    ``invalid_arguments`` (SPEC §9) at the member's pointer, naming where the schema is read:
    ``tools/list``. ``call``'s ``args`` is checked only as an object here; it is the tool's to
    judge, after its address, its existence and the grants (SPEC §3)."""
    own = {
        name: {} if name == "args" and isinstance(value, dict) else value
        for name, value in arguments.items()
    }
    if not is_unicode_text(own):
        raise InvalidArguments(NOT_UNICODE)
    try:
        checker.validate(
            own,
            next_step=f"Read {tool}'s inputSchema in tools/list",
            given_names=WALKER_ARGUMENTS,
        )
    except ToolValidationUnavailable:
        raise InvalidArguments("The arguments are larger than this tool takes.") from None


def _query_schema() -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": LIMITS.query_chars,
        "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$",  # C0, DEL and C1
        "description": "What you want done, e.g. 'list postgres databases'.",
    }


WALKER_TOOLS: dict[str, tuple[type[WalkerTool], dict[str, Any]]] = {
    "seats": (
        SeatsTool,
        {
            "title": "Walk the mesh",
            "description": (
                "Walk the mesh a level at a time. No address: the mesh seats, the machines and "
                "the node seats every machine holds. A machine ('db1'): its assignments. An "
                "assignment ('db1/postgres'), seat ('mesh/backup') or node seat ('*/node'): its "
                "tools. Shows only what you may call; describe a tool, then call it by its "
                "address."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "address": {
                        **_ADDRESS,
                        "description": "A prefix: 'db1', 'db1/postgres'.",
                    },
                    "cursor": _CURSOR,
                },
                "additionalProperties": False,
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "address": {"anyOf": [_TEXT, {"type": "null"}]},  # null at the top
                    "kind": _TEXT,
                    "status": _TEXT,
                    "heartbeats": _TEXT,  # a machine's own listing's, as its entry's
                    "module": _TEXT,
                    "holderCount": _COUNT,
                    "entries": {"type": "array", "items": _ENTRY},
                    "nextCursor": _TEXT,
                    "note": _TEXT,  # why the mesh is empty: no grants
                },
                "required": ["address", "kind", "entries"],
            },
        },
    ),
    "search": (
        SearchTool,
        {
            "title": "Find a tool",
            "description": (
                "Find tools anywhere in the mesh by what they do: ranked addresses, each with a "
                "summary; '*/ROLE/TOOL' stands for one tool on many holders (pick one of "
                "'holders'). Narrow with 'within' ('db1/*/*')."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": _query_schema(),
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": LIMITS.search_limit_max,
                        "default": LIMITS.search_limit_default,
                    },
                    "within": {**_ADDRESS, "description": "A pattern: '*/postgres/*', 'db1'."},
                    "schemas": {"type": "boolean", "default": False},  # each result's inputSchema
                    "cursor": _CURSOR,
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "results": {"type": "array", "items": _RESULT},
                    "nextCursor": _TEXT,
                },
                "required": ["results"],
            },
        },
    ),
    "describe": (
        DescribeTool,
        {
            "title": "Read a tool's contract",
            "description": (
                "One tool's full contract by its address ('db1/postgres/query'): its inputSchema, "
                "whether a call needs confirmation, and the rest."
            ),
            "parameters": {
                "type": "object",
                "properties": {"address": {**_ADDRESS, "description": "HOLDER/ROLE/TOOL."}},
                "required": ["address"],
                "additionalProperties": False,
            },
            "output_schema": {
                "type": "object",
                "properties": {
                    "address": _TEXT,
                    "title": _TEXT,
                    "description": _TEXT,
                    "inputSchema": _OBJECT,
                    "outputSchema": _OBJECT,
                    "annotations": _OBJECT,
                    "confirmation": {"enum": ["none", "required", "elicit-only"]},
                    "status": _STATUS,
                    "contractDigest": _TEXT,
                },
                "required": ["address", "title", "inputSchema", "confirmation", "status"],
            },
        },
    ),
    "call": (
        CallTool,
        {
            "title": "Call a tool",
            "description": (
                "Run one tool by its full address with 'args' as its inputSchema says. A tool "
                "that may change things can answer confirmation_required with a 'confirm' "
                "token: call again with it."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "address": {**_ADDRESS, "description": "HOLDER/ROLE/TOOL."},
                    # what each is for, the tool's description says
                    "args": {"type": "object", "default": {}},
                    "confirm": {"type": "string", "minLength": 1, "maxLength": 128},
                    "contract": {"type": "string", "maxLength": 64},  # a contractDigest to pin
                },
                "required": ["address"],
                "additionalProperties": False,
            },
            # the node's structured content, or {"content": its blocks} (the reference says)
            "output_schema": {"type": "object"},
        },
    ),
}

#: ``destructiveHint`` means something only beside ``readOnlyHint: false`` (MCP): not written.
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def walker_tools(navigator: Navigator) -> list[WalkerTool]:
    tools = []
    for name, (cls, spec) in WALKER_TOOLS.items():
        annotations = None if name == "call" else _READ_ONLY
        tools.append(
            cls(
                name=name,
                title=spec["title"],
                description=spec["description"],
                parameters=spec["parameters"],
                output_schema=spec["output_schema"],
                annotations=annotations,
                navigator=navigator,
            )
        )
    return tools
