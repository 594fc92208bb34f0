"""The admin API's approved contracts (SPEC §14, scope ``mesh:admin``): what is held and what
registrations refused, what changed in one held contract, and the operator's decision.

A decision names an address or a pattern; it is of each matching tool's (role, tool name,
digest), so that every holder of an identical contract is approved (or rejected) at once.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from starlette.requests import Request

from navigator.access.tokens import ADMIN_SCOPE
from navigator.addresses import parse_pattern, parse_tool_address
from navigator.api.base import read_body, require_scope
from navigator.catalog.differences import contract_difference
from navigator.http.bodies import Body
from navigator.services import services
from registry import NotFound
from registry.contracts import APPROVED, REJECTED, HeldTool, approved_definition, held_tools
from registry.contracts import refused_tools as registry_refused

__all__ = ["DecisionBody", "approve", "list_held", "reject", "show"]


class DecisionBody(Body):
    target: str = Field(min_length=1, max_length=256)


def _held_json(tool: HeldTool) -> dict[str, Any]:
    return {
        "address": tool.address,
        "state": tool.state,
        "contractDigest": tool.digest,
        "approvedDigest": tool.approved_digest,
    }


async def list_held(request: Request) -> dict[str, Any]:
    """Held (and rejected) contracts, and the tools registrations refused, by address;
    ``pattern`` narrows both."""
    require_scope(request, ADMIN_SCOPE)
    text = request.query_params.get("pattern")
    pattern = None if text is None else parse_pattern(text)
    held, refused = await services(request).read(
        lambda session: (held_tools(session), registry_refused(session))
    )
    return {
        "held": [
            _held_json(t) for t in held if pattern is None or pattern.matches_address(t.address)
        ],
        "refused": [
            {"address": r.address, "reason": r.reason}
            for r in refused
            if pattern is None or pattern.matches_address(r.address)
        ],
        "mode": services(request).settings.contract_approval,
    }


async def show(request: Request) -> dict[str, Any]:
    """One held contract beside the one approved before it: what changed."""
    require_scope(request, ADMIN_SCOPE)
    address = str(parse_tool_address(request.query_params.get("address", "")))

    def read(session: Any) -> dict[str, Any]:
        found = [t for t in held_tools(session) if t.address == address]
        if not found:
            raise NotFound(
                "No held contract at that address: meshnav contracts pending lists them."
            )
        tool = found[0]
        old = None
        if tool.approved_digest is not None:
            old = approved_definition(session, (tool.role, tool.name, tool.approved_digest))
        return {
            **_held_json(tool),
            "changes": contract_difference(old, tool.definition),
            "contract": tool.definition,
        }

    return await services(request).read(read)


async def _decide(request: Request, state: str) -> list[str]:
    caller = require_scope(request, ADMIN_SCOPE)
    body = await read_body(request, DecisionBody)
    pattern = parse_pattern(body.target)
    found = services(request)
    held = await found.read(held_tools)
    wanted = [t for t in held if pattern.matches_address(t.address)]
    if state == REJECTED:
        wanted = [t for t in wanted if t.state != REJECTED]
    if not wanted:
        raise NotFound("No held contract matches: meshnav contracts pending lists them.")
    return await found.registrar.decide([t.key for t in wanted], state, caller.principal)


async def approve(request: Request) -> dict[str, Any]:
    """Approve the held contracts an address or pattern matches, on every holder of each."""
    return {"approved": await _decide(request, APPROVED)}


async def reject(request: Request) -> dict[str, Any]:
    """Reject the held contracts an address or pattern matches: they stay held, saying so."""
    return {"rejected": await _decide(request, REJECTED)}
