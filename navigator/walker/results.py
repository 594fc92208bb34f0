"""What the walker answers of one tool: a ranked hit as one of search's results, and a tool's
contract as describe gives it.

A hit is ranked by the index, which may be a moment behind the view: a tool retired since is
passed over, and a collapsed hit loses the holders that are gone, never an error of the whole
search.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from navigator.catalog.machines import collapsed_status
from navigator.catalog.records import CatalogTool
from navigator.catalog.view import Catalog
from navigator.search import Hit, shown_holders
from navigator.walker.confirmation import Confirmations

__all__ = ["contract", "search_result"]


def search_result(catalog: Catalog, hit: Hit, schemas: bool) -> dict[str, Any] | None:
    """The hit as a result; ``None`` when its tool is no longer in the view (retired since
    the index ranked it): a hit that disappeared is passed over, never an error of the
    whole search."""
    tool = catalog.find_tool(hit.document.address)
    if tool is None and hit.holders:  # its first holder left: the group is the others
        others = _without_holders_gone(catalog, hit)
        if others is None:
            return None
        hit, tool = others, catalog.find_tool(others.document.address)
    if tool is None:
        return None
    result: dict[str, Any] = {
        "address": hit.address,
        "title": tool.listed_title,
        "summary": tool.summary,
        "status": catalog.status(tool),
        "contractDigest": tool.contract_digest,
    }
    if hit.holders:
        result["holders"] = list(hit.holders)
        result["holderCount"] = hit.holder_count
        result["status"] = collapsed_status(  # any holder the caller may call, not only those shown
            {catalog.status_at(f"{holder}/{tool.role}/{tool.name}") for holder in hit.every_holder}
        )
    if schemas:
        result["inputSchema"] = tool.input_schema
    return result


def _without_holders_gone(catalog: Catalog, hit: Hit) -> Hit | None:
    """A collapsed hit less the holders whose tool is no longer in the view (a rare window:
    a machine retired since the index ranked it); ``None`` when none is left."""
    role, name = hit.document.role, hit.document.name
    live = [
        tool
        for holder in hit.every_holder
        if (tool := catalog.find_tool(f"{holder}/{role}/{name}")) is not None
    ]
    if not live:
        return None
    first = replace(hit.document, address=live[0].address, holder=live[0].holder)
    if len(live) == 1:
        return Hit(first.address, first, (), 1, hit.score)
    holders = tuple(tool.holder for tool in live)
    still = set(holders)
    listed = [holder for holder in hit.holders if holder in still]  # in the order it listed
    shown = shown_holders(holders, listed)
    return Hit(hit.address, first, shown, len(live), hit.score, holders)


def contract(catalog: Catalog, confirmations: Confirmations, tool: CatalogTool) -> dict[str, Any]:
    """The tool's contract as describe gives it: its input schema whole, its output schema when
    it declares an object, its annotations, confirmation policy, status and contract digest."""
    definition = tool.definition
    described: dict[str, Any] = {
        "address": tool.address,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    # as the outputSchema declares them: objects (a registry may hold a tool from before
    # the registrar refused other shapes, and a typed client refuses the whole answer)
    if isinstance(definition.get("outputSchema"), dict):
        described["outputSchema"] = definition["outputSchema"]
    if tool.annotations is not None:
        described["annotations"] = tool.annotations
    described["confirmation"] = confirmations.policy(tool)
    described["status"] = catalog.status(tool)
    described["contractDigest"] = tool.contract_digest
    return described
