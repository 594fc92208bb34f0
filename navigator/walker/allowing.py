"""The caller's grants, read from the registry on every request, and the tool an address names
checked against them: SPEC §3's first two steps of a call, which ``describe`` takes too.

Nothing is answered from a grant cache: grants come with the request's token when it came over
HTTP, and are read here otherwise (stdio), one indexed query each. A refusal names the near
addresses the caller may call — a function of the address asked and the grants alone, nothing of
what is there — or points at search when there are none (ADR 0035).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from navigator.access.grants import Caller, Permissions, compile_permissions
from navigator.addresses import COLLAPSED, LOWER_CASE, parse_collapsed, parse_tool_address
from navigator.catalog.records import CatalogTool
from navigator.catalog.registry_reads import short_read
from navigator.catalog.view import Catalog
from navigator.errors import (
    ContractHeld,
    InvalidAddress,
    NavigatorError,
    ToolNotGranted,
    UnknownTool,
)
from navigator.limits import LIMITS
from navigator.walker.nearby import holders_of, nearby
from navigator.walker.trail import Seen
from registry import GrantSnapshot, Registry, read_grant_revision, read_snapshot
from registry.contracts import REJECTED

__all__ = ["GrantChecks"]

T = TypeVar("T")

_NO_HOLDER = "No holder you may call has it: search for the tool by what it does."

_NEAR = {
    UnknownTool: "No tool you may call is at that address.",
    ToolNotGranted: "No grant allows that address.",
}


class GrantChecks:
    """The grants of each request, read now, and whether they allow one tool."""

    def __init__(self, registry: Registry, catalog: Catalog) -> None:
        self.registry = registry
        self.catalog = catalog

    async def permissions(self, caller: Caller) -> Permissions:
        """The caller's grants as the registry holds them now: read with this request's token
        when it came over HTTP, read here otherwise (stdio). Never from a cache."""
        if caller.grants is not None:
            return compile_permissions(caller, caller.grants)
        return await self._read(lambda: self._read_permissions(caller))

    async def revision(self) -> int:
        """The registry's grant revision now: a page whose grants moved is refused."""
        return await self._read(lambda: read_grant_revision(self.registry))

    async def allowed(
        self, caller: Caller, address: str, *, fresh: bool = False, seen: Seen | None = None
    ) -> CatalogTool:
        """SPEC §3's first two steps of a call, as ``describe`` takes them too: the address parses
        as one tool's, the caller's grants, read now, could reach it at all (else
        ``tool_not_granted`` whether a tool is there or not, ADR 0035), the tool exists and is not
        retired (``unknown_tool``, naming near addresses the caller may call), and the grants
        allow it (``tool_not_granted``). ``fresh`` reads the grants from the registry even when
        the request's token came with them: the request began long enough ago that they may
        have changed. ``seen`` is told the row that decided, from this same read."""
        try:
            parsed = parse_tool_address(address)
        except InvalidAddress as error:
            raise await self._address_help(caller, address, error) from None
        if fresh:
            permissions = await self._read(lambda: self._read_permissions(caller))
        else:
            permissions = await self.permissions(caller)
        holder, role, name = parsed.holder, str(parsed.role), str(parsed.tool)
        near = functools.partial(nearby, self.catalog, permissions, parsed)
        decision = permissions.decide(holder, role, name)
        if seen is not None:
            seen.row = decision.row
        if not permissions.covers(holder, role, name):
            raise _near(ToolNotGranted, near())
        tool = self.catalog.find_tool(str(parsed))
        held = None if tool is not None else self.catalog.held_state(str(parsed))
        if tool is None and held is None:
            raise _near(UnknownTool, near())
        if not decision.allowed:
            raise _near(ToolNotGranted, near())
        if tool is None:  # after the grants: a caller without one learns nothing of it
            rejected = held == REJECTED
            raise ContractHeld(ContractHeld.rejected_message if rejected else None)
        return tool

    async def _address_help(
        self, caller: Caller, address: object, error: InvalidAddress
    ) -> InvalidAddress:
        """``error`` with what the caller may use instead: for a collapsed ``*/ROLE/TOOL``, the
        first holders it may call it on; for an address in the wrong case, the address in lower
        case when it may call that. Anything else stands as it was."""
        collapsed = parse_collapsed(address)
        if collapsed is not None:
            role, name = collapsed
            permissions = await self.permissions(caller)
            holders, node_seat = holders_of(self.catalog, permissions, role, name)
            if not holders:
                return InvalidAddress(f"{COLLAPSED} {_NO_HOLDER}")
            example = f"{holders[0]}/{role}/{name}"
            seats = (
                f"seats '*/{role}' lists every holder you may call it on"
                if node_seat
                else "seats lists the machines you may call tools on"
            )
            return InvalidAddress(
                f"{COLLAPSED} Pick one of 'holders', e.g. {example}; {seats}.",
                extra={"holders": holders},
            )
        if error.message == LOWER_CASE and isinstance(address, str):
            try:
                lowered = parse_tool_address(address.lower())
            except InvalidAddress:
                return error
            permissions = await self.permissions(caller)
            if self.catalog.find_tool(str(lowered)) is not None and permissions.permits(
                str(lowered)
            ):
                return InvalidAddress(
                    f"{LOWER_CASE} Did you mean {lowered}?", extra={"suggestions": [str(lowered)]}
                )
        return error

    def _read_permissions(self, caller: Caller) -> Permissions:
        if not caller.registered:  # a JWT's subject no principal stands behind: no row, ever
            revision = read_grant_revision(self.registry)
            return compile_permissions(caller, GrantSnapshot(revision=revision, rows=()))
        snapshot = read_snapshot(
            self.registry, caller.principal, caller.scopes, limit=LIMITS.grant_rows
        )
        return compile_permissions(caller, snapshot)

    async def _read(self, read: Callable[[], T]) -> T:
        return await short_read(self.registry, read)


def _near(kind: type[UnknownTool | ToolNotGranted], suggestions: list[str]) -> NavigatorError:
    """``unknown_tool`` or ``tool_not_granted`` naming the near addresses the caller may call
    (a function of the address asked and the grants alone: nothing of what is there), or
    search when there are none."""
    if not suggestions:
        return kind()
    return kind(
        f"{_NEAR[kind]} Near it you may call: {', '.join(suggestions)} (describe one), or "
        "search for the tool by what it does.",
        extra={"suggestions": suggestions},
    )
