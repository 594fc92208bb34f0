"""Engines, sessions, migrations, and the one place storage exceptions are translated."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event, inspect, make_url, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import ArgumentError, IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from registry.audit import CLI_INSTANCE, INSTANCE_KEY
from registry.errors import Conflict, RegistryUnavailable
from registry.reads import HeldReads

if TYPE_CHECKING:
    from alembic.config import Config

    from registry.reads import AnySelect

__all__ = [
    "KEEPALIVES",
    "Registry",
    "existing_revision",
    "make_engine",
    "migrate",
    "ready_revision",
    "shown_url",
    "translate_errors",
]

logger = logging.getLogger("meshnav.registry")

MIGRATIONS = Path(__file__).parent / "migrations"
#: The newest migration's revision (``migrations/versions``); a test holds it to Alembic's head.
HEAD_REVISION = "0016"
#: How long one statement may wait for a lock or a connection before the registry is "unavailable".
STATEMENT_TIMEOUT_S = 5
#: TCP keepalives for every PostgreSQL connection (libpq's parameters): a peer gone silent — the
#: network failed while the registry moved on — is found dead within about 30 s and its
#: statement fails, where without them a read waiting on it (a catch-up, the change log's LISTEN)
#: waits for good.
KEEPALIVES: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 15,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,  # ms: data sent and never acknowledged
}
#: The execution option that marks a connection's transactions as writers': on SQLite they begin
#: ``BEGIN IMMEDIATE``, taking the database's one write lock before their first read.
WRITES = "meshnav_writes"


def make_engine(url: str) -> Engine:
    """An engine for ``url``: SQLite with WAL, foreign keys, a busy timeout; or PostgreSQL.
    Any other URL is ``RegistryUnavailable`` in words of ours (``BAD_URL``)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # a URL that does not parse; a port that is no number
        raise RegistryUnavailable(BAD_URL) from None
    if parsed.drivername not in ("sqlite", "postgresql", "postgresql+psycopg"):
        raise RegistryUnavailable(BAD_URL)
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    if url.startswith("sqlite"):
        path = _sqlite_file(url)
        if path is not None:
            _private_file(path)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": STATEMENT_TIMEOUT_S},
            pool_pre_ping=False,
        )
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(
        url,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=10,
        pool_timeout=STATEMENT_TIMEOUT_S,
        connect_args={
            **KEEPALIVES,
            "connect_timeout": STATEMENT_TIMEOUT_S,
            # a lock (a row, or the catalogue writers' advisory lock) waited for no longer
            "options": f"-c lock_timeout={STATEMENT_TIMEOUT_S * 1000}",
        },
    )


def _sqlite_file(url: str) -> Path | None:
    """The file an ``sqlite:///PATH`` URL names; None for an in-memory database."""
    database = make_url(url).database
    return None if database in (None, "", ":memory:") else Path(database)


_WARNED: set[Path] = set()


def _private_file(path: Path) -> None:
    """The registry's file, readable by its owner alone: it holds every node's call-token key,
    with which anyone who reads it can sign calls a node runs (SPEC §6). Made so before SQLite
    creates it with the umask's mode; SQLite gives its WAL and shared-memory files the same
    mode. A file that exists keeps its mode (an operator may have chosen it), with a warning
    when others may read it."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return
    if mode & (stat.S_IRWXG | stat.S_IRWXO) and path not in _WARNED:
        _WARNED.add(path)
        logger.warning(
            "the registry file %s may be read by other users; it holds the nodes' call-token "
            "keys (chmod 600 it and its -wal and -shm files)",
            path,
        )


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # pysqlite's own transaction handling emits BEGIN only before an INSERT, UPDATE or DELETE:
    # the reads a writer makes before its first change (the machine, the assignment, the marks
    # it keeps) would run outside its transaction, on data another writer is changing. Off, so
    # that ``_sqlite_begin`` says when a transaction begins.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_begin(connection: Connection) -> None:
    """Begin a SQLite transaction at its first statement: a writer's (``WRITES``) with the write
    lock taken at once, so that what it reads stays true until it commits; any other deferred, a
    snapshot that waits for no writer and holds no writer back (WAL)."""
    writes = connection.get_execution_options().get(WRITES, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if writes else "BEGIN")


#: Never the URL itself: it may hold a password.
BAD_URL = "The database URL is not one the registry can use: sqlite:///PATH or postgresql://…"


@contextlib.contextmanager
def translate_errors(*, writes: bool = False) -> Iterator[None]:
    """Turn storage exceptions into registry errors whose text we wrote (never the driver's);
    ``writes``: around a transaction that writes, whose failure says the registry cannot be
    written (a full disk, a held write lock), not that it cannot be read."""
    try:
        yield
    except IntegrityError as exc:
        raise Conflict("The change conflicts with what the registry holds.") from exc
    except SQLAlchemyError as exc:
        raise RegistryUnavailable(writes=writes) from exc
    except OSError as exc:
        raise RegistryUnavailable(writes=writes) from exc


class Registry:
    """An engine and its sessions. ``transaction()`` is the unit of work that writes, commit on
    success; ``read_transaction()`` one that only reads."""

    def __init__(self, url: str, *, audit_instance: str = CLI_INSTANCE) -> None:
        self.url = url
        #: The instance the changes of this process's transactions are audited under (ADR 0039).
        self.audit_instance = audit_instance
        self.engine = make_engine(url)
        self._sessions = sessionmaker(
            self.engine.execution_options(**{WRITES: True}), expire_on_commit=False
        )
        self._read_sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._writer = self.engine.execution_options(**{WRITES: True})
        self._held = HeldReads(self.engine) if self.reads_inline else None

    @property
    def is_postgres(self) -> bool:
        return self.engine.dialect.name == "postgresql"

    @property
    def reads_inline(self) -> bool:
        """Whether a short indexed read may run on the event loop: SQLite in WAL mode answers
        from the local file in microseconds and readers never wait for writers, so a thread hop
        would cost more than the read. A networked database is always read off the loop."""
        return self.engine.dialect.name == "sqlite"

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Session]:
        """A transaction that may write. On SQLite it holds the write lock from its first
        statement, its reads included (``BEGIN IMMEDIATE``): a writer's check and the change it
        makes from it are one step, as PostgreSQL's row and advisory locks make them there."""
        with translate_errors(writes=True), self._sessions() as session, session.begin():
            session.info[INSTANCE_KEY] = self.audit_instance
            yield session

    @contextlib.contextmanager
    def write_connection(self) -> Iterator[Connection]:
        """A writer's transaction on a Core connection, without an ORM session: for a batch of
        plain inserts written often (the audit trail's), where a session costs more than the
        statements."""
        with translate_errors(writes=True), self._writer.begin() as connection:
            yield connection

    @contextlib.contextmanager
    def read_transaction(self) -> Iterator[Session]:
        """A transaction that only reads: on SQLite one snapshot, taking no write lock, so it
        neither waits for a writer nor holds one back. Changes belong in ``transaction()``: here
        a write would take the lock only when it came, after reads another writer may have
        made stale."""
        with translate_errors(), self._read_sessions() as session, session.begin():
            yield session

    def rows(self, statement: AnySelect, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The typed rows of one read-only statement: no ORM session, nothing to commit.

        One statement sees one snapshot on every backend without a transaction of its own. On
        SQLite it runs on a held connection, compiled once (``registry.reads``); elsewhere on a
        pooled Core connection.
        """
        if self._held is not None:
            found = self._held.rows(statement, params)
            if found is not None:
                return found
        with translate_errors(), self.engine.connect() as connection:
            return [tuple(row) for row in connection.execute(statement, dict(params)).all()]

    def ping(self) -> None:
        with translate_errors(), self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    def dispose(self) -> None:
        if self._held is not None:
            self._held.close()
        self.engine.dispose()


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["database_url"] = url
    return config


def migrate(url: str, *, create: bool = True) -> str | None:
    """Upgrade the registry at ``url`` to the newest schema; running it again changes nothing.
    The revision the registry had is returned: ``None`` when there was none and one was made.

    With ``create=False`` a URL where no registry is (an SQLite file that does not exist, a
    database with no schema) is ``RegistryUnavailable``, naming the URL, and nothing is made:
    a server that serves as one principal (``navigator serve --stdio``) must not make an empty
    registry from a mistyped URL and then refuse its token as unknown (ADR 0036).

    A registry already at the newest schema (every start but the first) is recognised without
    Alembic, whose import alone costs a navigator's start ~0.2 s.
    """
    with translate_errors():
        before = existing_revision(url)
        if before is None and not create:
            raise RegistryUnavailable(no_registry(url))
        if before == HEAD_REVISION:
            return before
        from alembic import command

        command.upgrade(alembic_config(url), "head")
    return before


def shown_url(url: str) -> str:
    """``url`` as an operator is shown it: an SQLite file by its absolute path (a relative
    ``sqlite:///tmp/x.db`` is ``./tmp/x.db``, not ``/tmp/x.db``), a password never."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return "a database URL that does not parse"
    path = _sqlite_file(url) if parsed.drivername.startswith("sqlite") else None
    if path is not None:
        return f"sqlite:///{path.resolve()}"
    return parsed.render_as_string(hide_password=True)


def no_registry(url: str) -> str:
    """What a command that needs a registry says where there is none."""
    return (
        f"There is no registry at {shown_url(url)}, so no principal either; "
        "meshnav migrate makes one there (or give the registry's own URL)."
    )


def existing_revision(url: str) -> str | None:
    """The revision of the registry at ``url``, creating nothing: ``None`` where there is none
    (an SQLite file that does not exist is not made to find out)."""
    path = _sqlite_file(url) if url.startswith("sqlite") else None
    if path is not None and not path.exists():
        return None
    return schema_revision(url)


def ready_revision(url: str) -> None:
    """Check that a registry exists at ``url`` at the newest schema, creating nothing: the
    command line's direct path to a registry must not make a new, empty one from a mistyped
    URL (and an administrator in it)."""
    with translate_errors():
        found = existing_revision(url)
    if found is None:
        raise RegistryUnavailable(no_registry(url))
    if found != HEAD_REVISION:
        raise RegistryUnavailable(
            f"The registry at {shown_url(url)} has an older schema; meshnav migrate upgrades it."
        )


def schema_revision(url: str) -> str | None:
    """The registry's one Alembic revision; None when it has none (or, oddly, several)."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return None
            found = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    finally:
        engine.dispose()
    return str(found[0][0]) if len(found) == 1 else None
