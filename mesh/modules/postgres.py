"""The ``postgres`` module: the machine's own PostgreSQL, read-only (SPEC §6).

Every tool runs in a ``READ ONLY`` transaction with a ``statement_timeout`` and is rolled back,
so the module writes nothing whatever SQL it is given, and a client-side deadline backs the
server's timeout up. The timeout is set again before each statement (the caller's SQL can lift it
with ``set_config`` for the statements after its own), and at the deadline the server is sent a
cancel request before the connection closes: a backend whose client has gone keeps running.

``query`` runs the caller's statement through a server-side cursor, so it takes one SELECT
(with WITH, VALUES or TABLE forms) and PostgreSQL itself refuses data-modifying CTEs and anything
else there. Its rows are FETCHed 1, 2, 4 … at most 50 at a time — fewer once rows are long — and
each FETCH's rows come one at a time, so a huge result costs neither the server nor this process
more than the page asked for, and at most 1.5 MiB of values, ``truncated`` then set as when
``max_rows`` stops it. The node's turns bound the calls running at once, in all and per caller
(``mesh.modules.turns``), as for the ``sqlite`` module.

Each call opens its own connection, with a connect timeout, and closes it. Agents call seldom
next to a connection's cost on the same machine (a few milliseconds), the ``database`` argument
would need a pool per database, a restarted server needs no reconnect logic, and an idle node
holds no connection. The read-only transaction stops writes through SQL; functions that act
outside it (``pg_terminate_backend``, ``dblink``, ``pg_read_file``, ``COPY … TO PROGRAM``) are
bounded only by the role's privileges. So the module refuses a privileged role
(``PRIVILEGED_ROLE``: a superuser, a role that may create roles, or one that may act as
``pg_execute_server_program``, ``pg_read_server_files`` or ``pg_write_server_files``, directly, by
inheritance or by ``SET ROLE``) — at start when the server answers, and again at the start of every
call, since grants change — unless the operator allows it (``--allow-privileged-role``), which is
logged as a warning.

The DSN is a secret: it is never part of a message, a ``repr`` or a log line. Its password need
not be in it (where ``ps`` shows it to every user, and the module warns): the node takes
``PGPASSWORD`` and ``PGPASSFILE`` out of its environment at start and gives them to this module's
connections alone. An error says what to do, from its SQLSTATE, then passes on PostgreSQL's own
primary message about the caller's statement, bounded and without paths
(``columns.database_message``); connection errors are worded by us alone, as their text names the
host and user.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import inspect
import logging
import math
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from decimal import Decimal
from typing import Annotated, Any, cast

import anyio
import psycopg
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import Tool
from mcp_types import ToolAnnotations
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq.abc import PGcancel
from psycopg.types.datetime import DateLoader, TimeLoader, TimestampLoader, TimestamptzLoader
from psycopg.types.string import TextLoader
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from mesh.errors import ModuleSpecError
from mesh.modules.answers import TOO_LONG_ROW, RowBudget, database_message
from mesh.modules.columns import Column
from mesh.modules.turns import NODE_TURNS, Turns

__all__ = ["build_postgres_module"]

STATEMENT_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 5
DEADLINE_SLACK_S = 5.0  # the client's deadline: connect and statement timeouts, and this
CANCEL_S = 2.0  # how long a cancel request to the server may take, past the deadline
DEFAULT_MAX_ROWS = 100
MAX_ROWS = 1000
MAX_TABLES = 1000
_CURSOR = "meshnav_query"
FETCH_ROWS = 50  # the most rows one FETCH asks the server-side cursor for
_BUSY = (
    "this machine's PostgreSQL reads are all busy (at most {per_caller} of one caller at once);"
    " try again shortly"
)
#: The connection keyword of each of ``spec.LIBPQ_SECRETS``.
_SECRET_KEYWORDS = {"PGPASSWORD": "password", "PGPASSFILE": "passfile"}
#: Whether the connection's login role is, or may become, a role that acts outside SQL's
#: read-only transaction: runs programs, reads or writes the server's files, makes roles.
PRIVILEGED_ROLE = """
SELECT EXISTS (
    SELECT 1 FROM pg_roles r
    WHERE pg_has_role(session_user, r.oid, 'MEMBER')
      AND (r.rolsuper OR r.rolcreaterole OR r.rolname IN (
          'pg_execute_server_program', 'pg_read_server_files', 'pg_write_server_files')))"""
_PRIVILEGED = (
    "the postgres module's role is a superuser, may create roles, or may act as"
    " pg_execute_server_program, pg_read_server_files or pg_write_server_files, so a read-only"
    " query could run programs and read or write the server's files"
)
_PRIVILEGED_START = (
    _PRIVILEGED + ": give the module a role that may only read (GRANT pg_read_all_data), or"
    " start the node with --allow-privileged-role to serve it anyway"
)
_PRIVILEGED_CALL = (
    "this machine's PostgreSQL module refuses to serve: its role is privileged; the machine's"
    " operator must give it a role that may only read"
)
_DSN_ON_ARGV = (
    "the DSN of postgres assignment %s holds a password, which every user of this machine can"
    " read on the node's command line (ps): give it as PGPASSWORD or in a PGPASSFILE instead"
)
logger = logging.getLogger("meshnav.node")

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DatabaseArg = Annotated[
    str | None, Field(description="A database on this server; omit for the module's own.")
]
SchemaArg = Annotated[str, Field(description="The table's schema.")]
Scalar = str | int | float | bool | None
Param = Scalar | list[Scalar]  # a list binds as an array: WHERE id = ANY(%s)


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


def build_postgres_module(
    dsn: str,
    *,
    role: str = "postgres",
    environment: Mapping[str, str] | None = None,
    allow_privileged_role: bool = False,
    statement_timeout_s: float = STATEMENT_TIMEOUT_S,
    connect_timeout_s: int = CONNECT_TIMEOUT_S,
    turns: Turns = NODE_TURNS,
    deadline_slack_s: float = DEADLINE_SLACK_S,
) -> FastMCP:
    """The ``postgres`` module's server for the server and role ``dsn`` names, as assignment
    ``role``. ``environment`` holds what the node took of ``spec.LIBPQ_SECRETS`` from its own; a
    privileged role is refused (``ModuleSpecError``) unless ``allow_privileged_role``."""
    try:
        given = conninfo_to_dict(dsn)
    except psycopg.Error:
        raise ModuleSpecError("the postgres DSN does not parse") from None
    if given.get("password"):
        logger.warning(_DSN_ON_ARGV, role)
    secrets = {
        keyword: (environment or {})[name]
        for name, keyword in _SECRET_KEYWORDS.items()
        if (environment or {}).get(name) and not given.get(keyword)
    }
    dsn = make_conninfo(dsn, **secrets) if secrets else dsn
    warned = _check_role_at_start(dsn, role, allow_privileged_role, connect_timeout_s)
    busy = _BUSY.format(per_caller=turns.per_caller)

    def privileged() -> None:
        """The role is privileged now: refused, or warned of once when allowed."""
        nonlocal warned
        if not allow_privileged_role:
            raise ToolError(_PRIVILEGED_CALL)
        if not warned:
            warned = True
            _warn_privileged(role)

    mcp = FastMCP("postgres", mask_error_details=True)

    @asynccontextmanager
    async def read_only(
        database: str | None, params: list[Param] | dict[str, Param] | None = None
    ) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A connection inside a READ ONLY transaction that is always rolled back, once its
        role is found not privileged (or allowed to be). No error repeats ``params``."""
        conninfo = make_conninfo(dsn, dbname=database) if database else dsn
        async with turns.turn(statement_timeout_s, busy):
            try:
                with anyio.fail_after(connect_timeout_s + statement_timeout_s + deadline_slack_s):
                    async with await psycopg.AsyncConnection.connect(
                        conninfo, autocommit=True, connect_timeout=connect_timeout_s
                    ) as conn:
                        for name, loader in _LOADERS.items():
                            conn.adapters.register_loader(name, loader)
                        cancel = conn.pgconn.get_cancel()
                        try:
                            await conn.set_read_only(True)
                            async with conn.transaction(force_rollback=True):
                                if await _arm(conn, statement_timeout_s, check_role=True):
                                    privileged()
                                yield conn
                        except BaseException as exc:
                            if conn.closed or isinstance(exc, anyio.get_cancelled_exc_class()):
                                await _cancel_on_server(cancel)
                            raise
            except (psycopg.Error, TimeoutError) as exc:
                values = params.values() if isinstance(params, dict) else params or ()
                raise _tool_error(exc, statement_timeout_s, values) from None

    async def list_databases() -> DatabaseList:
        """The databases on this machine's PostgreSQL server, with size and encoding."""
        async with read_only(None) as conn:
            rows = await (await conn.execute(_DATABASES)).fetchall()
        return DatabaseList(
            databases=[
                DatabaseEntry(name=n, default=d, encoding=e, size_bytes=s) for n, d, e, s in rows
            ]
        )

    async def list_tables(database: DatabaseArg = None, schema: str | None = None) -> TableList:
        """Tables, views and materialized views of a PostgreSQL database on this machine, by
        schema (all user schemas unless one is given), with estimated row counts."""
        async with read_only(database) as conn:
            current = await (await conn.execute("SELECT current_database()")).fetchone()
            cursor = await conn.execute(_TABLES, {"schema": schema, "limit": MAX_TABLES + 1})
            rows = await cursor.fetchall()
        tables = [
            TableEntry(schema=s, name=n, kind=_KINDS[k], estimated_rows=e) for s, n, k, e in rows
        ]
        return TableList(
            database=current[0] if current else "",
            tables=tables[:MAX_TABLES],
            truncated=len(tables) > MAX_TABLES,
        )

    async def describe_table(
        table: str, schema: SchemaArg = "public", database: DatabaseArg = None
    ) -> TableDescription:
        """Columns (type, NOT NULL, default, primary key), indexes and foreign keys of a table
        or view in a PostgreSQL database on this machine; read it before writing a query."""
        async with read_only(database) as conn:
            found = await (await conn.execute(_RELATION, [schema, table])).fetchone()
            if found is None:
                raise ToolError("no table or view by that name in that schema; see list_tables")
            current, oid, kind = found
            described = TableDescription(
                database=current,
                schema=schema,
                table=table,
                kind=_KINDS[kind],
                columns=[],
                indexes=[],
                foreign_keys=[],
            )
            # No more than the answer's budget: the table's owner may give it defaults and
            # index expressions of any length, and as many indexes and keys as it likes.
            budget = RowBudget()
            for sql, make, into in (
                (_COLUMNS, _column, described.columns),
                (_INDEXES, _index, described.indexes),
                (_FOREIGN_KEYS, _foreign_key, described.foreign_keys),
            ):
                if not await _read_within(conn, sql, oid, make, into, budget):
                    described.truncated = True
                    break
        return described

    async def query(
        sql: Annotated[str, Field(description="One SELECT statement.", min_length=1)],
        params: Annotated[
            list[Param] | dict[str, Param] | None,
            Field(description="Values for %s placeholders (a list) or %(name)s (an object)."),
        ] = None,
        max_rows: Annotated[int, Field(ge=1, le=MAX_ROWS)] = DEFAULT_MAX_ROWS,
        database: DatabaseArg = None,
    ) -> QueryResult:
        """Run one read-only SELECT (or WITH ... SELECT, VALUES, TABLE) on a PostgreSQL
        database of this machine; returns its columns and up to max_rows rows."""
        async with read_only(database, params) as conn, conn.cursor(name=_CURSOR) as cursor:
            deadline = anyio.current_time() + statement_timeout_s
            # The caller's SQL is meant to run: the transaction around it is read-only.
            await cursor.execute(sql, params)
            columns = [column.name for column in cursor.description or ()]
            rows: list[list[JsonValue]] = []
            budget = RowBudget()
            size = 1  # rows asked of the next FETCH: doubled while they stay small
            while len(rows) <= max_rows:
                # The caller's SQL may set statement_timeout for the statements after it: each
                # FETCH gets what is left of the query's time again.
                await _arm(conn, deadline - anyio.current_time())
                asked = min(size, max_rows + 1 - len(rows))
                got = largest = 0
                # Its rows come one at a time (libpq's single-row mode), so a long row is never
                # held with the ones after it; leaving early cancels the rest of the FETCH.
                fetch = f"FETCH FORWARD {asked} FROM {_CURSOR}"
                stream = cast(AsyncGenerator[Any, None], conn.cursor().stream(fetch))
                async with contextlib.aclosing(stream):
                    async for row in stream:
                        got += 1
                        if len(rows) == max_rows:
                            return QueryResult(columns=columns, rows=rows, truncated=True)
                        cells = [_cell(value) for value in row]
                        left = budget.left
                        if not budget.admits(cells):
                            if not rows:
                                raise ToolError(TOO_LONG_ROW)
                            return QueryResult(columns=columns, rows=rows, truncated=True)
                        largest = max(largest, left - budget.left)
                        rows.append(cells)
                if got < asked:
                    break
                size = max(1, min(FETCH_ROWS, 2 * size, budget.left // max(largest, 1)))
        return QueryResult(columns=columns, rows=rows, truncated=False)

    for fn, title in (
        (list_databases, "List PostgreSQL databases"),
        (list_tables, "List PostgreSQL tables"),
        (describe_table, "Describe a PostgreSQL table"),
        (query, "Query PostgreSQL (read-only)"),
    ):
        description = " ".join((inspect.getdoc(fn) or "").split())
        mcp.add_tool(
            Tool.from_function(fn, title=title, description=description, annotations=READ_ONLY)
        )
    return mcp


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


def _check_role_at_start(
    dsn: str, role: str, allow_privileged_role: bool, connect_timeout_s: int
) -> bool:
    """Refuse a privileged role before the node serves it; a server that does not answer now
    is checked at each call instead (a node may start before its database). Whether it warned
    of an allowed privileged role."""
    try:
        with psycopg.connect(dsn, connect_timeout=connect_timeout_s) as conn:
            row = conn.execute(PRIVILEGED_ROLE).fetchone()
    except psycopg.Error as exc:
        logger.warning(
            "postgres assignment %s: its role cannot be checked now (%s); each call checks it",
            role,
            _tool_error(exc, 0),
        )
        return False
    if not (row and row[0]):
        return False
    if not allow_privileged_role:
        raise ModuleSpecError(f"postgres assignment {role}: {_PRIVILEGED_START}")
    _warn_privileged(role)
    return True


def _warn_privileged(role: str) -> None:
    logger.warning(
        "DANGER: postgres assignment %s serves a privileged role (--allow-privileged-role): %s;"
        " every caller granted its query tool can do so",
        role,
        _PRIVILEGED,
    )


async def _arm(
    conn: psycopg.AsyncConnection[Any], seconds: float, *, check_role: bool = False
) -> bool:
    """Set the transaction's ``statement_timeout``: each statement after this one runs under it
    (a statement's timer starts with it, so the SQL running cannot lift its own). With
    ``check_role``, whether the connection's role is privileged, in the same round trip."""
    timeout = f"{max(1, int(seconds * 1000))}ms"
    check = f"({PRIVILEGED_ROLE})" if check_role else "false"
    cursor = await conn.execute(
        f"SELECT set_config('statement_timeout', %s, true), {check}", [timeout]
    )
    row = await cursor.fetchone()
    return bool(row and row[1])


async def _cancel_on_server(cancel: PGcancel) -> None:
    """Ask the server to stop the connection's statement, within ``CANCEL_S`` and shielded: at
    the client's deadline anyio also cancels psycopg's own request, and a backend whose client
    has gone keeps running (``pg_sleep(3600)``: an hour, with its locks and snapshot)."""
    # psycopg.Error: the server is gone or refused, and there is nothing left to stop there
    with anyio.move_on_after(CANCEL_S, shield=True), contextlib.suppress(psycopg.Error):
        await anyio.to_thread.run_sync(cancel.cancel, abandon_on_cancel=True)


def _as_printed(loader: type[Loader]) -> type[Loader]:
    """``loader``, giving a value Python's dates cannot hold (``infinity``, a date BC, 24:00) as
    PostgreSQL prints it: psycopg refused it, and with it the whole query."""

    class AsPrinted(loader):  # type: ignore[misc,valid-type]
        def load(self, data: Buffer) -> Any:
            try:
                return super().load(data)
            except psycopg.DataError:
                return bytes(data).decode()

    return AsPrinted


_LOADERS: dict[str, type[Loader]] = {
    "date": _as_printed(DateLoader),
    "time": _as_printed(TimeLoader),
    "timestamp": _as_printed(TimestampLoader),
    "timestamptz": _as_printed(TimestamptzLoader),
    # as PostgreSQL prints it: Python's timedelta has no months ("1 mon" came back as
    # "30 days, 0:00:00") and no sign of its own ("-1 days, 23:00:00" for an hour ago)
    "interval": TextLoader,
}


def _cell(value: Any) -> JsonValue:
    """A value as JSON: numbers and text as they are, the rest as PostgreSQL would print it."""
    if value is None or isinstance(value, bool | int | str):
        return cast(JsonValue, value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return "\\x" + bytes(value).hex()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_cell(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _cell(item) for key, item in value.items()}
    if isinstance(value, Decimal):
        return str(value)
    return str(value)  # UUIDs, network addresses, ranges


def _tool_error(
    exc: Exception, statement_timeout_s: float, params: Iterable[object] = ()
) -> ToolError:
    """Say what to do from the SQLSTATE, then PostgreSQL's primary message about the caller's
    statement, bounded and with ``params`` and paths taken out; a connection error's text names
    the host and user, and is not passed on."""
    if isinstance(exc, TimeoutError):
        return ToolError("the PostgreSQL server did not answer in time")
    if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:
        text = str(exc)
        if "does not exist" in text and "database" in text:
            return ToolError("no database by that name on this server; see list_databases")
        if "authentication" in text or "pg_hba.conf" in text or "password" in text:
            return ToolError(
                "the PostgreSQL server refused the module's credentials (the machine's operator"
                " gives its password as PGPASSWORD or in a PGPASSFILE)"
            )
        return ToolError("the PostgreSQL server cannot be reached")
    state = exc.sqlstate if isinstance(exc, psycopg.Error) else None
    primary = exc.diag.message_primary if isinstance(exc, psycopg.Error) else None
    if state is None:
        return ToolError(_CLIENT_ERROR)
    if state == "57014":
        return ToolError(f"the query ran past the {statement_timeout_s:g} s statement timeout")
    if primary and primary.startswith("cannot insert multiple commands"):
        return ToolError("send one statement per call")
    known = _SQLSTATES.get(state) or _SQLSTATES.get(state[:2])
    name = type(exc).__name__
    text = known or f"PostgreSQL refused the query ({name}, SQLSTATE {state})"
    if state[:2] in _WORDED_ALONE or not primary:
        return ToolError(text)
    return ToolError(f"{text} (PostgreSQL: {database_message(primary, hidden=params)})")


#: SQLSTATE classes whose message is not about the caller's statement: connection (08), the
#: module's credentials (28), the server's own state (57, XX). A system error (58: a file the
#: statement named) is, and passes on without its path.
_WORDED_ALONE = frozenset({"08", "28", "57", "XX"})
_CLIENT_ERROR = (
    "the parameters do not fit the statement: use %s with a list or %(name)s with an object,"
    " and write %% for a literal % when there are parameters"
)
_SQLSTATES = {
    "25006": "query only reads: the statement would write (read-only transaction)",
    "0A000": "PostgreSQL does not allow that here: query takes one SELECT, WITH, VALUES or TABLE"
    " statement, without data-modifying WITH clauses",
    "42601": "PostgreSQL could not parse the statement: query takes one SELECT, WITH, VALUES or"
    " TABLE statement",
    "42501": "the module's role may not read that",
    "42P01": "the statement names a table that does not exist; see list_tables",
    "42703": "the statement names a column that does not exist; see describe_table",
    "42883": "the statement calls a function or operator that does not exist for those types",
    "3F000": "the statement names a schema that does not exist; see list_tables",
    "22": "a value does not fit its type or operation (data exception)",
    "53": "the server is out of resources for this query",
}
_KINDS = {
    "r": "table",
    "p": "partitioned table",
    "v": "view",
    "m": "materialized view",
    "f": "foreign table",
}
_DATABASES = """
SELECT datname, datname = current_database(), pg_encoding_to_char(encoding),
       CASE WHEN has_database_privilege(datname, 'CONNECT') THEN pg_database_size(datname) END
FROM pg_database WHERE datallowconn AND NOT datistemplate ORDER BY datname"""
_TABLES = """
SELECT n.nspname, c.relname, c.relkind, CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint END
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND CASE WHEN %(schema)s::text IS NULL
           THEN n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
           ELSE n.nspname = %(schema)s END
ORDER BY 1, 2 LIMIT %(limit)s"""
_RELATION = """
SELECT current_database(), c.oid, c.relkind FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"""
_COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_get_expr(d.adbin, d.adrelid),
       COALESCE(array_position((SELECT string_to_array(i.indkey::text, ' ')::int2[] FROM pg_index i
                                WHERE i.indrelid = a.attrelid AND i.indisprimary), a.attnum), 0)
FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"""
_INDEXES = """
SELECT c.relname, i.indisunique, i.indisprimary, pg_get_indexdef(i.indexrelid)
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s ORDER BY 1"""
_FOREIGN_KEYS = """
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = %s AND contype = 'f' ORDER BY 1"""
