"""What the ``postgres`` module answers when PostgreSQL refuses: what to do, from the SQLSTATE,
then PostgreSQL's own primary message about the caller's statement, bounded and without its
parameters or paths (``answers.database_message``). A connection error's text names the host and
user, so it is worded by us alone."""

from __future__ import annotations

from collections.abc import Iterable

import psycopg
from fastmcp.exceptions import ToolError

from mesh.modules.answers import database_message

__all__ = ["PARAMS_MISFIT", "tool_error"]


def tool_error(
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
        return ToolError(PARAMS_MISFIT)
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
PARAMS_MISFIT = (
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
