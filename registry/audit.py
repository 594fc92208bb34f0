"""The audit trail's store: events appended to one hash chain per navigator instance (ADR 0039).

An event records who decided or changed what, how it ended and which grant row decided — never
arguments, results, queries, cursors, tokens or schemas. Each event's ``hash`` covers its fields
and the hash of the instance's event before it (``prev_hash``); ``audit_heads`` holds each
chain's newest event, locked while a batch is appended, so that writers of one instance (a
navigator's batches and the changes it makes in its own transactions; the command line's
processes, instance ``cli``) extend the chain one after another. ``verify`` recomputes every
chain: a row changed, removed or inserted by hand shows — the oldest events too, since retention
records on the head where it last pruned (ADR 0045). Every text is stored bounded
(``registry.audit_bounds``); the arguments' digest is keyed with the registry's audit key
(``keyed_digest``). The store never commits.
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from registry.audit_bounds import COLUMN_CHARS, INSTANCE_CHARS, storable
from registry.models import AuditEvent, AuditHead, AuditKey, utcnow

__all__ = [
    "ACTOR",
    "CLI_INSTANCE",
    "GENESIS",
    "AuditEntry",
    "AuditFilter",
    "AuditRecord",
    "AuditStore",
    "keyed_digest",
    "record_change",
]

#: The instance the command line's direct changes to the registry are recorded under.
CLI_INSTANCE = "cli"
#: The ``prev_hash`` of a chain's first event.
GENESIS = "0" * 64
#: Who makes the changes of this context: the admin API's caller. ``None`` on the command line's
#: direct path, where the operating-system user is recorded (``os:NAME``).
ACTOR: ContextVar[str | None] = ContextVar("meshnav_audit_actor", default=None)
#: The session key under which a transaction names the instance its changes are recorded under.
INSTANCE_KEY = "meshnav_audit_instance"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One event as it is decided, before it is chained."""

    at: datetime
    principal: str
    action: str
    target: str
    outcome: str
    grant_id: int | None = None
    grant_revision: int | None = None
    duration_ms: float | None = None
    args_digest: str | None = None
    #: The refusals an aggregated refusal event stands for (ADR 0045); ``None`` for the others.
    count: int | None = None

    def bounded(self) -> AuditEntry:
        """This entry as the registry's columns hold it (``registry.audit_bounds``)."""
        p, a, t, o, d = self.principal, self.action, self.target, self.outcome, self.args_digest
        fits = len(p) <= _PRINCIPAL and len(a) <= _ACTION and len(t) <= _TARGET
        fits = fits and len(o) <= _OUTCOME and (d is None or len(d) <= _DIGEST)
        if fits and f"{p}{a}{t}{o}{d or ''}".isprintable():
            return self  # as nearly every event is
        texts: dict[str, Any] = {name: getattr(self, name) for name in COLUMN_CHARS}
        held: dict[str, Any] = {
            name: value if value is None else storable(value, COLUMN_CHARS[name])
            for name, value in texts.items()
        }
        return self if held == texts else replace(self, **held)


_ENTRY_FIELDS = tuple(f.name for f in fields(AuditEntry))
_PRINCIPAL, _ACTION, _TARGET, _OUTCOME, _DIGEST = COLUMN_CHARS.values()
#: What a chain's hash covers: every field, and ``count`` only where it is set — so an event
#: written before there were aggregated events hashes as it did.
_HASHED = tuple(name for name in _ENTRY_FIELDS if name != "count")
#: The ``audit_keys`` row of the arguments' keyed digest.
ARGUMENTS_KEY = "arguments"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """An event as the registry holds it."""

    id: int
    instance: str
    seq: int
    entry: AuditEntry
    prev_hash: str
    hash: str

    def as_json(self) -> dict[str, Any]:
        e = self.entry
        return {
            "id": self.id,
            "at": e.at.isoformat(),
            "instance": self.instance,
            "seq": self.seq,
            "principal": e.principal,
            "action": e.action,
            "target": e.target,
            "outcome": e.outcome,
            "grant": None
            if e.grant_id is None
            else {"id": e.grant_id, "revision": e.grant_revision},
            "durationMs": e.duration_ms,
            "argsDigest": e.args_digest,
            "count": e.count,
            "prevHash": self.prev_hash,
            "hash": self.hash,
        }


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """Which events a reader asks for, newest first. ``target`` is an exact target or a pattern
    with ``*`` for any text (``db1/*``, ``*/postgres/query``); ``before`` an event id (paging)."""

    principal: str | None = None
    target: str | None = None
    action: str | None = None
    outcome: str | None = None
    since: datetime | None = None
    before: int | None = None
    limit: int = 100


_HEAD = (
    select(AuditHead.seq, AuditHead.hash)
    .where(AuditHead.instance == bindparam("instance"))
    .with_for_update()
)


def chain_hash(prev_hash: str, instance: str, seq: int, entry: AuditEntry) -> str:
    values = [getattr(entry, name) for name in _HASHED]
    values[0] = entry.at.isoformat()
    if entry.count is not None:
        values.append(entry.count)
    text = json.dumps([prev_hash, instance, seq, *values], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def keyed_digest(key: bytes, digest: str) -> str:
    """The arguments' digest as the audit trail stores it: HMAC-SHA256 under the registry's
    audit key of their SHA-256 (the one a call token binds), so that a digest of a few likely
    arguments (a PIN) cannot be found by trying them without the key."""
    return hmac.digest(key, digest.encode(), "sha256").hex()


def _record(row: AuditEvent) -> AuditRecord:
    entry = AuditEntry(**{name: getattr(row, name) for name in _ENTRY_FIELDS})
    return AuditRecord(row.id, row.instance, row.seq, entry, row.prev_hash, row.hash)


def _like(pattern: str) -> str:
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


class AuditStore:
    """On an ORM session (a change's own transaction) or a Core connection (the writer's
    batches: ``Registry.write_connection``)."""

    def __init__(self, session: Session | Connection) -> None:
        self.session = session

    def _insert_missing(self, table: Any, unique: str, **values: Any) -> None:
        """Insert ``values`` unless a row of the same ``unique`` is there (another writer's)."""
        bind = self.session
        dialect = (bind.get_bind() if isinstance(bind, Session) else bind).dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        self.session.execute(
            insert(table).values(**values).on_conflict_do_nothing(index_elements=[unique])
        )

    def _head(self, instance: str) -> tuple[int, str]:
        """The instance's chain head (made when missing), locked until the transaction ends
        (``FOR UPDATE``; on SQLite the writer's transaction holds the database's write lock)."""
        found = self.session.execute(_HEAD, {"instance": instance}).first()
        if found is None:
            self._insert_missing(AuditHead, "instance", instance=instance, seq=0, hash=GENESIS)
            found = self.session.execute(_HEAD, {"instance": instance}).one()
        return int(found[0]), str(found[1])

    def arguments_key(self) -> bytes:
        """The registry's key of the arguments' keyed digest, made by the first writer that
        needs it: every navigator on the registry reads the one that was stored first. Only the
        audit writer reads it; no API, command or log shows it."""
        wanted = select(AuditKey.key).where(AuditKey.name == ARGUMENTS_KEY)
        found = self.session.execute(wanted).scalar()
        if found is None:
            self._insert_missing(AuditKey, "name", name=ARGUMENTS_KEY, key=secrets.token_bytes(32))
            found = self.session.execute(wanted).scalar_one()
        return bytes(found)

    def append(self, instance: str, entries: Iterable[AuditEntry]) -> list[AuditRecord]:
        """Chain ``entries`` onto ``instance``'s events, in order: Core statements, a few per
        batch whatever its size (the navigator's writer pays them for every batch). The records
        returned carry no ids (``0``): the registry gives them on insert. Every text is stored
        bounded (``AuditEntry.bounded``)."""
        instance = storable(instance, INSTANCE_CHARS)
        seq, prev = self._head(instance)
        rows: list[dict[str, Any]] = []
        chained: list[tuple[int, AuditEntry, str, str]] = []
        for given in entries:
            entry = given.bounded()
            seq += 1
            hashed = chain_hash(prev, instance, seq, entry)
            values = {name: getattr(entry, name) for name in _ENTRY_FIELDS}
            rows.append(
                {**values, "instance": instance, "seq": seq, "prev_hash": prev, "hash": hashed}
            )
            chained.append((seq, entry, prev, hashed))
            prev = hashed
        if not rows:
            return []
        self.session.execute(insert(AuditEvent), rows)
        self.session.execute(
            update(AuditHead)
            .where(AuditHead.instance == bindparam("instance_"))
            .values(seq=bindparam("seq_"), hash=bindparam("hash_")),
            {"instance_": instance, "seq_": seq, "hash_": prev},
        )
        return [
            AuditRecord(0, instance, n, entry, before, after) for n, entry, before, after in chained
        ]

    def events(self, wanted: AuditFilter) -> list[AuditRecord]:
        query = select(AuditEvent).order_by(AuditEvent.id.desc()).limit(wanted.limit)
        if wanted.principal is not None:
            query = query.where(AuditEvent.principal == wanted.principal)
        if wanted.target is not None:
            query = query.where(AuditEvent.target.like(_like(wanted.target), escape="\\"))
        if wanted.action is not None:
            query = query.where(AuditEvent.action == wanted.action)
        if wanted.outcome is not None:
            query = query.where(AuditEvent.outcome == wanted.outcome)
        if wanted.since is not None:
            query = query.where(AuditEvent.at >= wanted.since)
        if wanted.before is not None:
            query = query.where(AuditEvent.id < wanted.before)
        return [_record(row) for row in self.session.scalars(query)]

    def after(self, instance: str, seq: int, *, limit: int = 1000) -> list[AuditRecord]:
        """``instance``'s events after its ``seq``-th, in chain order."""
        query = (
            select(AuditEvent)
            .where(AuditEvent.instance == instance, AuditEvent.seq > seq)
            .order_by(AuditEvent.seq)
            .limit(limit)
        )
        return [_record(row) for row in self.session.scalars(query)]

    def head_seq(self, instance: str) -> int:
        found = self.session.scalar(select(AuditHead.seq).where(AuditHead.instance == instance))
        return int(found or 0)

    def _chain(self, instance: str) -> Iterator[AuditEvent]:
        query = select(AuditEvent).where(AuditEvent.instance == instance).order_by(AuditEvent.seq)
        yield from self.session.scalars(query.execution_options(yield_per=1000))

    def verify(self) -> dict[str, Any]:
        """Every instance's chain recomputed: ``{"instances": {name: events}, "problems": [...]}``,
        a problem naming the instance and the sequence number where its chain breaks. The first
        event kept must follow the last one retention removed (the head's pruning point); a
        chain with no event left must have been pruned up to its head."""
        heads = {h.instance: h for h in self.session.scalars(select(AuditHead))}
        problems: list[str] = []
        counts: dict[str, int] = {}
        for instance, head in sorted(heads.items()):
            last: AuditEvent | None = None
            counts[instance] = 0
            for row in self._chain(instance):
                counts[instance] += 1
                if last is None:
                    problems += _first_kept(instance, row, head)
                elif row.seq != last.seq + 1 or row.prev_hash != last.hash:
                    problems.append(f"{instance} #{row.seq}: an event before it is missing")
                if chain_hash(row.prev_hash, instance, row.seq, _record(row).entry) != row.hash:
                    problems.append(f"{instance} #{row.seq}: the event was changed")
                last = row
            if last is None and (head.seq, head.hash) != (head.pruned_seq, head.pruned_hash):
                problems.append(f"{instance} #{head.seq}: its events are missing")
            if last is not None and (last.seq, last.hash) != (head.seq, head.hash):
                problems.append(f"{instance} #{last.seq}: events after it are missing")
        return {"instances": counts, "problems": problems}

    def prune(self, older_than: datetime) -> int:
        """Remove each chain's events up to its newest one older than ``older_than`` — a prefix
        of the chain, whatever order their times were written in — and record that event on
        the chain's head as where it was pruned (retention)."""
        newest = (
            select(AuditEvent.instance, func.max(AuditEvent.seq))
            .where(AuditEvent.at < older_than)
            .group_by(AuditEvent.instance)
            .order_by(AuditEvent.instance)  # heads locked in one order by every navigator
        )
        gone = 0
        for instance, seq in self.session.execute(newest).all():
            self._head(instance)
            last = self.session.execute(
                select(AuditEvent.hash).where(
                    AuditEvent.instance == instance, AuditEvent.seq == seq
                )
            ).scalar_one()
            self.session.execute(
                update(AuditHead)
                .where(AuditHead.instance == instance, AuditHead.pruned_seq < seq)
                .values(pruned_seq=seq, pruned_hash=last)
            )
            result = self.session.execute(
                delete(AuditEvent).where(AuditEvent.instance == instance, AuditEvent.seq <= seq)
            )
            gone += int(getattr(result, "rowcount", 0) or 0)
        return gone


def _first_kept(instance: str, row: AuditEvent, head: AuditHead) -> list[str]:
    """What is wrong with a chain's first kept event: it must follow where it was pruned."""
    if row.seq > head.pruned_seq + 1:
        return [f"{instance} #{row.seq}: the events before it are missing"]
    if row.seq <= head.pruned_seq:
        return [f"{instance} #{row.seq}: an event retention removed is back"]
    if row.prev_hash != head.pruned_hash:
        return [f"{instance} #{row.seq}: the first event links to another"]
    return []


def _actor() -> str:
    actor = ACTOR.get()
    if actor is not None:
        return actor
    try:
        return f"os:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name for this uid
        return "os:unknown"


def record_change(
    session: Session,
    action: str,
    target: str,
    *,
    outcome: str = "ok",
    grant_id: int | None = None,
    grant_revision: int | None = None,
) -> None:
    """Record a change in the transaction that makes it, under the transaction's instance (a
    navigator's own, or ``cli`` on the command line's direct path) and the context's actor."""
    instance = session.info.get(INSTANCE_KEY, CLI_INSTANCE)
    entry = AuditEntry(
        at=utcnow(),
        principal=_actor(),
        action=action,
        target=target,
        outcome=outcome,
        grant_id=grant_id,
        grant_revision=grant_revision,
    )
    AuditStore(session).append(instance, [entry])
