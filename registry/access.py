"""The access store: principals (token hashes only) and grants. It never commits.

A grant change and the registry's grant revision move together in the caller's transaction, so a
reader that sees the new revision sees the new rows too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Boolean,
    String,
    and_,
    bindparam,
    delete,
    exists,
    func,
    literal_column,
    or_,
    select,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql import ColumnElement, Select
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from registry.catalog import CatalogStore
from registry.errors import Conflict, NotFound
from registry.models import Grant, Machine, Principal, Revision, utcnow
from registry.sessions import ConsoleSessions

if TYPE_CHECKING:
    from registry.database import Registry

__all__ = [
    "AccessStore",
    "GrantRecord",
    "GrantSnapshot",
    "PrincipalRecord",
    "TokenHolder",
    "read_grant_revision",
    "read_snapshot",
    "read_subject_snapshot",
    "read_token_holder",
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

    def is_active(self, now: datetime) -> bool:
        return principal_status(self.revoked, self.expires_at, now) == "active"


def _principal_record(row: Principal) -> PrincipalRecord:
    return PrincipalRecord(
        name=row.name,
        scopes=tuple(row.scopes),
        machine=row.machine,
        expires_at=row.expires_at,
        revoked=row.revoked_at is not None,
        created_at=row.created_at,
        quota=Quota(row.rate_per_minute, row.concurrency),
    )


def _grant_record(row: Grant) -> GrantRecord:
    return GrantRecord(
        id=row.id,
        principal=row.principal,
        target=row.target,
        scopes=tuple(row.scopes),
        effect=row.effect,
        revision=row.revision,
    )


# Reads built once: statement construction costs more than SQLite's answer, and SQLAlchemy caches
# their compiled form.
_BY_TOKEN = select(
    Principal.name,
    Principal.scopes,
    Principal.machine,
    Principal.expires_at,
    Principal.revoked_at,
    Principal.created_at,
    Principal.rate_per_minute,
    Principal.concurrency,
).where(Principal.token_hash == bindparam("token_hash"))

# The grant revision and one grant row: what both reads of grants return after their own columns.
_GRANT_COLUMNS = (
    Revision.value,
    Grant.id,
    Grant.principal,
    Grant.target,
    Grant.scopes,
    Grant.effect,
    Grant.revision,
)


class _ScopesHeld(FunctionElement[bool]):
    """Whether every scope in the JSON list ``needed`` is in the JSON list ``held``: a grant row
    applies to a principal only then (SPEC §4), so rows for scopes it lacks are not read, and do
    not count toward the rows that may apply to it."""

    type = Boolean()
    name = "scopes_held"
    inherit_cache = True


@compiles(_ScopesHeld)
def _scopes_held_sqlite(element: _ScopesHeld, compiler: SQLCompiler, **kw: Any) -> str:
    needed, held = (compiler.process(clause, **kw) for clause in element.clauses)
    return (
        f"NOT EXISTS (SELECT 1 FROM json_each({needed}) AS needed"
        f" WHERE needed.value NOT IN (SELECT held.value FROM json_each({held}) AS held))"
    )


@compiles(_ScopesHeld, "postgresql")
def _scopes_held_postgresql(element: _ScopesHeld, compiler: SQLCompiler, **kw: Any) -> str:
    # Each scope compared as the JSON text it is stored as, never cast to JSONB or text: a scope
    # holding a NUL or a lone surrogate (which the API refuses, but a registry may hold from
    # before) failed the cast, and so every token's read. Both sides are written by the same
    # encoder, so equal scopes are equal texts.
    needed, held = (compiler.process(clause, **kw) for clause in element.clauses)
    return (
        f"NOT EXISTS (SELECT 1 FROM json_array_elements(CAST({needed} AS JSON)) AS needed(scope)"
        " WHERE CAST(needed.scope AS TEXT) NOT IN (SELECT CAST(held.scope AS TEXT)"
        f" FROM json_array_elements(CAST({held} AS JSON)) AS held(scope)))"
    )


def _rows_applying(
    *conditions: ColumnElement[bool],
) -> Select[int, int, str, str, list[str], str, int]:
    """The grant revision, and the rows naming a principal or ``*`` for scopes it holds (and
    ``conditions``), in one statement: the revision row is joined to the grants, so the two are
    read together even when no grant applies."""
    return (
        select(*_GRANT_COLUMNS)
        .select_from(Revision)
        .outerjoin(
            Grant,
            and_(
                or_(
                    Grant.principal == bindparam("principal"),
                    Grant.principal == literal_column("'*'"),
                ),
                _ScopesHeld(Grant.scopes, bindparam("scopes", type_=String)),
                *conditions,
            ),
        )
        .where(Revision.name == "grants")
        .order_by(Grant.id)
        .limit(bindparam("limit"))
    )


_SNAPSHOT = _rows_applying()
#: ``_SNAPSHOT`` for a subject an authorization server signed in: its rows apply only while a
#: principal of its name is registered and not revoked; else none does, not even a ``*`` row
#: (default deny, ADR 0037).
_SUBJECT = _rows_applying(
    exists().where(Principal.name == bindparam("principal"), Principal.revoked_at.is_(None))
)


#: Every authenticated request's read: the token's principal, the grant revision and the rows naming
#: that principal or ``*``, in one statement (so one snapshot on every backend, and one round of
#: statement overhead instead of two). The principal's columns repeat on each grant row.
_TOKEN_HOLDER = (
    select(
        Principal.name,
        Principal.scopes,
        Principal.expires_at,
        Principal.revoked_at,
        Principal.rate_per_minute,
        Principal.concurrency,
        *_GRANT_COLUMNS,
    )
    .select_from(Principal)
    .outerjoin(Revision, Revision.name == "grants")
    .outerjoin(
        Grant,
        and_(
            or_(Grant.principal == Principal.name, Grant.principal == literal_column("'*'")),
            _ScopesHeld(Grant.scopes, Principal.scopes),
        ),
    )
    .where(Principal.token_hash == bindparam("token_hash"))
    .order_by(Grant.id)
    .limit(bindparam("limit"))
)


#: The grant revision alone: what a page's grants are checked against once it is prepared.
_GRANT_REVISION = select(Revision.value).where(Revision.name == "grants")


def _grant_rows(rows: Sequence[Any], first: int) -> tuple[GrantRecord, ...]:
    """Grant records from the columns starting at ``first`` of a left join (no grant: ``None``)."""
    return tuple(
        GrantRecord(
            id=row[first],
            principal=row[first + 1],
            target=row[first + 2],
            scopes=tuple(row[first + 3]),
            effect=row[first + 4],
            revision=row[first + 5],
        )
        for row in rows
        if row[first] is not None
    )


def read_token_holder(registry: Registry, token_hash: str, *, limit: int) -> TokenHolder | None:
    """Who holds a token (by its hash) and the grants that may apply to it, in one statement.

    ``None`` when no principal holds the token; the holder's grants are ``None`` (fail closed) when
    more than ``limit`` rows apply or the grant revision is missing. A read of the registry as it
    is now (``Registry.rows``): no session, nothing to commit.
    """
    rows = registry.rows(_TOKEN_HOLDER, {"token_hash": token_hash, "limit": limit + 1})
    return _token_holder(rows, limit)


def read_snapshot(
    registry: Registry, principal: str, scopes: Iterable[str], *, limit: int
) -> GrantSnapshot | None:
    """``AccessStore.snapshot`` as one statement of the registry as it is now
    (``Registry.rows``), as ``read_token_holder`` reads: on SQLite the held connection, never a
    pooled one, which writers waiting for the database's lock may all hold."""
    return _snapshot(registry.rows(_SNAPSHOT, _snapshot_params(principal, scopes, limit)), limit)


def read_subject_snapshot(
    registry: Registry, principal: str, scopes: Iterable[str], *, limit: int
) -> GrantSnapshot | None:
    """``read_snapshot`` for a JWT's subject: no row applies unless a principal of that name is
    registered and not revoked."""
    return _snapshot(registry.rows(_SUBJECT, _snapshot_params(principal, scopes, limit)), limit)


def read_grant_revision(registry: Registry) -> int:
    """The registry's grant revision, read as ``read_snapshot`` reads."""
    return int(registry.rows(_GRANT_REVISION, {})[0][0])


def _snapshot_params(principal: str, scopes: Iterable[str], limit: int) -> dict[str, Any]:
    return {"principal": principal, "scopes": json.dumps(sorted(set(scopes))), "limit": limit + 1}


def _snapshot(rows: Sequence[Any], limit: int) -> GrantSnapshot | None:
    if len(rows) > limit:
        return None
    return GrantSnapshot(revision=int(rows[0][0]), rows=_grant_rows(rows, 1))


def _token_holder(rows: Sequence[Any], limit: int) -> TokenHolder | None:
    if not rows:
        return None
    first = rows[0]
    grants = None
    if len(rows) <= limit and first[6] is not None:
        grants = GrantSnapshot(revision=int(first[6]), rows=_grant_rows(rows, 7))
    return TokenHolder(
        name=first[0],
        scopes=tuple(first[1]),
        expires_at=first[2],
        revoked=first[3] is not None,
        grants=grants,
        quota=Quota(first[4], first[5]),
    )


class AccessStore:
    def __init__(self, session: Session) -> None:
        self.session = session

    # --- principals ------------------------------------------------------------------------

    def _principal(self, name: str) -> Principal:
        row = self.session.execute(
            select(Principal).where(Principal.name == name)
        ).scalar_one_or_none()
        if row is None:
            raise NotFound("No such principal.")
        return row

    def add_principal(
        self,
        name: str,
        *,
        scopes: Iterable[str],
        token_hash: str,
        machine: str | None = None,
        expires_at: datetime | None = None,
        quota: Quota = UNLIMITED,
    ) -> PrincipalRecord:
        if self.session.execute(select(Principal.id).where(Principal.name == name)).first():
            raise Conflict("A principal with that name exists.")
        row = Principal(
            name=name,
            scopes=sorted(set(scopes)),
            token_hash=token_hash,
            machine=machine,
            expires_at=expires_at,
            rate_per_minute=quota.rate_per_minute,
            concurrency=quota.concurrency,
        )
        self.session.add(row)
        self.session.flush()
        return _principal_record(row)

    def principal(self, name: str) -> PrincipalRecord:
        return _principal_record(self._principal(name))

    def principal_by_token(self, token_hash: str) -> PrincipalRecord | None:
        """The principal holding a token (by its hash): one indexed read, no ORM identity work."""
        self.session.flush()  # Core reads skip autoflush: let them see this transaction's changes
        row = self.session.connection().execute(_BY_TOKEN, {"token_hash": token_hash}).first()
        if row is None:
            return None
        return PrincipalRecord(
            name=row[0],
            scopes=tuple(row[1]),
            machine=row[2],
            expires_at=row[3],
            revoked=row[4] is not None,
            created_at=row[5],
            quota=Quota(row[6], row[7]),
        )

    def principals(self, *, limit: int | None = None) -> list[PrincipalRecord]:
        """The principals by name; the first ``limit`` of them when given."""
        query = select(Principal).order_by(Principal.name).limit(limit)
        return [_principal_record(r) for r in self.session.execute(query).scalars()]

    def principal_count(self) -> int:
        return int(self.session.execute(select(func.count()).select_from(Principal)).scalar_one())

    def rotate_principal(
        self, name: str, *, token_hash: str, expires_at: datetime | None = None
    ) -> PrincipalRecord:
        """Replace a principal's token, ending its console sessions; its expiry stays unless a
        new one is given. A revoked principal stays revoked (a new one is made instead), and an
        expired one needs a new expiry: else its new token would be dead on arrival."""
        row = self._principal(name)
        status = principal_status(row.revoked_at is not None, row.expires_at, utcnow())
        if status == "revoked":
            raise Conflict("The principal is revoked; add a new principal instead.")
        if status == "expired" and expires_at is None:
            raise Conflict("The principal has expired; rotate it with a new expiry.")
        row.token_hash = token_hash
        if expires_at is not None:
            row.expires_at = expires_at
        ConsoleSessions(self.session).close_principal(name)
        return _principal_record(row)

    def set_quota(self, name: str, quota: Quota) -> PrincipalRecord:
        """Replace a principal's quota; its next request is held to it on every navigator."""
        row = self._principal(name)
        row.rate_per_minute, row.concurrency = quota.rate_per_minute, quota.concurrency
        self.session.flush()
        return _principal_record(row)

    def revoke_principal(self, name: str) -> None:
        """Revoke the principal: its token, and every console session it holds, end now."""
        row = self._principal(name)
        row.revoked_at = utcnow()
        row.token_hash = None
        ConsoleSessions(self.session).close_principal(name)

    def bind_machine(self, name: str, machine: str) -> None:
        """Bind a node principal to the machine it first registers; later machines conflict, and
        so do a machine another principal is bound to (revoked or not) and one an operator
        registered (``meshnav register``): a node for such a machine needs a principal made for it
        (``principal add --machine``). A first registration only ever creates a machine.

        Binding checks and then acts: two node principals binding one new machine at once (or one
        principal two machines) would both pass the checks before either committed. The check
        runs under the catalogue writers' lock, which the registration that follows holds anyway,
        with the principal read again under it."""
        row = self._principal(name)
        if row.machine is None:
            CatalogStore(self.session).hold_writers()
            self.session.refresh(row)
        if row.machine is None:
            taken = self.session.execute(
                select(Principal.name).where(Principal.machine == machine, Principal.name != name)
            ).first()
            if taken is not None:
                raise Conflict("Another node principal speaks for that machine.")
            if self.session.execute(select(Machine.id).where(Machine.name == machine)).first():
                raise Conflict("An operator registered that machine.")
            row.machine = machine
        elif row.machine != machine:
            raise Conflict("This node principal is bound to another machine.")

    # --- grants ----------------------------------------------------------------------------

    def grant(
        self, principal: str, target: str, *, effect: str, scopes: Iterable[str] = ()
    ) -> GrantRecord:
        """Add a row, or change the effect of the row with the same principal, target and scopes;
        either way the row's revision and the registry's grant revision move together.

        Rows that differ in scopes are different rules and stand side by side: a scoped row
        replacing an unscoped one of the same target would drop a deny the principal is held
        by (or an allow it is granted by) for a row that applies only with a scope it may lack.
        """
        revision = CatalogStore(self.session).bump("grants")
        wanted = sorted(set(scopes))
        row = next(
            (
                found
                for found in self.session.execute(
                    select(Grant).where(Grant.principal == principal, Grant.target == target)
                ).scalars()
                if sorted(found.scopes) == wanted
            ),
            None,
        )
        if row is None:
            row = Grant(principal=principal, target=target, scopes=wanted)
            self.session.add(row)
        row.effect = effect
        row.revision = revision
        self.session.flush()
        return _grant_record(row)

    def grant_scope_holders(self, target: str, scopes: Iterable[str]) -> GrantRecord | None:
        """The ``*`` allow row a registration keeps for the holders of its module's scopes
        (``--grant-scope-holders``): one row for the target, whose scopes follow the module's. A
        ``*`` allow row of the target with other scopes (an earlier registration's) goes, so the
        holders of a scope the module no longer declares lose what it gave them; deny rows stay.
        A module that declares no scopes keeps no row (an unscoped one would grant its tools to
        everyone): ``None``, its earlier row gone all the same.
        """
        wanted = sorted(set(scopes))
        earlier = select(Grant).where(
            Grant.principal == "*", Grant.target == target, Grant.effect == "allow"
        )
        going = [
            row for row in self.session.execute(earlier).scalars() if sorted(row.scopes) != wanted
        ]
        # The revision moves before any row is changed, as in every grant change (``grant``):
        # its row lock orders grant writers, which took a grant row and the revision in
        # opposite orders and deadlocked on PostgreSQL. Reading the rows first locks none.
        kept = self.grant("*", target, effect="allow", scopes=wanted) if wanted else None
        if going and not wanted:
            CatalogStore(self.session).bump("grants")
        for row in going:
            self.session.delete(row)
        self.session.flush()
        return kept

    def revoke_grant(self, grant_id: int) -> None:
        # the revision first, as in ``grant``: taking the row first deadlocked with a writer
        # holding the revision and changing that row (PostgreSQL). None found: the caller's
        # transaction, and the bump with it, is rolled back.
        CatalogStore(self.session).bump("grants")
        result = self.session.execute(delete(Grant).where(Grant.id == grant_id))
        if not getattr(result, "rowcount", 0):
            raise NotFound("No such grant.")

    def grants(
        self, principal: str | None = None, *, limit: int | None = None
    ) -> list[GrantRecord]:
        """The grant rows by id — naming ``principal`` when given —; the first ``limit`` of them
        when given."""
        query = select(Grant).order_by(Grant.id).limit(limit)
        if principal is not None:
            query = query.where(Grant.principal == principal)
        return [_grant_record(r) for r in self.session.execute(query).scalars()]

    def grant_count(self, principal: str | None = None) -> int:
        query = select(func.count()).select_from(Grant)
        if principal is not None:
            query = query.where(Grant.principal == principal)
        return int(self.session.execute(query).scalar_one())

    def snapshot(
        self, principal: str, scopes: Iterable[str], *, limit: int
    ) -> GrantSnapshot | None:
        """The rows that apply to ``principal`` holding ``scopes`` — naming it or ``*``, for
        scopes it holds — and the grant revision, in one indexed query.

        The revision row is joined to the grants, so the two are read together even when no grant
        applies. Returns ``None`` when more than ``limit`` rows apply: the caller fails closed.
        """
        self.session.flush()
        params = _snapshot_params(principal, scopes, limit)
        return _snapshot(self.session.connection().execute(_SNAPSHOT, params).all(), limit)
