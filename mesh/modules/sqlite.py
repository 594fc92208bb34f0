"""The ``sqlite`` module: the machine's own SQLite databases (SPEC §6).

Each configured path is a database file or a directory of them (``*.db``, ``*.sqlite``,
``*.sqlite3``), found once when the module is built. A database is named by its file stem; two
files with one stem are refused at build rather than discovered later as a surprise, and the names
go into each tool's ``database`` enum so that an agent reading ``describe`` sees its choices.

``query`` is read-only by construction rather than by parsing SQL: the file is opened with
``mode=ro``, ``PRAGMA query_only`` is on, and an authorizer lets a statement only read (SELECT,
WITH, EXPLAIN, introspection PRAGMAs). ``execute`` runs one statement in its own transaction with
ATTACH (and so ``VACUUM INTO``), transaction control and setting PRAGMAs refused. Both run in a
worker thread under a time limit: a timer interrupts the statement at its deadline, so a runaway
statement stops and never blocks the event loop. SQLite checks for an interrupt between its
virtual machine's steps, and one step (a function call) can run long on long values —
``instr`` over two long strings is quadratic — so no value may be longer than ``MAX_VALUE_BYTES``
(``SQLITE_LIMIT_LENGTH``): that bounds one step's time and memory alike. A step that loops
without growing a value (``printf`` with a precision of two billion: seconds) still ends late, so
a read is answered at its deadline and its thread left to finish that step. A query's rows stop at
``MAX_ANSWER_BYTES`` of values as well as at ``max_rows``, with ``truncated`` set. The
``fts3_tokenizer`` function is refused: it hands out, and takes, raw pointers. Errors are worded
from SQLite's error code alone: its messages quote the SQL, and we never repeat the SQL or its
parameters.
"""

from __future__ import annotations

import base64
import inspect
import math
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import Tool
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from mesh.errors import ModuleSpecError
from mesh.modules.columns import TOO_LONG_ROW, Column, RowBudget

__all__ = ["build_sqlite_module"]

SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3"})
TIME_LIMIT_S = 5.0  # per statement, query and execute alike
BUSY_TIMEOUT_S = 2.0  # how long a write waits for another writer's lock
DEFAULT_MAX_ROWS = 100
MAX_ROWS = 1000
MAX_VALUE_BYTES = 1 << 20  # the longest string or blob a statement may read or make
_POINTER_FUNCTIONS = frozenset({"fts3_tokenizer"})
MAX_READERS = 8  # reads running at once on this node, abandoned ones included
#: The most columns a statement may name or return: with ``MAX_VALUE_BYTES``, what one row can
#: hold before anything measures it (SQLite allows 2,000: a row of 2 GB).
MAX_COLUMNS = 128
#: The most tables and views ``list_tables`` names (``truncated`` past it), as PostgreSQL's.
MAX_TABLES = 1000
_READERS = threading.BoundedSemaphore(MAX_READERS)
_BUSY = "this machine's SQLite reads are all busy; try again shortly"
LATE_S = 0.5  # how long past its deadline a read's answer may wait for its interrupted step
_LATE = "the statement ran past its time limit of {time_limit_s:g} s and was stopped"

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

_READS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, 33})
_NEVER_IN_EXECUTE = frozenset({sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, 22, 32})
# 33: SQLITE_RECURSIVE, 22: SQLITE_TRANSACTION, 32: SQLITE_SAVEPOINT
_INTROSPECTION_PRAGMAS = {
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "database_list", "collation_list", "function_list",
    "module_list", "pragma_list", "compile_options", "integrity_check", "quick_check",
}  # fmt: skip
_SETTING_PRAGMAS = {  # may be read, never set
    "application_id", "auto_vacuum", "data_version", "encoding", "freelist_count", "journal_mode",
    "page_count", "page_size", "schema_version", "user_version",
}  # fmt: skip

Scalar = str | int | float | bool | None
Params = list[Scalar] | dict[str, Scalar]
DatabaseArg = Annotated[str, Field(description="A database name, as list_databases gives it.")]
SqlArg = Annotated[str, Field(description="One SQL statement.", min_length=1)]
ParamsArg = Annotated[
    Params | None,
    Field(description="Values for '?' placeholders (a list) or ':name' placeholders (an object)."),
]
T = TypeVar("T")


class DatabaseEntry(BaseModel):
    name: str
    path: str
    size_bytes: int


class DatabaseList(BaseModel):
    databases: list[DatabaseEntry]


class TableEntry(BaseModel):
    name: str
    type: Literal["table", "view"]


class TableList(BaseModel):
    database: str
    tables: list[TableEntry]
    truncated: bool = Field(
        default=False,
        description=f"True when more than {MAX_TABLES} matched, or their names passed 1.5 MiB.",
    )


class Index(BaseModel):
    name: str
    unique: bool
    origin: str = Field(description="c: CREATE INDEX, u: UNIQUE constraint, pk: PRIMARY KEY.")
    partial: bool
    columns: list[str | None]


class ForeignKey(BaseModel):
    columns: list[str]
    table: str
    references: list[str | None]
    on_update: str
    on_delete: str


class TableDescription(BaseModel):
    database: str
    table: str
    type: Literal["table", "view"]
    columns: list[Column]
    indexes: list[Index]
    foreign_keys: list[ForeignKey]
    truncated: bool = Field(
        default=False,
        description="True when its columns, indexes and foreign keys passed 1.5 MiB; those"
        " that fit are given.",
    )


class Blob(BaseModel):
    base64: str


class QueryResult(BaseModel):
    columns: list[str]
    rows: list[list[str | int | float | Blob | None]]
    truncated: bool = Field(
        description="True when more rows matched than the answer holds: max_rows, or 1.5 MiB."
    )


class ExecuteResult(BaseModel):
    rowcount: int = Field(description="Rows changed; -1 for statements that change no rows.")
    lastrowid: int | None = Field(description="The rowid of the row inserted, if any.")


def build_sqlite_module(paths: Sequence[Path], *, time_limit_s: float = TIME_LIMIT_S) -> FastMCP:
    """The ``sqlite`` module's server over the databases found at ``paths``."""
    databases = _discover(paths)
    mcp = FastMCP("sqlite", mask_error_details=True)

    async def run(database: str, work: Callable[[Path], T], *, reads: bool = True) -> T:
        """Run ``work`` in a worker thread. A read is answered at its deadline even when one
        long step (``printf('%.*c', 2e9, 'a')``) keeps its thread busy past the interrupt: the
        thread ends with that step, and nothing it does then is anyone's answer. A write is
        waited for, so that the answer says whether it was committed."""
        if database not in databases:
            raise ToolError("no SQLite database by that name on this machine; see list_databases")
        try:
            if not reads:
                return await anyio.to_thread.run_sync(work, databases[database])
            with anyio.move_on_after(time_limit_s + LATE_S):
                return await anyio.to_thread.run_sync(
                    work, databases[database], abandon_on_cancel=True
                )
        except sqlite3.Error as exc:
            raise _tool_error(exc, time_limit_s) from None
        raise ToolError(_LATE.format(time_limit_s=time_limit_s))

    def list_databases() -> DatabaseList:
        """The SQLite databases on this machine, by name; start here to query or describe one."""
        entries = [
            DatabaseEntry(name=n, path=str(p), size_bytes=_size(p)) for n, p in databases.items()
        ]
        return DatabaseList(databases=entries)

    async def list_tables(database: DatabaseArg) -> TableList:
        """The tables and views of one SQLite database on this machine."""
        rows, truncated = await run(database, partial(_read, time_limit_s, _list_tables))
        tables = [TableEntry(name=n, type=t) for n, t in rows]
        return TableList(database=database, tables=tables, truncated=truncated)

    async def describe_table(database: DatabaseArg, table: str) -> TableDescription:
        """Columns (type, NOT NULL, default, primary key), indexes and foreign keys of a table
        or view in a SQLite database of this machine; read it before writing a query."""
        found = await run(database, partial(_read, time_limit_s, partial(_describe, table)))
        if found is None:
            raise ToolError("no table or view by that name in that database; see list_tables")
        return TableDescription(database=database, table=table, **found)

    async def query(
        database: DatabaseArg,
        sql: SqlArg,
        params: ParamsArg = None,
        max_rows: Annotated[int, Field(ge=1, le=MAX_ROWS)] = DEFAULT_MAX_ROWS,
    ) -> QueryResult:
        """Run one read-only SQL statement (SELECT, WITH, EXPLAIN) on a SQLite database of
        this machine; returns its columns and up to max_rows rows. Writes are refused."""
        work = partial(_query, sql, params or (), max_rows)
        columns, rows, truncated = await run(database, partial(_read, time_limit_s, work))
        return QueryResult(columns=columns, rows=rows, truncated=truncated)

    async def execute(
        database: DatabaseArg, sql: SqlArg, params: ParamsArg = None
    ) -> ExecuteResult:
        """Change a SQLite database of this machine with one statement (INSERT, UPDATE, DELETE,
        CREATE, ALTER, DROP), committed on success and rolled back on any error."""
        return await run(database, partial(_execute, time_limit_s, sql, params or ()), reads=False)

    for fn, title, hints in (
        (list_databases, "List SQLite databases", READ_ONLY),
        (list_tables, "List SQLite tables", READ_ONLY),
        (describe_table, "Describe a SQLite table", READ_ONLY),
        (query, "Query SQLite (read-only)", READ_ONLY),
        (execute, "Write to SQLite", WRITES),
    ):
        description = " ".join((inspect.getdoc(fn) or "").split())
        tool = Tool.from_function(fn, title=title, description=description, annotations=hints)
        if databases and "database" in tool.parameters.get("properties", {}):
            tool.parameters["properties"]["database"]["enum"] = list(databases)
        mcp.add_tool(tool)
    return mcp


def _discover(paths: Sequence[Path]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for given in paths:
        path = given.expanduser().resolve()
        if path.is_dir():
            files = sorted(
                p for p in path.iterdir() if p.suffix.lower() in SUFFIXES and p.is_file()
            )
        elif path.is_file():
            files = [path]
        else:
            raise ModuleSpecError(f"sqlite path {str(given)!r} is neither a file nor a directory")
        for file in files:
            if found.setdefault(file.stem, file) != file:
                raise ModuleSpecError(
                    f"two SQLite databases are named {file.stem!r} ({found[file.stem]} and "
                    f"{file}); serve them as two assignments"
                )
    return found


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@contextmanager
def _connect(
    path: Path, mode: Literal["ro", "rw"], time_limit_s: float
) -> Iterator[sqlite3.Connection]:
    """A connection whose statements are interrupted ``time_limit_s`` from now, closed after."""
    uri = f"{path.as_uri()}?mode={mode}"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    open_ = threading.Lock()  # held by the interrupt, so that it never meets a closed connection

    def interrupt() -> None:
        with open_:
            if not closed:
                conn.interrupt()

    closed = False
    deadline = threading.Timer(time_limit_s, interrupt)
    deadline.start()
    try:
        # The column and length limits hold for the CREATE statements SQLite parses when it
        # reads the schema too: read it first, or one table of more columns (SQLite allows
        # 2,000) made the whole database "corrupt" to every statement, and one statement
        # longer than a value made every statement's value "too long".
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 0").fetchall()
        conn.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        yield conn
    finally:
        deadline.cancel()
        with open_:
            closed = True
            conn.close()


def _read(time_limit_s: float, work: Callable[[sqlite3.Connection], T], path: Path) -> T:
    """``work`` on a read-only connection, as one of at most ``MAX_READERS`` at a time: a read
    answered at its deadline leaves its thread to finish a long step, outside anyio's count."""
    if not _READERS.acquire(timeout=time_limit_s):
        raise ToolError(_BUSY)
    try:
        with _connect(path, "ro", time_limit_s) as conn:
            conn.execute("PRAGMA query_only = ON")
            conn.set_authorizer(_authorize_read)
            return work(conn)
    finally:
        _READERS.release()


def _list_tables(
    conn: sqlite3.Connection,
) -> tuple[list[tuple[str, Literal["table", "view"]]], bool]:
    """At most ``MAX_TABLES`` names, and no more than the answer's budget holds: a name may be
    as long as a value (1 MiB); whether more matched."""
    cursor = conn.execute(
        "SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"
        " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name LIMIT ?",
        (MAX_TABLES + 1,),
    )
    tables: list[tuple[str, Literal["table", "view"]]] = []
    budget = RowBudget()
    for name, kind in cursor:
        if len(tables) == MAX_TABLES or budget.past([name]) or not budget.admits([name]):
            return tables, True
        tables.append((name, kind))
    return tables, False


def _describe(table: str, conn: sqlite3.Connection) -> dict[str, Any] | None:
    """The table's columns, indexes and foreign keys, in that order, no more than the answer's
    budget holds: index names (a caller with ``execute`` makes as many as it likes) and a view's
    columns may each be as long as a value (1 MiB)."""
    sql = "SELECT type FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?"
    kind = conn.execute(sql, (table,)).fetchone()
    if kind is None:
        return None
    budget = RowBudget()
    described: dict[str, Any] = {"type": kind[0], "columns": [], "indexes": [], "foreign_keys": []}
    for n, t, nn, d, pk in conn.execute(
        'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)', (table,)
    ):
        column = Column(name=n, type=t, notnull=bool(nn), default=d, pk=pk)
        if not budget.admits([column]):
            return {**described, "truncated": True}
        described["columns"].append(column)
    for n, u, o, p in conn.execute(
        'SELECT name, "unique", origin, partial FROM pragma_index_list(?) ORDER BY name', (table,)
    ):
        if budget.past([n]):  # before its columns are read
            return {**described, "truncated": True}
        sql = "SELECT name FROM pragma_index_info(?) ORDER BY seqno"
        columns = [c for (c,) in conn.execute(sql, (n,))]
        index = Index(name=n, unique=bool(u), origin=o, partial=bool(p), columns=columns)
        if not budget.admits([index]):
            return {**described, "truncated": True}
        described["indexes"].append(index)
    keys: dict[int, ForeignKey] = {}
    sql = 'SELECT id, "table", "from", "to", on_update, on_delete FROM pragma_foreign_key_list(?)'
    for key_id, parent, source, target, on_update, on_delete in conn.execute(
        sql + " ORDER BY id, seq", (table,)
    ):
        key = keys.setdefault(
            key_id,
            ForeignKey(
                columns=[], table=parent, references=[], on_update=on_update, on_delete=on_delete
            ),
        )
        key.columns.append(source)
        key.references.append(target)
    for key in keys.values():  # all of them within the CREATE TABLE, a value's 1 MiB
        if not budget.admits([key]):
            return {**described, "truncated": True}
        described["foreign_keys"].append(key)
    return described


def _query(
    sql: str, params: Params | tuple[()], max_rows: int, conn: sqlite3.Connection
) -> tuple[list[str], list[list[Any]], bool]:
    cursor = conn.execute(sql, params)
    columns = [d[0] for d in cursor.description or ()]
    rows: list[list[Any]] = []
    budget = RowBudget()
    for row in cursor:
        if len(rows) == max_rows:
            return columns, rows, True
        if budget.past(row):
            if not rows:
                raise ToolError(TOO_LONG_ROW)
            return columns, rows, True
        cells = [_cell(v) for v in row]
        if not budget.admits(cells):
            if not rows:
                raise ToolError(TOO_LONG_ROW)
            return columns, rows, True
        rows.append(cells)
    return columns, rows, False


def _execute(
    time_limit_s: float, sql: str, params: Params | tuple[()], path: Path
) -> ExecuteResult:
    with _connect(path, "rw", time_limit_s) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.set_authorizer(_authorize_write)
            before = conn.total_changes
            cursor = conn.execute(sql, params)
            for (
                _row
            ) in cursor:  # RETURNING rows: stepped to the end (the change is whole), kept not
                continue
            changed = conn.total_changes - before
            conn.set_authorizer(None)
            conn.execute("COMMIT")
        except BaseException:
            conn.set_authorizer(None)
            conn.rollback()
            raise
        # Python counts a statement's changes by its first word: "WITH … INSERT" is counted here
        rowcount = cursor.rowcount if cursor.rowcount != -1 else (changed or -1)
        return ExecuteResult(rowcount=rowcount, lastrowid=cursor.lastrowid or None)


def _authorize_read(action: int, arg1: str | None, arg2: str | None, *_: str | None) -> int:
    allowed = (
        (action in _READS and not _pointer_function(action, arg2))
        or (action == sqlite3.SQLITE_PRAGMA and _pragma_allowed(arg1, arg2))
        # Asked while SQLite prepares a pragma table such as pragma_table_info(...); the file is
        # open read-only with query_only on, so nothing can be written whatever we answer.
        or (action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master")
    )
    return sqlite3.SQLITE_OK if allowed else sqlite3.SQLITE_DENY


def _authorize_write(action: int, arg1: str | None, arg2: str | None, *_: str | None) -> int:
    refused = (
        action in _NEVER_IN_EXECUTE
        or (action == sqlite3.SQLITE_PRAGMA and not _pragma_allowed(arg1, arg2))
        or _pointer_function(action, arg2)
    )
    return sqlite3.SQLITE_DENY if refused else sqlite3.SQLITE_OK


def _pointer_function(action: int, name: str | None) -> bool:
    return action == sqlite3.SQLITE_FUNCTION and (name or "").lower() in _POINTER_FUNCTIONS


def _pragma_allowed(name: str | None, value: str | None) -> bool:
    return name in _INTROSPECTION_PRAGMAS or (name in _SETTING_PRAGMAS and value is None)


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return Blob(base64=base64.b64encode(value).decode("ascii"))
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no infinities
    return value


def _tool_error(exc: sqlite3.Error, time_limit_s: float) -> ToolError:
    """Word the error from SQLite's error code alone: its message quotes the SQL."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    base = name.split("_")[1] if "_" in name else ""  # SQLITE_CONSTRAINT_UNIQUE: CONSTRAINT
    if isinstance(exc, sqlite3.ProgrammingError):
        text = "send one statement, with one parameter per placeholder ('?' or ':name')"
    elif base == "CONSTRAINT":
        kind = name.removeprefix("SQLITE_CONSTRAINT").lstrip("_").replace("KEY", " KEY")
        text = f"the statement breaks a {kind or 'table'} constraint; nothing was changed"
    elif base == "INTERRUPT":
        text = _LATE.format(time_limit_s=time_limit_s)
    elif str(exc).startswith("too many columns"):  # SQLite's own words, quoting nothing
        text = f"a statement may name at most {MAX_COLUMNS} columns; select fewer"
    else:
        text = _ERRORS.get(base, f"SQLite refused the statement ({name or 'unknown error'})")
    return ToolError(text)


_ERRORS = {
    "AUTH": "statement refused: query only reads (SELECT, WITH, EXPLAIN, introspection PRAGMAs);"
    " execute refuses ATTACH, VACUUM INTO, transaction control, setting PRAGMAs and"
    " fts3_tokenizer",
    "BUSY": "the database is locked by another writer; try again",
    "LOCKED": "the database is locked by another writer; try again",
    "READONLY": "the database file is read-only to this node",
    "CANTOPEN": "the database file cannot be opened",
    "NOTADB": "the file is not a SQLite database",
    "CORRUPT": "the database file is corrupt",
    "TOOBIG": f"a value is longer than this module's limit of {MAX_VALUE_BYTES >> 20} MiB",
    "ERROR": "SQLite could not run the statement: check its syntax and the names it uses",
}
