"""The access store: principals (token hashes only) and grants. It never commits.

A grant change and the registry's grant revision move together in the caller's transaction, so a
reader that sees the new revision sees the new rows too. Its records are
``registry.access_records``'s; the reads every request makes, ``registry.grant_reads``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import bindparam, delete, func, select
from sqlalchemy.orm import Session

from registry.access_records import (
    NODE_SCOPE,
    UNLIMITED,
    GrantRecord,
    GrantSnapshot,
    PrincipalRecord,
    Quota,
    principal_status,
)
from registry.audit import record_change
from registry.catalog import CatalogStore
from registry.errors import Conflict, NotFound
from registry.grant_reads import snapshot_in
from registry.models import Grant, Machine, Principal, utcnow
from registry.sessions import ConsoleSessions

__all__ = ["AccessStore"]


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


# Built once: statement construction costs more than SQLite's answer, and SQLAlchemy caches
# its compiled form.
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


class AccessStore:
    """Reads and changes principals and grants inside the caller's transaction."""

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
        record_change(self.session, "principal.add", name)
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
        record_change(self.session, "principal.rotate", name)
        return _principal_record(row)

    def set_quota(self, name: str, quota: Quota) -> PrincipalRecord:
        """Replace a principal's quota; its next request is held to it on every navigator."""
        row = self._principal(name)
        row.rate_per_minute, row.concurrency = quota.rate_per_minute, quota.concurrency
        self.session.flush()
        rate, at_once = (
            "-" if value is None else str(value)
            for value in (quota.rate_per_minute, quota.concurrency)
        )
        record_change(self.session, "principal.quota", f"{name}: {rate}/min, {at_once} at once")
        return _principal_record(row)

    def revoke_principal(self, name: str) -> None:
        """Revoke the principal: its token, and every console session it holds, end now."""
        row = self._principal(name)
        row.revoked_at = utcnow()
        row.token_hash = None
        ConsoleSessions(self.session).close_principal(name)
        record_change(self.session, "principal.revoke", name)

    def bind_machine(self, name: str, machine: str) -> None:
        """Bind a node principal to the machine it first registers; later machines conflict, and
        so do a machine another principal is bound to (revoked or not) and one an operator
        registered (``meshnav register``): a node for such a machine needs a principal made for it
        (``principal add --machine``). A first registration only ever creates a machine. The
        principal's own row must be active and hold ``mesh:node``, whatever the credential it came
        with said (ADR 0044).

        Binding checks and then acts: two node principals binding one new machine at once (or one
        principal two machines) would both pass the checks before either committed. The check
        runs under the catalogue writers' lock, which the registration that follows holds anyway,
        with the principal read again under it."""
        row = self._principal(name)
        status = principal_status(row.revoked_at is not None, row.expires_at, utcnow())
        if status != "active" or NODE_SCOPE not in row.scopes:
            raise Conflict("The principal may not speak for a node.")
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
        record_change(
            self.session,
            "grant.add",
            f"{effect} {target} for {principal}",
            grant_id=row.id,
            grant_revision=revision,
        )
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
            record_change(self.session, "grant.revoke", target, grant_id=row.id)
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
        record_change(self.session, "grant.revoke", f"grant {grant_id}", grant_id=grant_id)

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
        return snapshot_in(self.session.connection(), principal, scopes, limit=limit)
