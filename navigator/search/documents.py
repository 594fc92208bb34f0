"""What the search index holds and what it answers with.

A ``ToolDocument`` is one tool on one holder, as its ``tools/list`` entry describes it; a ``Hit`` is
one ranked result — a concrete tool, or one tool collapsed over the holders that offer it — and a
``SearchPage`` is one page of hits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Hit", "SearchPage", "ToolDocument", "document_from_tool"]


@dataclass(frozen=True, slots=True)
class ToolDocument:
    """One tool on one holder: the text search reads, and the address it answers with."""

    address: str  # "HOLDER/ROLE/TOOL", concrete
    holder: str  # "mesh" or a machine name
    role: str
    name: str  # the tool's own name
    title: str
    description: str
    # (parameter name, parameter description) for each top-level inputSchema property
    parameters: tuple[tuple[str, str], ...]
    # equal digest + equal role + equal name: the same tool on another holder
    contract_digest: str


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def document_from_tool(
    holder: str, role: str, tool: Mapping[str, Any], contract_digest: str
) -> ToolDocument:
    """The document for one MCP ``tools/list`` entry served by ``holder`` under ``role``.

    The title is the tool's ``title``, else its ``annotations.title``; parameters are the
    top-level ``inputSchema.properties`` in the schema's own order, each with its description
    (empty when it has none). Anything of the wrong type is read as absent.
    """
    name = _text(tool.get("name"))
    annotations = tool.get("annotations")
    title = _text(tool.get("title"))
    if not title and isinstance(annotations, Mapping):
        title = _text(annotations.get("title"))
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    parameters: list[tuple[str, str]] = []
    if isinstance(properties, Mapping):
        for key, spec in properties.items():
            if isinstance(key, str):
                described = spec.get("description") if isinstance(spec, Mapping) else None
                parameters.append((key, _text(described)))
    return ToolDocument(
        address=f"{holder}/{role}/{name}",
        holder=holder,
        role=role,
        name=name,
        title=title,
        description=_text(tool.get("description")),
        parameters=tuple(parameters),
        contract_digest=contract_digest,
    )


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked result.

    A tool offered identically by two or more permitted holders is one collapsed hit, addressed
    ``*/ROLE/TOOL``, with the first 16 of those holders in address order and their count; any other
    hit is the concrete address of one tool (``holders`` empty, ``holder_count`` 1).
    """

    address: str  # concrete address, or "*/ROLE/TOOL" for a collapsed group
    document: ToolDocument  # a representative: the first permitted holder by address
    holders: tuple[str, ...]  # collapsed: first 16 permitted holders in address order; single: ()
    holder_count: int  # collapsed: number of permitted holders (>= 2); single: 1
    score: float


@dataclass(frozen=True, slots=True)
class SearchPage:
    """One page of ranked hits, and whether more remain after it."""

    hits: list[Hit]
    has_more: bool
