"""A live tool and an assignment as the catalogue holds them, and what a set of tools is.

A ``CatalogTool`` is what an agent addresses (``HOLDER/ROLE/TOOL``) joined to where it runs (a
machine's assignment and its endpoint); a ``CatalogAssignment`` names its tools only, their
contracts living on the tools. ``contracts_fingerprint`` is what cursors bind (SPEC §3, §5).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mesh.digests import digest
from navigator.catalog.contracts import Contract
from navigator.limits import LIMITS
from navigator.search.documents import slot_init
from registry import AssignmentPlace

__all__ = ["CatalogAssignment", "CatalogTool", "contracts_fingerprint"]


@slot_init  # as ``ToolDocument``: a load makes as many of these
@dataclass(frozen=True, slots=True)
class CatalogTool:
    """One live tool: how agents address it, and where it actually runs."""

    address: str
    holder: str
    role: str
    name: str
    machine: str
    endpoint_role: str
    endpoint: str | None
    contract: Contract
    confirmation: str

    @property
    def contract_digest(self) -> str:
        return self.contract.digest

    @property
    def definition(self) -> dict[str, Any]:
        return self.contract.definition

    @property
    def annotations(self) -> dict[str, Any] | None:
        return self.contract.annotations

    @property
    def title(self) -> str:
        """The whole title, as ``describe`` gives it."""
        return self.contract.title or self.name

    @property
    def listed_title(self) -> str:
        """The title as a listing or a search result shows it: at most 200 characters, as the
        summary, so that an entry without a schema always fits in an answer (ADR 0022)."""
        return _clipped(self.title)

    @property
    def description(self) -> str:
        return self.contract.description

    @property
    def summary(self) -> str:
        """The first sentence or line of the description, at most 200 characters."""
        text = self.description.strip().split("\n", 1)[0]
        head, dot, _ = text.partition(". ")
        return _clipped(head + "." if dot else text)

    @property
    def input_schema(self) -> Any:
        return self.definition.get("inputSchema", {"type": "object"})


def contracts_fingerprint(tools: Iterable[CatalogTool]) -> str:
    """The digest (SPEC §5) of what ``tools`` are, whatever their order: each one's address,
    contract digest and confirmation mark."""
    return digest(sorted([t.address, t.contract.digest, t.confirmation] for t in tools))


def _clipped(text: str) -> str:
    """``text`` cut to ``LIMITS.listed_chars`` characters, an ellipsis marking the cut."""
    most = LIMITS.listed_chars
    return text if len(text) <= most else text[: most - 1] + "…"


@dataclass(frozen=True, slots=True)
class CatalogAssignment(AssignmentPlace):
    """An assignment as the catalogue keeps it: its tools by name only (their contracts live on
    the ``CatalogTool``s)."""

    tools: tuple[str, ...]

    @property
    def listed_kind(self) -> str:
        """How a listing names its kind: seat, node seat or assignment."""
        return "seat" if self.seat else self.kind.replace("_", " ")
