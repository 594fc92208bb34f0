"""The grant reads every request makes, each one statement of the registry as it is now: a token's
holder with the grant rows that may apply to it, a JWT subject's principal (if any) with the same
(ADR 0044), the rows that apply to a principal with the grant revision, and the grant revision
alone (ADR 0009, ADR 0016).

Statements are built once: their construction costs more than SQLite's answer, and SQLAlchemy
caches their compiled form (on SQLite, ``registry.reads`` runs them on one held connection).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import (
    Boolean,
    Connection,
    String,
    and_,
    bindparam,
    literal_column,
    or_,
    select,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import ColumnElement, Select
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from registry.access_records import GrantRecord, GrantSnapshot, Quota, TokenHolder
from registry.models import Grant, Principal, Revision

if TYPE_CHECKING:
    from registry.database import Registry

__all__ = [
    "read_grant_revision",
    "read_snapshot",
    "read_subject_holder",
    "read_token_holder",
    "snapshot_in",
]


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


_HOLDER_COLUMNS = (
    Principal.name,
    Principal.scopes,
    Principal.expires_at,
    Principal.revoked_at,
    Principal.rate_per_minute,
    Principal.concurrency,
    *_GRANT_COLUMNS,
)

#: Every authenticated request's read: the token's principal, the grant revision and the rows naming
#: that principal or ``*``, in one statement (so one snapshot on every backend, and one round of
#: statement overhead instead of two). The principal's columns repeat on each grant row.
_TOKEN_HOLDER = (
    select(*_HOLDER_COLUMNS)
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


#: ``_TOKEN_HOLDER`` for a JWT's subject (ADR 0044): the principal of that name, if any, read with
#: the grant revision and the rows for the scopes the token carries. No row applies, not even a
#: ``*`` row, when no principal has the name: the grant revision's row stands alone then.
_SUBJECT_HOLDER = (
    select(*_HOLDER_COLUMNS)
    .select_from(Revision)
    .outerjoin(Principal, Principal.name == bindparam("principal"))
    .outerjoin(
        Grant,
        and_(
            Principal.name.is_not(None),
            or_(Grant.principal == Principal.name, Grant.principal == literal_column("'*'")),
            _ScopesHeld(Grant.scopes, Principal.scopes),
            _ScopesHeld(Grant.scopes, bindparam("scopes", type_=String)),
        ),
    )
    .where(Revision.name == "grants")
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


def read_subject_holder(
    registry: Registry, principal: str, scopes: Iterable[str], *, limit: int
) -> TokenHolder | None:
    """The principal a JWT's subject names and the grant rows that may apply to it, for the
    token's ``scopes``, in one statement: a holder that is not ``registered`` (no scopes, no
    rows) when no principal has that name. ``None`` when the grant revision is missing."""
    rows = registry.rows(_SUBJECT_HOLDER, _snapshot_params(principal, scopes, limit))
    if not rows or rows[0][0] is not None:
        return _token_holder(rows, limit)
    grants = GrantSnapshot(revision=int(rows[0][6]), rows=())
    return TokenHolder(principal, (), None, False, grants, registered=False)


def read_grant_revision(registry: Registry) -> int:
    """The registry's grant revision, read as ``read_snapshot`` reads."""
    return int(registry.rows(_GRANT_REVISION, {})[0][0])


def snapshot_in(
    connection: Connection, principal: str, scopes: Iterable[str], *, limit: int
) -> GrantSnapshot | None:
    """``read_snapshot`` on the caller's connection, inside its transaction
    (``AccessStore.snapshot``)."""
    params = _snapshot_params(principal, scopes, limit)
    return _snapshot(connection.execute(_SNAPSHOT, params).all(), limit)


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
