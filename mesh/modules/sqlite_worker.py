"""The process a ``sqlite`` module's statement runs in, and what it runs there (SPEC §6).

SQLite checks for an interrupt between its virtual machine's steps, and one step — a function
call — can run long: ``printf('%.*c', 2147483647, 'a')`` loops two billion times however short
the value it may make, and a row may call it 127 times (a review: a query answered "past its time
limit" at 5.6 s while the node's thread burned CPU for 45 s more). No thread can be stopped in
Python, so every statement runs in a worker process the node kills at its deadline
(``mesh.modules.sqlite_workers.Workers``): the time limit bounds the work, not just the wait.

A worker is ``python -I -m mesh.modules.sqlite_worker`` with no environment but the descriptor of
its lifeline (the node's own holds its token), killed when the node ends, however it ends. It
reads one job at a time from its stdin and answers on its stdout, each a JSON message framed as
``multiprocessing.connection`` frames them: ``started`` when it takes a job, ``committing``
before an ``execute`` commits (from then on the node waits for it: the answer must say whether
the change was made), then ``{"ok": RESULT}`` or ``{"error": TEXT}``.

Inside, each job opens its own connection: ``mode=ro`` with ``PRAGMA query_only`` and
an authorizer that lets a statement only read for ``query``, ``describe_table`` and
``list_tables``; one statement in its own transaction for ``execute``. A timer interrupts the
statement at its time limit, so that a long scan ends between steps with the worker kept. No
value may be longer than ``MAX_VALUE_BYTES`` (``SQLITE_LIMIT_LENGTH``) and no statement may name
more than ``MAX_COLUMNS`` columns, so one row is bounded before it is built. Errors are SQLite's
own message for the caller's own statement (it names the table or the token it could not read),
at most ``MAX_MESSAGE_CHARS`` of it and with the node's file paths taken out, after a sentence of
ours that says what to do.
"""

from __future__ import annotations

import base64
import json
import math
import os
import signal
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal, TypeVar

from mesh.modules.answers import TOO_LONG_ROW, RowBudget, database_message

__all__ = ["LATE", "LIFELINE", "MAX_COLUMNS", "MAX_TABLES", "MAX_VALUE_BYTES", "main"]

BUSY_TIMEOUT_S = 2.0  # how long a write waits for another writer's lock
MAX_VALUE_BYTES = 1 << 20  # the longest string or blob a statement may read or make
#: The most columns a statement may name or return: with ``MAX_VALUE_BYTES``, what one row can
#: hold before anything measures it (SQLite allows 2,000: a row of 2 GB).
MAX_COLUMNS = 128
#: The most tables and views ``list_tables`` names (``truncated`` past it), as PostgreSQL's.
MAX_TABLES = 1000
_POINTER_FUNCTIONS = frozenset({"fts3_tokenizer"})
LATE = "the statement ran past its time limit of {time_limit_s:g} s and was stopped"

_READS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, 33})
_NEVER_IN_EXECUTE = frozenset({sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, 22, 32})
# 33: SQLITE_RECURSIVE, 22: SQLITE_TRANSACTION, 32: SQLITE_SAVEPOINT
#: Not ``database_list``: it answers where the node keeps the file, and names no more than
#: ``main`` where ATTACH is refused.
_INTROSPECTION_PRAGMAS = {
    "table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
    "foreign_key_list", "foreign_key_check", "collation_list", "function_list",
    "module_list", "pragma_list", "compile_options", "integrity_check", "quick_check",
}  # fmt: skip
_SETTING_PRAGMAS = {  # may be read, never set
    "application_id", "auto_vacuum", "data_version", "encoding", "freelist_count", "journal_mode",
    "page_count", "page_size", "schema_version", "user_version",
}  # fmt: skip

Scalar = str | int | float | bool | None
Params = list[Scalar] | dict[str, Scalar]
T = TypeVar("T")


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
    """``work`` on a read-only connection."""
    with _connect(path, "ro", time_limit_s) as conn:
        conn.execute("PRAGMA query_only = ON")
        conn.set_authorizer(_authorize_read)
        return work(conn)


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
        column = {"name": n, "type": t, "notnull": bool(nn), "default": d, "pk": pk}
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
        index = {"name": n, "unique": bool(u), "origin": o, "partial": bool(p), "columns": columns}
        if not budget.admits([index]):
            return {**described, "truncated": True}
        described["indexes"].append(index)
    keys: dict[int, dict[str, Any]] = {}
    sql = 'SELECT id, "table", "from", "to", on_update, on_delete FROM pragma_foreign_key_list(?)'
    for key_id, parent, source, target, on_update, on_delete in conn.execute(
        sql + " ORDER BY id, seq", (table,)
    ):
        key = keys.setdefault(
            key_id,
            {"columns": [], "table": parent, "references": [], "on_update": on_update,
             "on_delete": on_delete},
        )  # fmt: skip
        key["columns"].append(source)
        key["references"].append(target)
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
                raise Refused(TOO_LONG_ROW)
            return columns, rows, True
        cells = [_cell(v) for v in row]
        if not budget.admits(cells):
            if not rows:
                raise Refused(TOO_LONG_ROW)
            return columns, rows, True
        rows.append(cells)
    return columns, rows, False


def _execute(
    time_limit_s: float,
    sql: str,
    params: Params | tuple[()],
    path: Path,
    committing: Callable[[], None],
) -> dict[str, int | None]:
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
            committing()
            conn.execute("COMMIT")
        except BaseException:
            conn.set_authorizer(None)
            conn.rollback()
            raise
        # Python counts a statement's changes by its first word: "WITH … INSERT" is counted here
        rowcount = cursor.rowcount if cursor.rowcount != -1 else (changed or -1)
        return {"rowcount": rowcount, "lastrowid": cursor.lastrowid or None}


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
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no infinities
    return value


def _error_text(exc: sqlite3.Error, time_limit_s: float, path: Path, params: Any = ()) -> str:
    """What to do, worded from SQLite's error code, then SQLite's own message about the caller's
    statement: bounded, and without the node's file paths."""
    name = getattr(exc, "sqlite_errorname", None) or ""
    base = name.split("_")[1] if "_" in name else ""  # SQLITE_CONSTRAINT_UNIQUE: CONSTRAINT
    if isinstance(exc, sqlite3.ProgrammingError):
        text = "send one statement, with one parameter per placeholder ('?' or ':name')"
    elif base == "CONSTRAINT":
        kind = name.removeprefix("SQLITE_CONSTRAINT").lstrip("_").replace("KEY", " KEY")
        text = f"the statement breaks a {kind or 'table'} constraint; nothing was changed"
    elif base == "INTERRUPT":
        return LATE.format(time_limit_s=time_limit_s)
    elif str(exc).startswith("too many columns"):
        text = f"a statement may name at most {MAX_COLUMNS} columns; select fewer"
    else:
        text = _ERRORS.get(base, f"SQLite refused the statement ({name or 'unknown error'})")
    values = params.values() if isinstance(params, dict) else params or ()
    said = database_message(str(exc), {str(path): path.stem, str(path.parent): "."}, values)
    return f"{text} (SQLite: {said})" if said else text


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


class Refused(Exception):
    """A job refused with a message of ours."""


def _work(job: dict[str, Any], committing: Callable[[], None]) -> Any:
    path, time_limit_s = Path(job["path"]), float(job["time_limit_s"])
    op, params = job["op"], job.get("params") or ()
    if op == "execute":
        return _execute(time_limit_s, job["sql"], params, path, committing)
    work: Callable[[sqlite3.Connection], Any]
    if op == "list_tables":
        work = _list_tables
    elif op == "describe_table":
        work = partial(_describe, job["table"])
    elif op == "query":
        work = partial(_query, job["sql"], params, int(job["max_rows"]))
    else:
        raise Refused("unknown job")
    return _read(time_limit_s, work, path)


def _answer(job: dict[str, Any], committing: Callable[[], None]) -> dict[str, Any]:
    try:
        return {"ok": _work(job, committing)}
    except sqlite3.Error as exc:
        limit, path = float(job["time_limit_s"]), Path(job["path"])
        return {"error": _error_text(exc, limit, path, job.get("params"))}
    except Refused as exc:
        return {"error": str(exc)}
    except Exception:  # MemoryError, RecursionError: the statement's, not the worker's end
        return {"error": "SQLite could not run the statement on this machine"}


def _end_with_the_node() -> None:
    """Be killed when the node ends, whichever of its threads started this worker: a statement
    in one long step would otherwise run on for its minutes with nobody to answer.

    The node holds the write end of a pipe whose read end this worker got (``LIFELINE``); a
    process's descriptors are closed when it ends however it ends, so the read sees the end of
    the pipe then, and not before. ``PR_SET_PDEATHSIG`` was used before: it fires when the
    *thread* that started the worker ends, and the node starts workers from threads that end
    while the worker serves others (ADR 0052)."""
    lifeline = int(os.environ[LIFELINE])

    def watch() -> None:
        while os.read(lifeline, 1):
            pass  # the node never writes: only the end of the pipe comes
        os.kill(os.getpid(), signal.SIGKILL)  # mid-commit too: SQLite's journal undoes it

    threading.Thread(target=watch, name="meshnav-lifeline", daemon=True).start()


#: The environment variable naming the descriptor of the node's lifeline (its read end).
LIFELINE = "MESHNAV_NODE_LIFELINE"


def main() -> None:
    """Serve jobs from stdin until it closes."""
    _end_with_the_node()
    jobs, answers = Connection(0, writable=False), Connection(1, readable=False)
    sys.stdout = sys.stderr  # nothing but answers on fd 1

    def send(message: dict[str, Any]) -> None:
        answers.send_bytes(json.dumps(message).encode())

    while True:
        try:
            job = json.loads(jobs.recv_bytes())
        except EOFError:
            return
        send({"started": True})
        send(_answer(job, lambda: send({"committing": True})))


if __name__ == "__main__":
    main()
