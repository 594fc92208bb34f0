"""Console sessions: what a browser's cookie stands for, kept where every navigator reads it.

The cookie holds a random id; the registry keeps only its SHA-256 and what the session stands
for — the principal, and the hash of the stored token it signed in with (or a JWT's scopes and
expiry). A session is over when it has been idle, or open, past the console's limits; when the
viewer signs out (its row goes); and when its principal no longer holds that token (rotated,
revoked), which the reader checks on every request (``read_token_holder``). The store never
commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import bindparam, delete, or_, select, update
from sqlalchemy.orm import Session

from registry.models import ConsoleSession

if TYPE_CHECKING:
    from collections.abc import Iterable

    from registry.database import Registry

__all__ = ["ConsoleSessions", "SessionRecord", "SessionRules", "read_console_session"]


@dataclass(frozen=True, slots=True)
class SessionRules:
    """How long a session lives: ``idle_s`` since the viewer last loaded a page, ``lifetime_s``
    since it was opened, whichever ends first."""

    idle_s: float
    lifetime_s: float


@dataclass(frozen=True, slots=True)
class SessionRecord:
    principal: str
    #: The stored token's hash it was opened with; ``None`` for a JWT's session.
    token_hash: str | None
    scopes: tuple[str, ...]
    expires_at: datetime | None
    created_at: datetime
    seen_at: datetime

    def is_live(self, now: datetime, rules: SessionRules) -> bool:
        if self.expires_at is not None and self.expires_at <= now:
            return False
        if now - self.created_at >= timedelta(seconds=rules.lifetime_s):
            return False
        return now - self.seen_at < timedelta(seconds=rules.idle_s)


_BY_ID = select(
    ConsoleSession.principal,
    ConsoleSession.token_hash,
    ConsoleSession.scopes,
    ConsoleSession.expires_at,
    ConsoleSession.created_at,
    ConsoleSession.seen_at,
).where(ConsoleSession.id_hash == bindparam("id_hash"))


def read_console_session(registry: Registry, id_hash: str) -> SessionRecord | None:
    """The session kept under ``id_hash``, live or not; one statement of the registry as it is
    now (``Registry.rows``)."""
    rows = registry.rows(_BY_ID, {"id_hash": id_hash})
    if not rows:
        return None
    principal, token_hash, scopes, expires_at, created_at, seen_at = rows[0]
    return SessionRecord(principal, token_hash, tuple(scopes), expires_at, created_at, seen_at)


class ConsoleSessions:
    def __init__(self, session: Session) -> None:
        self.session = session

    def open(
        self,
        id_hash: str,
        *,
        principal: str,
        token_hash: str | None,
        scopes: Iterable[str] = (),
        expires_at: datetime | None = None,
        now: datetime,
        rules: SessionRules,
        keep: int,
    ) -> None:
        """Keep a new session; sessions past the rules go, and the principal's oldest past
        ``keep`` (a viewer signing in again and again holds a bounded number)."""
        self.prune(now, rules)
        self.session.add(
            ConsoleSession(
                id_hash=id_hash,
                principal=principal,
                token_hash=token_hash,
                scopes=sorted(set(scopes)),
                expires_at=expires_at,
                created_at=now,
                seen_at=now,
            )
        )
        self.session.flush()
        kept = (
            select(ConsoleSession.id_hash)
            .where(ConsoleSession.principal == principal)
            .order_by(ConsoleSession.created_at.desc(), ConsoleSession.id_hash)
            .limit(keep)
        )
        self.session.execute(
            delete(ConsoleSession)
            .where(ConsoleSession.principal == principal, ConsoleSession.id_hash.not_in(kept))
            .execution_options(synchronize_session=False)
        )

    def seen(self, id_hash: str, now: datetime) -> None:
        """The viewer loaded a page: the session's idle time starts again."""
        self.session.execute(
            update(ConsoleSession).where(ConsoleSession.id_hash == id_hash).values(seen_at=now)
        )

    def close(self, id_hash: str) -> None:
        self.session.execute(delete(ConsoleSession).where(ConsoleSession.id_hash == id_hash))

    def close_principal(self, principal: str) -> None:
        """Every session of ``principal``: its token was rotated or revoked."""
        self.session.execute(delete(ConsoleSession).where(ConsoleSession.principal == principal))

    def prune(self, now: datetime, rules: SessionRules) -> None:
        """Every session past the rules or its credential's expiry."""
        self.session.execute(
            delete(ConsoleSession)
            .where(
                or_(
                    ConsoleSession.expires_at <= now,
                    ConsoleSession.created_at <= now - timedelta(seconds=rules.lifetime_s),
                    ConsoleSession.seen_at <= now - timedelta(seconds=rules.idle_s),
                )
            )
            .execution_options(synchronize_session=False)
        )
