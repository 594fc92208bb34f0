"""What the ``postgres`` module reads of the server's catalogue: its answers' shapes, the
catalogue's SQL, and a table's description read row by row within the answer's budget."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable
from typing import Any, cast

import psycopg
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from mesh.modules.answers import RowBudget
from mesh.modules.columns import Column

__all__ = [
    "DATABASES",
    "KINDS",
    "MAX_TABLES",
    "RELATION",
    "TABLES",
    "DatabaseEntry",
    "DatabaseList",
    "QueryResult",
    "TableDescription",
    "TableEntry",
    "TableList",
    "read_description",
]

MAX_TABLES = 1000


class _Aliased(BaseModel):
    model_config = ConfigDict(serialize_by_alias=True, populate_by_name=True)


class DatabaseEntry(BaseModel):
    name: str
    default: bool = Field(description="True for the database the module connects to.")
    encoding: str
    size_bytes: int | None = Field(description="None when the module may not connect to it.")


class DatabaseList(BaseModel):
    databases: list[DatabaseEntry]


class TableEntry(_Aliased):
    schema_: str = Field(alias="schema")
    name: str
    kind: str = Field(description="table, partitioned table, view, materialized view, foreign")
    estimated_rows: int | None = Field(description="The planner's estimate; None if unknown.")


class TableList(BaseModel):
    database: str
    tables: list[TableEntry]
    truncated: bool = Field(description=f"True when more than {MAX_TABLES} tables matched.")


class Index(BaseModel):
    name: str
    unique: bool
    primary: bool
    definition: str


class ForeignKey(BaseModel):
    name: str
    definition: str


class TableDescription(_Aliased):
    database: str
    schema_: str = Field(alias="schema")
    table: str
    kind: str
    columns: list[Column]
    indexes: list[Index]
    foreign_keys: list[ForeignKey]
    truncated: bool = Field(
        default=False,
        description="True when its columns, indexes and foreign keys passed 1.5 MiB; those"
        " that fit are given.",
    )


class QueryResult(BaseModel):
    columns: list[str]
    rows: list[list[JsonValue]]
    truncated: bool = Field(
        description="True when more rows matched than the answer holds: max_rows, or 1.5 MiB."
    )


def _column(name: str, type_: str, notnull: bool, default: str | None, pk: int) -> Column:
    return Column(name=name, type=type_, notnull=notnull, default=default, pk=pk)


def _index(name: str, unique: bool, primary: bool, definition: str) -> Index:
    return Index(name=name, unique=unique, primary=primary, definition=definition)


def _foreign_key(name: str, definition: str) -> ForeignKey:
    return ForeignKey(name=name, definition=definition)


async def _read_within(
    conn: psycopg.AsyncConnection[Any],
    sql: str,
    oid: int,
    make: Callable[..., BaseModel],
    into: list[Any],
    budget: RowBudget,
) -> bool:
    """Append to ``into`` each row of ``sql`` for relation ``oid``, made into its model, while
    ``budget`` admits it; False once one does not fit. Rows come one at a time (libpq's
    single-row mode), and leaving early cancels the rest."""
    stream = cast(AsyncGenerator[Any, None], conn.cursor().stream(sql, [oid]))
    async with contextlib.aclosing(stream):
        async for row in stream:
            if budget.past(row):
                return False
            item = make(*row)
            if not budget.admits([item]):
                return False
            into.append(item)
    return True


async def read_description(
    conn: psycopg.AsyncConnection[Any], oid: int, described: TableDescription
) -> None:
    """Fill ``described``'s columns, indexes and foreign keys of relation ``oid``, no more than
    the answer's budget: the table's owner may give it defaults and index expressions of any
    length, and as many indexes and keys as it likes."""
    budget = RowBudget()
    for sql, make, into in (
        (COLUMNS, _column, described.columns),
        (INDEXES, _index, described.indexes),
        (FOREIGN_KEYS, _foreign_key, described.foreign_keys),
    ):
        if not await _read_within(conn, sql, oid, make, into, budget):
            described.truncated = True
            return


KINDS = {
    "r": "table",
    "p": "partitioned table",
    "v": "view",
    "m": "materialized view",
    "f": "foreign table",
}
DATABASES = """
SELECT datname, datname = current_database(), pg_encoding_to_char(encoding),
       CASE WHEN has_database_privilege(datname, 'CONNECT') THEN pg_database_size(datname) END
FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname"""
TABLES = """
SELECT n.nspname, c.relname, c.relkind, CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint END
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND CASE WHEN %(schema)s::text IS NULL
           THEN n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
           ELSE n.nspname = %(schema)s END
ORDER BY 1, 2 LIMIT %(limit)s"""
RELATION = """
SELECT current_database(), c.oid, c.relkind FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"""
COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid),
       COALESCE(array_position((SELECT string_to_array(i.indkey::text, ' ')::int2[] FROM pg_index i
                                WHERE i.indrelid = a.attrelid AND i.indisprimary), a.attnum), 0)
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"""
INDEXES = """
SELECT c.relname, i.indisunique, i.indisprimary, pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s ORDER BY 1"""
FOREIGN_KEYS = """
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = %s AND contype = 'f' ORDER BY 1"""
