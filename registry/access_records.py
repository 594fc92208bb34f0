"""The access records: the frozen values the access store and the grant reads hand out — a
principal with its quota, a grant row, the rows that may apply to a principal with the grant
revision they were read at, and a token's holder.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from registry.models import utcnow

__all__ = [
    "NODE_SCOPE",
    "UNLIMITED",
    "GrantRecord",
    "GrantSnapshot",
    "PrincipalRecord",
    "Quota",
    "TokenHolder",
    "principal_status",
]


def principal_status(revoked: bool, expires_at: datetime | None, now: datetime) -> str:
    """``revoked``, ``expired`` or ``active``: a principal's token is taken only when active."""
    if revoked:
        return "revoked"
    if expires_at is not None and expires_at <= now:
        return "expired"
    return "active"


@dataclass(frozen=True, slots=True)
class Quota:
    """What a principal may call (ADR 0041): calls per minute and calls at once; ``None`` is no
    limit."""

    rate_per_minute: int | None = None
    concurrency: int | None = None

    def as_json(self) -> dict[str, int | None]:
        return {"ratePerMinute": self.rate_per_minute, "concurrency": self.concurrency}


#: The scope a node's principal holds (SPEC §6): the only one the registry itself checks, when it
#: binds a principal to a machine.
NODE_SCOPE = "mesh:node"

#: No limit: a principal made without a quota, and a caller no principal row stands behind.
UNLIMITED = Quota()


@dataclass(frozen=True, slots=True)
class PrincipalRecord:
    name: str
    scopes: tuple[str, ...]
    machine: str | None
    expires_at: datetime | None
    revoked: bool
    created_at: datetime
    quota: Quota = UNLIMITED

    def status(self, now: datetime) -> str:
        """``revoked``, ``expired`` or ``active``: whether its token is taken, and if not why."""
        return principal_status(self.revoked, self.expires_at, now)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scopes": list(self.scopes),
            "machine": self.machine,
            "expiresAt": self.expires_at.isoformat() if self.expires_at else None,
            "revoked": self.revoked,
            "status": self.status(utcnow()),
            **self.quota.as_json(),
        }


@dataclass(frozen=True, slots=True)
class GrantRecord:
    id: int
    principal: str
    target: str
    scopes: tuple[str, ...]
    effect: str
    revision: int

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "principal": self.principal,
            "target": self.target,
            "scopes": list(self.scopes),
            "effect": self.effect,
            "revision": self.revision,
        }


@dataclass(frozen=True, slots=True)
class GrantSnapshot:
    """The rows that may apply to one principal, read together with the grant revision."""

    revision: int
    rows: tuple[GrantRecord, ...]


@dataclass(frozen=True, slots=True)
class TokenHolder:
    """The principal holding a token and the grant rows that may apply to it, read together.

    ``grants`` is ``None`` when more rows apply than the reader's limit: the caller fails closed.
    """

    name: str
    scopes: tuple[str, ...]
    expires_at: datetime | None
    revoked: bool
    grants: GrantSnapshot | None
    quota: Quota = UNLIMITED
    #: ``False`` for a JWT's subject no principal has the name of (``read_subject_holder``).
    registered: bool = True

    def is_active(self, now: datetime) -> bool:
        return principal_status(self.revoked, self.expires_at, now) == "active"
