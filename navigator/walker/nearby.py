"""Addresses the caller may call, near one it could not use (ADR 0035).

An agent that asks for ``db1/sqlite/querry`` meant ``db1/sqlite/query``; one that was given
``*/node/uptime`` by search must pick a holder. Both answers name only live tools the caller may
call, so they tell it nothing the walk would not: a suggestion is an address, not an echo.
Each segment is compared as written, by edit distance with transpositions (OSA), one level at a
time — a few holders, a few of their roles, a few of their tools —, so the work is bounded by what
is near, not by the mesh.
"""

from __future__ import annotations

from collections.abc import Iterable

from rapidfuzz import process
from rapidfuzz.distance import OSA

from navigator.access.grants import Permissions
from navigator.addresses import MESH, Address
from navigator.catalog.view import Catalog
from navigator.walker.seats import reachable

__all__ = ["SUGGESTIONS", "holders_of", "nearby"]

#: The most addresses (or holders) an answer suggests.
SUGGESTIONS = 3
#: Near names kept at each level before the next level is read.
_NEAR_PER_LEVEL = 5


def _max_distance(segment: str) -> int:
    """Edits a segment may be off by: one for a short name, up to three for a long one."""
    return max(1, min(3, len(segment) // 3))


def _near(segment: str, names: Iterable[str]) -> list[tuple[str, int]]:
    """The names within ``_max_distance`` edits of ``segment``, nearest first (itself at 0)."""
    found = process.extract(
        segment,
        list(names),
        scorer=OSA.distance,
        score_cutoff=_max_distance(segment),
        limit=_NEAR_PER_LEVEL,
    )
    return [(name, int(distance)) for name, distance, _ in found]


def nearby(catalog: Catalog, permissions: Permissions, address: Address) -> list[str]:
    """Up to ``SUGGESTIONS`` addresses of live tools the caller may call that are a few edits
    from ``address`` in its segments together, nearest first, then by address."""
    holder, role, tool = address.holder, str(address.role), str(address.tool)
    holders = [*(record.name for record in catalog.machines()), MESH]  # mesh: its seats, if any
    found: list[tuple[int, str]] = []
    for near_holder, holder_off in _near(holder, holders):
        roles = {a.address_role: a for a in catalog.assignments_at(Address(near_holder))}
        for near_role, role_off in _near(role, roles):
            tools = catalog.assignment_tools(roles[near_role])
            by_name = {t.name: t for t in tools.values()}
            for near_tool, tool_off in _near(tool, by_name):
                candidate = by_name[near_tool].address
                if candidate == str(address) or catalog.find_tool(candidate) is None:
                    continue
                if permissions.permits(candidate):
                    found.append((holder_off + role_off + tool_off, candidate))
    return [candidate for _, candidate in sorted(found)[:SUGGESTIONS]]


def holders_of(
    catalog: Catalog, permissions: Permissions, role: str, tool: str
) -> tuple[list[str], bool]:
    """The first ``SUGGESTIONS`` holders, in holder order, whose ``role/tool`` is live and the
    caller may call — what a collapsed ``*/role/tool`` stands for —, and whether ``role`` is a
    node seat on any of them (then ``seats '*/role'`` lists them all)."""
    held = [
        assignment
        for assignment in reachable(catalog, permissions)
        if assignment.seat is None
        and assignment.role == role
        and catalog.find_tool(f"{assignment.holder}/{role}/{tool}") is not None
        and permissions.permits(f"{assignment.holder}/{role}/{tool}")
    ]
    holders = sorted(assignment.holder for assignment in held)[:SUGGESTIONS]
    return holders, any(assignment.kind == "node_seat" for assignment in held)
