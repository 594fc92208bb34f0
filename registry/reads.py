"""The registry read every request makes, as cheap as the database allows.

Every authenticated request reads its token's principal and grants (ADR 0009): one indexed
statement. Through a pooled SQLAlchemy Core connection that read costs ~150 us of pool checkout,
execution context and result machinery around ~40 us of SQLite's own work. On SQLite, where such
reads run inline on the event loop (``Registry.reads_inline``), ``Reads`` runs the statement on one
held DBAPI connection, compiled once for the dialect, and types its rows with the very result
processors SQLAlchemy would apply. Each statement still reads the database as it is now: the held
connection begins no transaction (pysqlite's own BEGIN is off, ``database._sqlite_connect``), so
every read sees the latest commit (WAL readers never wait for writers). Other databases, and any
statement whose parameters need converting, take the ordinary pooled Core path (``Registry.rows``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.pool import PoolProxiedConnection

from registry.errors import RegistryUnavailable

if TYPE_CHECKING:
    from typing import TypeAlias

    from sqlalchemy import Select

    AnySelect: TypeAlias = Select[*tuple[Any, ...]]

__all__ = ["HeldReads"]

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class _Prepared:
    sql: str
    #: Bind parameter names in the order the SQL's placeholders take them.
    names: tuple[str, ...]
    defaults: Mapping[str, Any]
    #: One per selected column: how SQLAlchemy turns the driver's value into the column's type.
    processors: tuple[Callable[[Any], Any] | None, ...]


def _prepare(statement: AnySelect, dialect: Dialect) -> _Prepared | None:
    """The statement compiled for ``dialect``; ``None`` when a parameter would need converting."""
    compiled = statement.compile(dialect=dialect)
    if not compiled.positional or compiled.positiontup is None:
        return None
    for bind in compiled.binds.values():
        if bind.type.dialect_impl(dialect).bind_processor(dialect) is not None:
            return None
    processors = tuple(
        column.type.dialect_impl(dialect).result_processor(dialect, None)
        for column in statement.selected_columns
    )
    return _Prepared(
        sql=str(compiled),
        names=tuple(compiled.positiontup),
        defaults=dict(compiled.params),
        processors=processors,
    )


class HeldReads:
    """Single-statement reads on one held SQLite connection, each statement compiled once."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._prepared: dict[int, tuple[AnySelect, _Prepared | None]] = {}
        self._connection: PoolProxiedConnection | None = None
        self._lock = threading.Lock()

    def rows(self, statement: AnySelect, params: Mapping[str, Any]) -> list[Row] | None:
        """All rows of ``statement`` with ``params``, typed; ``None`` when the statement needs the
        pooled path; ``RegistryUnavailable`` when the database fails."""
        prepared = self._prepare(statement)
        if prepared is None:
            return None
        return self._held_rows(prepared, params)

    def _prepare(self, statement: AnySelect) -> _Prepared | None:
        found = self._prepared.get(id(statement))
        if found is None or found[0] is not statement:
            found = (statement, _prepare(statement, self.engine.dialect))
            self._prepared[id(statement)] = found
        return found[1]

    def _held_rows(self, prepared: _Prepared, params: Mapping[str, Any]) -> list[Row]:
        values = tuple(params.get(name, prepared.defaults.get(name)) for name in prepared.names)
        driver_error = self.engine.dialect.loaded_dbapi.Error
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = self.engine.raw_connection()
                    self._connection.detach()  # ours until close(); the pool never resets it
                cursor = self._connection.cursor()
                try:
                    cursor.execute(prepared.sql, values)
                    fetched = cursor.fetchall()
                finally:
                    cursor.close()
            except (driver_error, OSError) as error:
                self._drop()
                raise RegistryUnavailable() from error
        processors = prepared.processors
        if not any(processors):
            return [tuple(row) for row in fetched]
        return [
            tuple(
                value if process is None else process(value)
                for process, value in zip(processors, row, strict=True)
            )
            for row in fetched
        ]

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            try:
                connection.close()
            except Exception:  # a broken connection may fail to close; it is dropped either way
                return

    def close(self) -> None:
        with self._lock:
            self._drop()
