"""What a registration takes of a tool list: each tool checked and refused one by one, the rest
kept with their contract digests — names in the address grammar, no duplicate, schemas and
annotations that are objects, a definition JSON carries exactly and answers can write, and no
hidden text (``navigator.catalog.hidden``, SPEC §14).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mesh.digests import contract_digest
from navigator.addresses import TOOL_GRAMMAR, is_machine_name, is_name, is_tool_name, refused_name
from navigator.catalog.hidden import MAX_DESCRIPTION, hidden_text
from navigator.errors import InvalidArguments
from navigator.validation.json_values import measure
from registry import NewTool

__all__ = [
    "MAX_DEFINITION_DEPTH",
    "MAX_TOOLS_PER_ASSIGNMENT",
    "NOT_JSON",
    "OUTSIDE_GRAMMAR",
    "TOO_DEEP",
    "AssignmentSpec",
    "RegistrationResult",
    "check_names",
    "new_tools",
]

MAX_TOOLS_PER_ASSIGNMENT = 4096
#: Why a tool whose name breaks the grammar is refused: the rule it breaks.
OUTSIDE_GRAMMAR = f"name outside the address grammar ({TOOL_GRAMMAR})"

#: Why a tool whose definition JSON cannot carry exactly is refused: its digest (RFC 8785) has no
#: value for it, the registry and the answers no text.
NOT_JSON = "definition holds NaN, an infinity, a lone surrogate or an integer past 2^53"
#: How deep a tool's definition may nest (objects and arrays, the definition itself the first):
#: every answer that carries it must be written, and an answer's writer stops at 255 levels.
MAX_DEFINITION_DEPTH = 128
TOO_DEEP = f"definition nests deeper than {MAX_DEFINITION_DEPTH} levels"


@dataclass(frozen=True, slots=True)
class AssignmentSpec:
    role: str
    module: str
    tools: Sequence[Mapping[str, Any]]
    kind: str = "assignment"
    endpoint: str | None = None
    seat: str | None = None
    scopes: Sequence[str] = ()
    #: Why the node could not list the tools (they are its last list, or none): ADR 0057.
    not_listing: str | None = None


@dataclass(slots=True)
class RegistrationResult:
    registered: list[str] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"registered": self.registered, "refused": self.refused}


def check_names(machine: str, spec: AssignmentSpec) -> None:
    if not is_machine_name(machine):
        raise refused_name("machine")
    if not is_name(spec.role):
        raise refused_name("role")
    if spec.seat is not None and not is_name(spec.seat):
        raise refused_name("seat")
    if spec.kind not in ("assignment", "node_seat"):
        raise InvalidArguments("kind must be assignment or node_seat.")
    if len(spec.tools) > MAX_TOOLS_PER_ASSIGNMENT:
        raise InvalidArguments("Too many tools in one assignment.")


def new_tools(
    spec: AssignmentSpec,
    result: RegistrationResult,
    prefix: str,
    max_description: int = MAX_DESCRIPTION,
) -> list[NewTool]:
    tools: list[NewTool] = []
    seen: set[str] = set()
    for index, tool in enumerate(spec.tools):
        name = tool.get("name") if isinstance(tool, Mapping) else None
        if not isinstance(name, str) or not is_tool_name(name):
            label = (
                name
                if isinstance(name, str) and name.isprintable() and len(name) <= 128
                else f"#{index}"
            )
            result.refused.append({"name": label, "reason": OUTSIDE_GRAMMAR})
            continue
        if name in seen:
            result.refused.append({"name": name, "reason": "duplicate name"})
            continue
        if not isinstance(tool.get("inputSchema", {}), dict):
            result.refused.append({"name": name, "reason": "inputSchema is not an object"})
            continue
        if not isinstance(tool.get("annotations", {}), dict | None):
            result.refused.append({"name": name, "reason": "annotations is not an object"})
            continue
        definition = {k: v for k, v in tool.items() if k != "_meta"}
        hidden = hidden_text(definition, max_description)
        if hidden is not None:
            result.refused.append({"name": name, "reason": hidden})
            continue
        size = measure(definition, sys.maxsize, sys.maxsize)  # no recursion, however deep
        if size is not None and size.depth > MAX_DEFINITION_DEPTH:
            result.refused.append({"name": name, "reason": TOO_DEEP})
            continue
        digest = None if size is None else _digest(definition)
        if digest is None:
            result.refused.append({"name": name, "reason": NOT_JSON})
            continue
        seen.add(name)
        tools.append(NewTool(name=name, definition=definition, contract_digest=digest))
        result.registered.append(f"{prefix}/{name}")
    return tools


def _digest(definition: Mapping[str, Any]) -> str | None:
    """The contract digest of a definition the registry can hold and every answer can write;
    ``None`` for one holding NaN or an infinity (which Python's JSON reader takes), a lone
    surrogate anywhere, or, in its contract, an integer past 2^53 (RFC 8785 refuses those)."""
    try:
        json.dumps(definition, allow_nan=False, ensure_ascii=False).encode("utf-8")
        return contract_digest(definition)
    except ValueError:  # UnicodeEncodeError and rfc8785's CanonicalizationError are ValueErrors
        return None
