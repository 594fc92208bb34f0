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

Every caller shares the DSN's role, so before it runs, the statement — read by PostgreSQL's own
parser as it will be sent — must call no function that acts outside the transaction (ending
another caller's query, reading the server's files) nor change the session
(``postgres_functions``, ADR 0047).

Each call opens its own connection, with a connect timeout, and closes it. Agents call seldom
next to a connection's cost on the same machine (a few milliseconds), the ``database`` argument
would need a pool per database, a restarted server needs no reconnect logic, and an idle node
holds no connection. The module refuses a privileged role, at start and at every call, unless
the operator allows it (``mesh.modules.postgres_role``).

The DSN is a secret: it is never part of a message, a ``repr`` or a log line. Its password need
not be in it (where ``ps`` shows it to every user, and the module warns): the node takes
``PGPASSWORD`` and ``PGPASSFILE`` out of its environment at start and gives them to this module's
connections alone. An error says what to do, from its SQLSTATE, then passes on PostgreSQL's own
primary message about the caller's statement (``mesh.modules.postgres_errors``).

Here: the server, its tools and the connection each call runs in. Beside it: what it reads of the
catalogue and the answers' shapes (``postgres_catalog``), values as JSON (``postgres_values``),
errors (``postgres_errors``), the role's check (``postgres_role``), the functions kept from
callers (``postgres_functions``) and the statement as sent (``postgres_statement``).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any, cast

import anyio
import psycopg
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import Tool
from mcp_types import ToolAnnotations
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq.abc import PGcancel
from pydantic import Field, JsonValue

from mesh.errors import ModuleSpecError
from mesh.modules.answers import TOO_LONG_ROW, RowBudget
from mesh.modules.postgres_catalog import (
    DATABASES,
    KINDS,
    MAX_TABLES,
    RELATION,
    TABLES,
    DatabaseEntry,
    DatabaseList,
    QueryResult,
    TableDescription,
    TableEntry,
    TableList,
    read_description,
)
from mesh.modules.postgres_errors import tool_error
from mesh.modules.postgres_functions import StatementRefused
from mesh.modules.postgres_role import (
    PRIVILEGED_CALL,
    PRIVILEGED_ROLE,
    check_role_at_start,
    warn_privileged,
)
from mesh.modules.postgres_statement import statement
from mesh.modules.postgres_values import LOADERS, cell
from mesh.modules.turns import NODE_TURNS, Turns

__all__ = ["build_postgres_module"]

STATEMENT_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 5
DEADLINE_SLACK_S = 5.0  # the client's deadline: connect and statement timeouts, and this
CANCEL_S = 2.0  # how long a cancel request to the server may take, past the deadline
DEFAULT_MAX_ROWS = 100
MAX_ROWS = 1000
MAX_SQL_CHARS = 100_000  # what parsing and checking a statement may cost (ADR 0047)
_CURSOR = "meshnav_query"
_DECLARE = f'DECLARE "{_CURSOR}" CURSOR FOR '  # what psycopg's server-side cursor sends first
FETCH_ROWS = 50  # the most rows one FETCH asks the server-side cursor for
_BUSY = (
    "this machine's PostgreSQL reads are all busy (at most {per_caller} of one caller at once);"
    " try again shortly"
)
#: The connection keyword of each of ``spec.LIBPQ_SECRETS``.
_SECRET_KEYWORDS = {"PGPASSWORD": "password", "PGPASSFILE": "passfile"}
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
    warned = check_role_at_start(dsn, role, allow_privileged_role, connect_timeout_s)
    busy = _BUSY.format(per_caller=turns.per_caller)

    def privileged() -> None:
        """The role is privileged now: refused, or warned of once when allowed."""
        nonlocal warned
        if not allow_privileged_role:
            raise ToolError(PRIVILEGED_CALL)
        if not warned:
            warned = True
            warn_privileged(role)

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
                        for name, loader in LOADERS.items():
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
                raise tool_error(exc, statement_timeout_s, values) from None

    async def list_databases() -> DatabaseList:
        """The databases on this machine's PostgreSQL server, with size and encoding."""
        async with read_only(None) as conn:
            rows = await (await conn.execute(DATABASES)).fetchall()
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
            cursor = await conn.execute(TABLES, {"schema": schema, "limit": MAX_TABLES + 1})
            rows = await cursor.fetchall()
        tables = [
            TableEntry(schema=s, name=n, kind=KINDS[k], estimated_rows=e) for s, n, k, e in rows
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
            found = await (await conn.execute(RELATION, [schema, table])).fetchone()
            if found is None:
                raise ToolError("no table or view by that name in that schema; see list_tables")
            current, oid, kind = found
            described = TableDescription(
                database=current,
                schema=schema,
                table=table,
                kind=KINDS[kind],
                columns=[],
                indexes=[],
                foreign_keys=[],
            )
            await read_description(conn, oid, described)
        return described

    async def query(
        sql: Annotated[
            str,
            Field(description="One SELECT statement.", min_length=1, max_length=MAX_SQL_CHARS),
        ],
        params: Annotated[
            list[Param] | dict[str, Param] | None,
            Field(description="Values for %s placeholders (a list) or %(name)s (an object)."),
        ] = None,
        max_rows: Annotated[int, Field(ge=1, le=MAX_ROWS)] = DEFAULT_MAX_ROWS,
        database: DatabaseArg = None,
    ) -> QueryResult:
        """Run one read-only SELECT (or WITH ... SELECT, VALUES, TABLE) on a PostgreSQL
        database of this machine; returns its columns and up to max_rows rows."""
        async with read_only(database, params) as conn:
            try:  # in the caller's turn: a long statement costs a fraction of a second to check
                text, values = await anyio.to_thread.run_sync(statement, _DECLARE, sql, params)
            except StatementRefused as refused:
                raise ToolError(str(refused)) from None
            async with psycopg.AsyncRawServerCursor(conn, _CURSOR) as cursor:
                deadline = anyio.current_time() + statement_timeout_s
                # The caller's SQL is meant to run: the transaction around it is read-only, and its
                # statement calls none of the functions that act outside it (postgres_functions).
                await cursor.execute(text, values)
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
                            cells = [cell(value) for value in row]
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
