"""The ``sqlite`` module: the machine's own SQLite databases (SPEC §6).

Each configured path is a database file or a directory of them (``*.db``, ``*.sqlite``,
``*.sqlite3``), found once when the module is built. A database is named by its file stem; two
files with one stem are refused at build rather than discovered later as a surprise, and the names
go into each tool's ``database`` enum so that an agent reading ``describe`` sees its choices. An
answer names a database, never its file: the node's paths are its own.

``query`` is read-only by construction rather than by parsing SQL: the file is opened with
``mode=ro``, ``PRAGMA query_only`` is on, and an authorizer lets a statement only read (SELECT,
WITH, EXPLAIN, introspection PRAGMAs). ``execute`` runs one statement in its own transaction with
ATTACH (and so ``VACUUM INTO``), transaction control and setting PRAGMAs refused. A query's rows
stop at ``MAX_ANSWER_BYTES`` of values as well as at ``max_rows``, with ``truncated`` set. The
``fts3_tokenizer`` function is refused: it hands out, and takes, raw pointers.

Every statement runs in a worker process under a time limit (``mesh.modules.sqlite_worker``):
a timer there interrupts it at its deadline, and one step that runs on past the interrupt (a
function call: ``printf`` with a precision of two billion loops for seconds, 127 times a row) is
ended with its process ``LATE_S`` later, so the time limit bounds the CPU a statement costs the
node, not only the wait for its answer. A write is killed so only before it commits: from then on
it is waited for, so that the answer says whether the change was made. At most ``MAX_AT_ONCE``
statements run at once on the node, at most ``MAX_PER_CALLER`` of them one principal's
(``mesh.modules.turns``). An error says what to do, then passes on SQLite's own message about the
caller's statement, bounded and without the node's file paths.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.tools import Tool
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from mesh.errors import ModuleSpecError
from mesh.modules.columns import Column
from mesh.modules.sqlite_worker import MAX_TABLES
from mesh.modules.sqlite_workers import NODE_WORKERS, Workers
from mesh.modules.turns import NODE_TURNS, Turns

__all__ = ["Workers", "build_sqlite_module"]

SUFFIXES = frozenset({".db", ".sqlite", ".sqlite3"})
TIME_LIMIT_S = 5.0  # per statement, query and execute alike
DEFAULT_MAX_ROWS = 100
MAX_ROWS = 1000
_BUSY = (
    "this machine's SQLite statements are all busy (at most {per_caller} of one caller at once);"
    " try again shortly"
)

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)

Scalar = str | int | float | bool | None
Params = list[Scalar] | dict[str, Scalar]
DatabaseArg = Annotated[str, Field(description="A database name, as list_databases gives it.")]
SqlArg = Annotated[str, Field(description="One SQL statement.", min_length=1)]
ParamsArg = Annotated[
    Params | None,
    Field(description="Values for '?' placeholders (a list) or ':name' placeholders (an object)."),
]


class DatabaseEntry(BaseModel):
    name: str
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


def build_sqlite_module(
    paths: Sequence[Path],
    *,
    time_limit_s: float = TIME_LIMIT_S,
    turns: Turns = NODE_TURNS,
    workers: Workers | None = None,
) -> FastMCP:
    """The ``sqlite`` module's server over the databases found at ``paths``; ``turns`` and
    ``workers`` are the node's unless given."""
    databases = _discover(paths)
    workers = workers or NODE_WORKERS
    busy = _BUSY.format(per_caller=turns.per_caller)
    mcp = FastMCP("sqlite", mask_error_details=True)

    async def run(database: str, op: str, *, writes: bool = False, **job: Any) -> Any:
        """Run one job in a worker process, as one of the caller's turns."""
        if database not in databases:
            raise ToolError("no SQLite database by that name on this machine; see list_databases")
        job |= {"op": op, "path": str(databases[database]), "time_limit_s": time_limit_s}
        async with turns.turn(time_limit_s, busy):
            # never abandoned: the exchange ends by itself, at the latest LATE_S past the limit
            return await anyio.to_thread.run_sync(workers.run, job, time_limit_s, writes)

    def list_databases() -> DatabaseList:
        """The SQLite databases on this machine, by name; start here to query or describe one."""
        entries = [DatabaseEntry(name=n, size_bytes=_size(p)) for n, p in databases.items()]
        return DatabaseList(databases=entries)

    async def list_tables(database: DatabaseArg) -> TableList:
        """The tables and views of one SQLite database on this machine."""
        rows, truncated = await run(database, "list_tables")
        tables = [TableEntry(name=n, type=t) for n, t in rows]
        return TableList(database=database, tables=tables, truncated=truncated)

    async def describe_table(database: DatabaseArg, table: str) -> TableDescription:
        """Columns (type, NOT NULL, default, primary key), indexes and foreign keys of a table
        or view in a SQLite database of this machine; read it before writing a query."""
        found = await run(database, "describe_table", table=table)
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
        answer = await run(database, "query", sql=sql, params=params, max_rows=max_rows)
        columns, rows, truncated = answer
        return QueryResult(columns=columns, rows=rows, truncated=truncated)

    async def execute(
        database: DatabaseArg, sql: SqlArg, params: ParamsArg = None
    ) -> ExecuteResult:
        """Change a SQLite database of this machine with one statement (INSERT, UPDATE, DELETE,
        CREATE, ALTER, DROP), committed on success and rolled back on any error."""
        answer = await run(database, "execute", writes=True, sql=sql, params=params)
        return ExecuteResult(**answer)

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
