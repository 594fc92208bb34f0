"""Tool contracts as the catalogue holds them: one object per contract digest, however many
holders serve it, and its JSON decoded once per pass over the registry's rows.

At 100,000 tools most share a few thousand contracts: holding each one once, weakly — kept as long
as a tool holds it — is what keeps a view's size and a load's time down.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping
from typing import Any

from navigator.search import ToolDocument, document_from_tool
from registry import CatalogRow

__all__ = ["Contract", "ContractReader", "SharedContracts"]

#: Dead entries are dropped from the shared contracts once they hold at least this many.
_MIN_PURGE = 1024


class Contract:
    """A tool's contract, held once per contract digest however many holders serve it.

    The definition stays the compact JSON the registry gave; ``definition`` decodes it when a
    caller needs all of it (describe, a call's first validation, ``schemas: true``). Its title,
    description and annotations are read from it the first time one is asked for: a load decodes
    each definition once, for its search document, and keeps none of it here.
    """

    __slots__ = ("__weakref__", "_head", "digest", "raw")

    def __init__(self, digest: str, raw: str) -> None:
        self.digest = digest
        self.raw = raw
        self._head: tuple[str, str, dict[str, Any] | None] | None = None

    def _read(self) -> tuple[str, str, dict[str, Any] | None]:
        head = self._head
        if head is None:
            head = self._head = _head_of(json.loads(self.raw))
        return head

    @property
    def title(self) -> str:
        return self._read()[0]

    @property
    def description(self) -> str:
        return self._read()[1]

    @property
    def annotations(self) -> dict[str, Any] | None:
        return self._read()[2]

    @property
    def definition(self) -> dict[str, Any]:
        decoded: dict[str, Any] = json.loads(self.raw)
        return decoded

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Contract):
            return NotImplemented
        return (self.digest, self.raw) == (other.digest, other.raw)

    def __hash__(self) -> int:
        return hash((self.digest, self.raw))

    def __repr__(self) -> str:
        return f"Contract(digest={self.digest!r})"


def _head_of(definition: Mapping[str, Any]) -> tuple[str, str, dict[str, Any] | None]:
    """A definition's title, description and annotations (each as ``Contract`` reads it).
    Annotations that are not an object are none: the registrar refuses such a tool, but a
    registry may hold one from before, and its title was read from them as from an object."""
    annotations = definition.get("annotations")
    if not isinstance(annotations, dict):
        annotations = None
    return (
        str(definition.get("title") or (annotations or {}).get("title") or ""),
        str(definition.get("description") or ""),
        annotations,
    )


class SharedContracts:
    """Contracts by digest, held weakly, so that every holder of a contract shares one object as
    long as one holds it.

    A ``weakref.WeakValueDictionary`` would do, at a few microseconds per contract a load adds (a
    third of a second at 100,000): this keeps plain weak references and drops the dead ones when
    it has doubled in size since it last did.
    """

    __slots__ = ("_purge_at", "_refs")

    def __init__(self) -> None:
        self._refs: dict[str, weakref.ref[Contract]] = {}
        self._purge_at = _MIN_PURGE

    def __len__(self) -> int:
        return sum(1 for ref in self._refs.values() if ref() is not None)

    def get(self, digest: str) -> Contract | None:
        ref = self._refs.get(digest)
        return None if ref is None else ref()

    def put(self, contract: Contract) -> None:
        self._refs[contract.digest] = weakref.ref(contract)
        if len(self._refs) >= self._purge_at:
            self._refs = {digest: ref for digest, ref in self._refs.items() if ref() is not None}
            self._purge_at = max(_MIN_PURGE, 2 * len(self._refs))


class ContractReader:
    """The contract for each row's digest — one object per digest, shared by every holder and
    kept (weakly) as long as a tool holds it — and, for one pass over rows, each digest's search
    document, so that a contract's JSON is decoded once per pass however many hold it."""

    __slots__ = ("_seen", "_shared")

    def __init__(self, shared: SharedContracts) -> None:
        self._shared = shared
        self._seen: dict[str, tuple[Contract, ToolDocument]] = {}

    def get(self, row: CatalogRow, holder: str, role: str) -> tuple[Contract, ToolDocument]:
        digest = str(row.contract_digest)
        seen = self._seen.get(digest)
        if seen is None:
            raw = str(row.definition)
            contract = self._shared.get(digest)
            if contract is None:
                contract = Contract(digest, raw)
                self._shared.put(contract)
            document = document_from_tool(holder, role, json.loads(raw), digest)
            self._seen[digest] = (contract, document)
            return contract, document
        contract, document = seen
        # Another holder of a contract seen in this pass: its text, at this holder's address.
        name = document.name
        return contract, ToolDocument(
            f"{holder}/{role}/{name}",
            holder,
            role,
            name,
            document.title,
            document.description,
            document.parameters,
            digest,
        )
