"""Which functions the ``postgres`` module keeps from its callers (ADR 0047).

Every caller of a module shares the DSN's role, and PostgreSQL lets a role act on its own role's
sessions, so what the read-only transaction does not stop one caller could do to another. Two
lists, by what a function reaches:

- ``OUTSIDE``: acts outside the transaction, on other sessions or the server itself — signals or
  ends a backend, reloads or rotates the configuration, backs up, promotes, resets statistics,
  writes WAL, reads or lists the server's files, connects to a server (``dblink``). The module's
  role must not be able to ``EXECUTE`` any of them: checked at start and at each call
  (``postgres_role``), whatever route would call them — a view, a function, a cast.
- ``REFUSED``: those, and what a ``query`` has no need of that is executable by every role —
  changing the session's settings (``set_config``: its role, its timeout), advisory locks (seen by
  every session of the database), large objects (``lo_*``), replication slots and logical
  messages, and functions that run SQL given as text, which this check cannot read
  (``query_to_xml``, ``ts_stat``, ``ts_rewrite``). The ``query`` tool refuses a statement that
  names one.

``pg_sleep`` is allowed: the statement timeout and the node's turns bound it as they bound any
slow query. A name matches whatever its schema, case or quoting, called as ``f(x)``, ``FROM
f(x)`` or in the field notation ``(x).f``, which PostgreSQL also reads as a call.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from pglast.parser import ParseError, parse_sql_json

from mesh.modules.answers import database_message

__all__ = ["OUTSIDE_FUNCTIONS", "StatementRefused", "check_statement"]

_OUTSIDE_NAMES = (
    "pg_cancel_backend",
    "pg_terminate_backend",
    "pg_log_backend_memory_contexts",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_switch_wal",
    "pg_create_restore_point",
    "pg_backup_start",
    "pg_backup_stop",
    "pg_start_backup",
    "pg_stop_backup",
    "pg_promote",
    "pg_wal_replay_pause",
    "pg_wal_replay_resume",
    "pg_logical_emit_message",
    "pg_log_standby_snapshot",
    "pg_stat_statements_reset",
    "pg_read_file",
    "pg_read_binary_file",
    "pg_stat_file",
    "pg_current_logfile",
    "pg_logdir_ls",
    "lo_import",
    "lo_export",
)
#: Prefixes of ``OUTSIDE`` families: statistics resets, replication origins, the server's
#: directories (``pg_ls_dir``, ``pg_ls_waldir`` …), adminpack's file writes, dblink.
_OUTSIDE_PREFIXES = ("pg_stat_reset", "pg_replication_origin_", "pg_ls_", "pg_file_", "dblink")
_REFUSED_NAMES = (
    "set_config",
    "pg_rotate_logfile_old",  # checks for a superuser itself
    "loread",
    "lowrite",
    "ts_stat",
    "ts_rewrite",
    "pg_import_system_collations",
    "pg_nextoid",
)
_REFUSED_PREFIXES = (
    "pg_advisory_",
    "pg_try_advisory_",
    "lo_",
    "query_to_xml",
    "cursor_to_xml",
    "pg_logical_",
    "pg_create_",  # replication slots
    "pg_drop_replication_slot",
    "pg_copy_",  # replication slots
    "pg_replication_slot_",
    "pg_sync_replication_slots",
    "pg_restore_",  # planner statistics (PostgreSQL 18)
    "pg_clear_",
)

#: The built-in (or C) functions of ``OUTSIDE``, as a query of their oids: a function a caller
#: made by those names in a schema of its own is not one of them.
OUTSIDE_FUNCTIONS = f"""
SELECT p.oid FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
WHERE (p.pronamespace = 'pg_catalog'::regnamespace OR l.lanname IN ('c', 'internal'))
  AND (p.proname IN ({", ".join(f"'{name}'" for name in _OUTSIDE_NAMES)})
       OR {" OR ".join(f"starts_with(p.proname, '{prefix}')" for prefix in _OUTSIDE_PREFIXES)})"""

_NOT_ALLOWED = (
    "query may not call {name}: a query may not signal or end sessions, administer the server,"
    " read its files, change the session's settings, take advisory locks, use large objects,"
    " connect elsewhere or run SQL given as text (ADR 0047)"
)
_ONE_STATEMENT = "send one statement per call"
_TOO_DEEP = "the statement nests too deeply: write it with fewer nested expressions"
_UNPARSED = (
    "PostgreSQL could not parse the statement: query takes one SELECT, WITH, VALUES or TABLE"
    " statement"
)


class StatementRefused(Exception):
    """The statement is not run; its message names what is not allowed, never the statement."""


def refused_name(name: str) -> bool:
    """Whether a function of this name (any schema, any case) is one ``query`` refuses."""
    name = name.lower()
    return (
        name in _OUTSIDE_NAMES
        or name in _REFUSED_NAMES
        or name.startswith(_OUTSIDE_PREFIXES)
        or name.startswith(_REFUSED_PREFIXES)
    )


def check_statement(sql: str) -> None:
    """Raise ``StatementRefused`` unless ``sql`` — the whole text sent to the server — is one
    statement that names none of the refused functions, as PostgreSQL's own parser reads it.

    The tree comes as libpg_query's JSON (its own output bounds its stack), decoded by Python's
    decoder (which bounds its own), and is walked without recursion: a deeply nested statement
    is refused, never a crash of the node (pglast's tree of objects has no such bound)."""
    try:
        tree = json.loads(parse_sql_json(sql))
    except ParseError as exc:  # PostgreSQL's own words, about the caller's statement
        said = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
        raise StatementRefused(
            f"{_UNPARSED} (PostgreSQL: {database_message(said)})" if said else _UNPARSED
        ) from None
    except RecursionError:
        raise StatementRefused(_TOO_DEEP) from None
    statements = tree.get("stmts") or [] if isinstance(tree, dict) else []
    if len(statements) != 1:
        raise StatementRefused(_ONE_STATEMENT if statements else _UNPARSED)
    for name in _called_names(statements[0]):
        if refused_name(name):
            raise StatementRefused(_NOT_ALLOWED.format(name=name.lower()))


def _called_names(root: object) -> Iterator[str]:
    """Each name the statement may call a function by: a call's own name (``funcname``), and
    a field name after the first (``t.f``, ``(x).f``), which PostgreSQL reads as ``f(t)`` when
    no column has it."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(item for item in node if isinstance(item, list | dict))
            continue
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if isinstance(value, list):
                if key in _NAMES_FROM:
                    yield from _strings(value, _NAMES_FROM[key])
                stack.append(value)
            elif isinstance(value, dict):
                stack.append(value)


#: Where a name that may call a function stands, and from which item of the list.
_NAMES_FROM = {"funcname": -1, "fields": 1, "indirection": 0}


def _strings(items: object, start: int) -> Iterator[str]:
    """The names among ``items[start:]``: libpg_query's ``{"String": {"sval": name}}``."""
    for item in items[start:] if isinstance(items, list) else ():
        name = item.get("String", {}).get("sval") if isinstance(item, dict) else None
        if isinstance(name, str) and name:
            yield name
