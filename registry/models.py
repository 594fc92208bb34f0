"""Typed SQLAlchemy models of the registry: what the mesh is made of and who may use it.

Machine ─┬─< Assignment ─< Tool          a machine runs assignments of modules; each serves tools
ContractDecision                         an operator's decision on a (role, tool, digest) (SPEC §14)
         └── NodeKey                     the key the navigator signs that machine's call tokens with
Seat ──── Assignment                     a mesh seat is an assignment addressed ``mesh/SEAT``
Principal                                who calls (token hash only), with scopes
ConsoleSession                           a browser signed in to the console (its id's hash only)
Grant                                    who may call what
Revision                                 counters that move whenever grants or the catalogue change
AuditEvent ─ AuditHead                   who decided or changed what; each navigator's chain head
AuditKey                                 the key of the audit trail's keyed arguments digest
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = [
    "Assignment",
    "AuditEvent",
    "AuditHead",
    "AuditKey",
    "Base",
    "CatalogChange",
    "ConsoleSession",
    "ContractDecision",
    "Grant",
    "Machine",
    "NodeKey",
    "Principal",
    "Revision",
    "Seat",
    "Tool",
    "utcnow",
]

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite stores naive values)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UTCDateTime, dict[str, Any]: JSON, list[str]: JSON}


class Machine(Base):
    __tablename__ = "machines"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    advertise_url: Mapped[str | None] = mapped_column(String(2048))
    heartbeat_s: Mapped[float] = mapped_column(Float, default=5.0)
    last_heartbeat_at: Mapped[datetime | None]
    retired_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: The node instance serving the machine (an id it made at its start, not a secret): one at a
    #: time (SPEC §6). ``None`` when its node registered without one, or stopped cleanly.
    instance_id: Mapped[str | None] = mapped_column(String(64))
    #: Since when ``instance_id`` serves the machine; with no instance, since when its node
    #: stopped cleanly (``registry.node_instances``).
    instance_since: Mapped[datetime | None]

    assignments: Mapped[list[Assignment]] = relationship(
        back_populates="machine", cascade="all, delete-orphan"
    )


class NodeKey(Base):
    """The secret a machine's call tokens are signed with; persisted so every navigator can sign."""

    __tablename__ = "node_keys"

    machine_id: Mapped[int] = mapped_column(
        ForeignKey("machines.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[bytes] = mapped_column(LargeBinary(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Assignment(Base):
    """One module instance on one machine, served at its own MCP endpoint."""

    __tablename__ = "assignments"
    __table_args__ = (UniqueConstraint("machine_id", "role"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    machine_id: Mapped[int] = mapped_column(ForeignKey("machines.id", ondelete="CASCADE"))
    role: Mapped[str] = mapped_column(String(63))
    module: Mapped[str] = mapped_column(String(128))
    #: "assignment", or "node_seat" for a role every machine holds (the ``node`` module).
    kind: Mapped[str] = mapped_column(String(16), default="assignment")
    endpoint: Mapped[str | None] = mapped_column(String(2048))
    #: Scopes the module declares; ``--grant-scope-holders`` grants its tools to their holders.
    scopes: Mapped[list[str]] = mapped_column(default=list)
    retired_at: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: When its first non-empty tool list was registered (SPEC §14): until then, ``first-use``
    #: approves what it brings.
    contracts_since: Mapped[datetime | None]
    #: The tools its last registration refused, by name: why (SPEC §14's hidden text, a name
    #: outside the grammar), for operators to see.
    refused: Mapped[dict[str, Any]] = mapped_column(default=dict)
    #: Why its node could not list its tools (connection refused, 401, timeout); ``None`` while
    #: it lists them. Such an assignment is ``not listing``, never retired (ADR 0057).
    not_listing: Mapped[str | None] = mapped_column(String(200), default=None)

    machine: Mapped[Machine] = relationship(back_populates="assignments")
    tools: Mapped[list[Tool]] = relationship(
        back_populates="assignment", cascade="all, delete-orphan", order_by="Tool.name"
    )


class Seat(Base):
    """A mesh seat: a role the mesh holds once, placed on one machine's assignment."""

    __tablename__ = "seats"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(63), unique=True)
    assignment_id: Mapped[int | None] = mapped_column(
        ForeignKey("assignments.id", ondelete="SET NULL"), unique=True
    )
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)

    assignment: Mapped[Assignment | None] = relationship()


class Tool(Base):
    """A tool's contract as its server gave it, and the digest that identifies the contract."""

    __tablename__ = "tools"
    __table_args__ = (UniqueConstraint("assignment_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(128))
    #: The tool exactly as ``tools/list`` gave it (name, title, description, schemas, annotations).
    definition: Mapped[dict[str, Any]]
    #: "auto" (MCP annotation defaults), "never", "always" or "elicit-only" — an operator's mark.
    confirmation: Mapped[str] = mapped_column(String(16), default="auto")
    contract_digest: Mapped[str] = mapped_column(String(64))
    #: "approved" (served), "held" (awaits an operator) or "rejected" (SPEC §14).
    contract_state: Mapped[str] = mapped_column(String(16), default="approved")
    #: The digest of this tool's last approved contract (what ``contracts show`` compares with).
    approved_digest: Mapped[str | None] = mapped_column(String(64))

    assignment: Mapped[Assignment] = relationship(back_populates="tools")


class ContractDecision(Base):
    """A contract as operators decide on it (SPEC §14): one row per (role, tool name, digest),
    shared by every holder serving it — approving it approves them all."""

    __tablename__ = "contract_decisions"
    __table_args__ = (UniqueConstraint("role", "name", "digest"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    role: Mapped[str] = mapped_column(String(63))
    name: Mapped[str] = mapped_column(String(128))
    digest: Mapped[str] = mapped_column(String(64))
    #: The definition, so that a later change can be shown beside it.
    definition: Mapped[dict[str, Any]]
    #: "approved", "held" or "rejected".
    state: Mapped[str] = mapped_column(String(16))
    decided_by: Mapped[str | None] = mapped_column(String(128))
    decided_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Principal(Base):
    __tablename__ = "principals"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    scopes: Mapped[list[str]] = mapped_column(default=list)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True)
    #: A node principal may register and heartbeat only this machine (bound at first registration).
    machine: Mapped[str | None] = mapped_column(String(63))
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: Its quota (ADR 0041): calls per minute, and calls at once; ``None`` is no limit.
    rate_per_minute: Mapped[int | None]
    concurrency: Mapped[int | None]


class ConsoleSession(Base):
    """A console sign-in, kept by every navigator of the registry alike: the cookie holds a random
    id, the registry its SHA-256 (a session is as good as a token while it lives)."""

    __tablename__ = "console_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    principal: Mapped[str] = mapped_column(String(128), index=True)
    #: The hash of the stored token signed in with: the session lives while the principal holds
    #: that token (rotated or revoked, it is gone). ``None`` for a JWT's session.
    token_hash: Mapped[str | None] = mapped_column(String(64))
    #: A JWT's scopes, fixed when it signed in (a stored token's are read on every request).
    scopes: Mapped[list[str]] = mapped_column(default=list)
    #: A JWT's own expiry; a stored token's principal is read on every request instead.
    expires_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    #: When the viewer last loaded a page: a session idle past the console's limit is over.
    seen_at: Mapped[datetime] = mapped_column(default=utcnow)


class Grant(Base):
    __tablename__ = "grants"
    # AUTOINCREMENT: an id, once given, is never given again on SQLite (migration 0006)
    __table_args__ = (Index("ix_grants_principal", "principal"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    #: An exact principal name, or ``*`` for every principal holding ``scopes``.
    principal: Mapped[str] = mapped_column(String(128))
    target: Mapped[str] = mapped_column(String(256))
    scopes: Mapped[list[str]] = mapped_column(default=list)
    effect: Mapped[str] = mapped_column(String(8))
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class CatalogChange(Base):
    """One entry per change to a machine's part of the catalogue, in the change's transaction.

    Navigators follow this log (woken by ``NOTIFY`` on PostgreSQL, polled otherwise) to update their
    in-memory catalogue machine by machine, and to catch up after losing the database.
    """

    __tablename__ = "catalog_changes"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    machine: Mapped[str] = mapped_column(String(63))
    at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class Revision(Base):
    """Named counters; ``grants`` moves with every grant change (cursors and snapshots bind it)."""

    __tablename__ = "revisions"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, default=0)


class AuditEvent(Base):
    """One decision or change (ADR 0039): who, what, how it ended, and the grant row that decided.
    Never arguments, results, queries, cursors, tokens or schemas — the arguments' digest at most.
    ``hash`` chains the events of one ``instance`` (``prev_hash`` is the one before's)."""

    __tablename__ = "audit_events"
    __table_args__ = (
        UniqueConstraint("instance", "seq"),
        Index("ix_audit_events_principal_at", "principal", "at"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(index=True)
    instance: Mapped[str] = mapped_column(String(128))
    seq: Mapped[int] = mapped_column(Integer)
    principal: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(String(256))
    outcome: Mapped[str] = mapped_column(String(64))
    grant_id: Mapped[int | None] = mapped_column(Integer)
    grant_revision: Mapped[int | None] = mapped_column(Integer)
    duration_ms: Mapped[float | None] = mapped_column(Float)
    args_digest: Mapped[str | None] = mapped_column(String(64))
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))
    #: The refusals an aggregated refusal event stands for; empty for any other event.
    count: Mapped[int | None] = mapped_column(Integer)


class AuditHead(Base):
    """The newest event of each instance's chain: what the next event links to, and what
    ``meshnav audit verify`` holds the chain's end to (a row deleted from the end shows)."""

    __tablename__ = "audit_heads"

    instance: Mapped[str] = mapped_column(String(128), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, default=0)
    hash: Mapped[str] = mapped_column(String(64))
    #: The last event retention removed (0 and the genesis hash until it removes one): the
    #: first event kept must follow it.
    pruned_seq: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    pruned_hash: Mapped[str] = mapped_column(String(64), default="0" * 64, server_default="0" * 64)


class AuditKey(Base):
    """The key of the arguments' keyed digest in the audit trail (ADR 0045): made once, shared by
    every navigator on this registry, never read by any API or command."""

    __tablename__ = "audit_keys"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    key: Mapped[bytes] = mapped_column(LargeBinary(64))
