"""Principals and grants: an operator's changes to who may call what, and the question why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from navigator.addresses import parse_pattern
from navigator.operations.rules import (
    GrantBody,
    PrincipalBody,
    QuotaBody,
    grant_verdict,
    principal_added,
    token_rotated,
    write_grant,
)
from registry import AccessStore, NotFound

if TYPE_CHECKING:
    from navigator.services import Services

__all__ = [
    "add_grant",
    "add_principal",
    "check_grant",
    "revoke_grant",
    "revoke_principal",
    "rotate_principal",
    "set_quota",
]


async def add_principal(found: Services, body: PrincipalBody) -> dict[str, Any]:
    """Add a principal; the answer holds its token, the only time it is shown."""
    return await found.transact(lambda session: principal_added(AccessStore(session), body))


async def rotate_principal(
    found: Services, name: str, expires_days: float | None
) -> dict[str, Any]:
    """A new token for ``name`` (the old one stops at once); the answer holds it, once."""
    return await found.transact(
        lambda session: token_rotated(AccessStore(session), name, expires_days)
    )


async def revoke_principal(found: Services, name: str) -> dict[str, Any]:
    await found.transact(lambda session: AccessStore(session).revoke_principal(name))
    return {"revoked": name}


async def set_quota(found: Services, name: str, body: QuotaBody) -> dict[str, Any]:
    """Replace a principal's quota (ADR 0041): what the body leaves out or sets null is no limit.
    Every navigator holds the principal to it from its next request."""
    record = await found.transact(
        lambda session: AccessStore(session).set_quota(name, body.quota())
    )
    return record.as_json()


async def add_grant(found: Services, body: GrantBody) -> dict[str, Any]:
    parse_pattern(body.target)
    row = await found.transact(lambda session: write_grant(AccessStore(session), body))
    return row.as_json()


async def revoke_grant(found: Services, grant_id: int | None) -> dict[str, Any]:
    if grant_id is None:
        raise NotFound("No such grant.")
    await found.transact(lambda session: AccessStore(session).revoke_grant(grant_id))
    return {"revoked": grant_id}


async def check_grant(found: Services, principal: str, address: str) -> dict[str, Any]:
    """Which row decides whether a principal may call an address, and why."""
    return await found.read(lambda session: grant_verdict(AccessStore(session), principal, address))
