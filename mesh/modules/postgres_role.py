"""Whether the ``postgres`` module's role acts outside SQL's read-only transaction (ADR 0029).

The read-only transaction stops writes through SQL; functions that act outside it
(``pg_terminate_backend``, ``dblink``, ``pg_read_file``, ``COPY … TO PROGRAM``) are bounded only
by the role's privileges. So the module refuses a privileged role (``PRIVILEGED_ROLE``: a
superuser, a role that may create roles, or one that may act as ``pg_execute_server_program``,
``pg_read_server_files`` or ``pg_write_server_files``, directly, by inheritance or by ``SET
ROLE``) — at start when the server answers, and again at the start of every call, since grants
change — unless the operator allows it (``--allow-privileged-role``), which is logged as a
warning.
"""

from __future__ import annotations

import logging

import psycopg

from mesh.errors import ModuleSpecError
from mesh.modules.postgres_errors import tool_error

__all__ = ["PRIVILEGED_CALL", "PRIVILEGED_ROLE", "check_role_at_start", "warn_privileged"]

logger = logging.getLogger("meshnav.node")

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
PRIVILEGED_CALL = (
    "this machine's PostgreSQL module refuses to serve: its role is privileged; the machine's"
    " operator must give it a role that may only read"
)


def check_role_at_start(
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
            tool_error(exc, 0),
        )
        return False
    if not (row and row[0]):
        return False
    if not allow_privileged_role:
        raise ModuleSpecError(f"postgres assignment {role}: {_PRIVILEGED_START}")
    warn_privileged(role)
    return True


def warn_privileged(role: str) -> None:
    logger.warning(
        "DANGER: postgres assignment %s serves a privileged role (--allow-privileged-role): %s;"
        " every caller granted its query tool can do so",
        role,
        _PRIVILEGED,
    )
