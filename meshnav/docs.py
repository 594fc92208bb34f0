"""The walker tools' reference, generated from their own definitions (``meshnav docs``)."""

from __future__ import annotations

import json
from typing import Any

from navigator.mcp.tools import WALKER_TOOLS

__all__ = ["walker_reference"]

ERRORS = {
    "seats": [
        "invalid_address",
        "invalid_arguments",
        "invalid_cursor",
        "unknown_tool",
        "tool_grants_changed",
        "registry_unavailable",
    ],
    "search": [
        "invalid_address",
        "invalid_arguments",
        "invalid_cursor",
        "tool_grants_changed",
        "tool_schema_too_large",
        "registry_unavailable",
    ],
    "describe": [
        "invalid_address",
        "invalid_arguments",
        "unknown_tool",
        "tool_not_granted",
        "contract_held",
        "tool_schema_too_large",
        "registry_unavailable",
    ],
    "call": [
        "invalid_address",
        "invalid_arguments",
        "unknown_tool",
        "tool_not_granted",
        "contract_held",
        "contract_changed",
        "confirmation_required",
        "tool_validation_unavailable",
        "node_unavailable",
        "node_timeout",
        "node_answer_too_large",
        "rate_limited",
        "registry_unavailable",
    ],
}


ANSWERS = {
    "seats": (
        "`{address, kind, status?, module?, entries, nextCursor?}`. Each entry is "
        "`{address, kind, ...}`: at the top, mesh seats (`kind: seat`, with `module`, `status`, "
        "`tools`), machines (`kind: machine`, `status`, `heartbeats?`, `tools`) and node seats "
        "(`address: */ROLE`, `holderCount`); under a machine (`status`, `heartbeats?`), its "
        "assignments and node seats "
        "(`module`, `status`, `tools` — the number the caller may use); under an assignment or "
        "seat, its tools as `{address, kind: tool, title, summary, status}`, without schemas; "
        "under a node seat (`*/ROLE`), its tools as search gives them: one contract on several "
        'machines once (`{address: "*/ROLE/TOOL", holders: [first 16 by name], holderCount, '
        "...}`), a contract on one machine by its own address. Only what holds at least one "
        "tool the caller may call is listed. A machine's `heartbeats`, where present, says why "
        "its status is what it is: `missed` (not answering: no heartbeat for three intervals) "
        "or `unrecorded` (the registry cannot record heartbeats now; the status is the one it "
        "had when it stopped taking them). A `status` is `answering`, `not answering`, "
        "`retired`, or `no endpoint` (a tool registered from a tools file: listed, never "
        "callable; its call is `node_unavailable`). A caller whose grants allow nothing gets "
        "`note` at the top, saying so and that an operator gives grants."
    ),
    "search": (
        "`{results: [{address, title, summary, status, contractDigest, inputSchema?}], "
        "nextCursor?}` ranked best first; ties break by address. The same tool on many holders "
        'is one result `{address: "*/ROLE/TOOL", holders: [16, those the query names first], '
        "holderCount, ...}`. "
        "`_meta.contract_digest` digests the page's addresses and contracts. `title` and "
        "`summary` hold at most 200 characters here and in `seats`; `describe` gives the whole "
        "title."
    ),
    "describe": (
        "`{address, title, description, inputSchema, outputSchema?, annotations?, confirmation, "
        "status, contractDigest}`; `confirmation` is `none`, `required` or `elicit-only`; "
        "`status` as in `seats`."
    ),
    "call": (
        "The owning node's result passed through whole: content blocks, structured content, "
        "`isError`. An answer of content blocks only also comes as structured content "
        "`{content: [those blocks]}`, since `call` declares an output schema and clients then "
        "require structured content. A node's own error is its result with `isError: true`; "
        'the navigator\'s errors carry `_meta["meshnav/error"]`. A tool whose contract changed '
        "and awaits an operator's approval answers `contract_held`, here and in `describe`, and "
        "is not listed by `seats` or `search` meanwhile."
    ),
}


#: What an argument is for where its schema leaves it to the name (the listing's bytes are few).
MEANINGS = {
    "cursor": "`nextCursor` of the previous page.",
    "schemas": "Include each result's `inputSchema`.",
    "args": "The tool's arguments, as its `inputSchema` says.",
    "confirm": "The `confirm` token of a `confirmation_required` answer.",
    "contract": "The `contractDigest` you read (`describe`, `search`): the call goes on only "
    "while it is the approved contract's, else `contract_changed` naming the current digest.",
}


def _arguments(schema: dict[str, Any]) -> list[str]:
    required = set(schema.get("required", []))
    lines = ["| argument | type | required | meaning |", "|---|---|---|---|"]
    for name, spec in schema.get("properties", {}).items():
        kind = spec.get("type", "any")
        if "minimum" in spec:
            kind += f" {spec['minimum']}–{spec['maximum']}"
        meaning = spec.get("description", MEANINGS.get(name, ""))
        if "default" in spec:
            meaning += f" Default `{json.dumps(spec['default'])}`."
        lines.append(
            f"| `{name}` | {kind} | {'yes' if name in required else 'no'} | {meaning.strip()} |"
        )
    return lines


def walker_reference() -> str:
    out = [
        "# The walker tools",
        "",
        "Generated by `meshnav docs` from the tools' own definitions; a test fails when it is"
        " stale.",
        "The navigator advertises these four tools and nothing else (SPEC §3). Errors are tool"
        " results",
        'with `isError: true`, structured content `{"error", "status", "message"}` and',
        '`_meta["meshnav/error"]` (SPEC §9). Each names the next step; beside it,',
        "`invalid_arguments` carries `pointer` (the member at fault) and `keyword`;",
        "`unknown_tool` and `tool_not_granted` carry `suggestions` (near addresses the caller may",
        "call); `invalid_address` carries `holders` for a collapsed `*/ROLE/TOOL` and",
        "`suggestions` for an address in the wrong case (ADR 0035); `rate_limited` carries",
        "`retryAfterS`, the whole seconds until the call may be made again (ADR 0041).",
        "",
    ]
    for name, (_, spec) in WALKER_TOOLS.items():
        out += [f"## `{name}` — {spec['title']}", "", spec["description"], ""]
        out += _arguments(spec["parameters"])
        out += ["", "Answer: " + ANSWERS[name], "", "`outputSchema`:", "", "```json"]
        out += [json.dumps(spec["output_schema"], indent=2), "```", ""]
        out += ["Errors: " + ", ".join(f"`{code}`" for code in ERRORS[name]), ""]
    return "\n".join(out)
