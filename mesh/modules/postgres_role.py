"""Whether the ``postgres`` module's role acts outside SQL's read-only transaction (ADR 0029,
ADR 0047).

The read-only transaction stops writes through SQL; functions that act outside it
(``pg_terminate_backend``, ``dblink``, ``pg_read_file``, ``COPY … TO PROGRAM``) are bounded only
by the role's privileges. So the module refuses a privileged role (``PRIVILEGED_ROLE``: a
superuser, a role that may create roles, or one that may act as ``pg_execute_server_program``,
``pg_read_server_files`` or ``pg_write_server_files``; or one that may ``EXECUTE`` one of
``postgres_functions.OUTSIDE_FUNCTIONS`` — by a grant to it, to ``PUBLIC`` or to a role it is a
member of — each directly, by inheritance or by ``SET ROLE``) — at start when the server answers,
and again at the start of every call, since grants change and function privileges are each
database's own — unless the operator allows it (``--allow-privileged-role``), which is logged as
a warning. At start, a role refused for its functions alone is told the ``REVOKE`` to run: by
default ``PUBLIC`` may execute ``pg_cancel_backend``, ``pg_terminate_backend`` and
``pg_logical_emit_message``.
"""

from __future__ import annotations

import logging

import psycopg

from mesh.errors import ModuleSpecError
from mesh.modules.postgres_errors import tool_error
from mesh.modules.postgres_functions import OUTSIDE_FUNCTIONS

__all__ = ["PRIVILEGED_CALL", "PRIVILEGED_ROLE", "check_role_at_start", "warn_privileged"]

logger = logging.getLogger("meshnav.node")

#: Whether the connection's login role is, or may become, a role that acts outside SQL's
#: read-only transaction: runs programs, reads or writes the server's files, makes roles, or may
#: execute a function that signals other sessions, administers the server or reads its files.
_MEMBER_OF = "SELECT r.oid FROM pg_roles r WHERE pg_has_role(session_user, r.oid, 'MEMBER')"
_PRIVILEGED_ATTRIBUTES = f"""
SELECT EXISTS (
    SELECT 1 FROM pg_roles r WHERE r.oid IN ({_MEMBER_OF})
      AND (r.rolsuper OR r.rolcreaterole OR r.rolname IN (
          'pg_execute_server_program', 'pg_read_server_files', 'pg_write_server_files')))"""
_OUTSIDE_EXECUTABLE = f"""
SELECT EXISTS (
    SELECT 1 FROM ({_MEMBER_OF}) m, ({OUTSIDE_FUNCTIONS}) f
    WHERE has_function_privilege(m.oid, f.oid, 'EXECUTE'))"""
PRIVILEGED_ROLE = f"SELECT ({_PRIVILEGED_ATTRIBUTES}) OR ({_OUTSIDE_EXECUTABLE})"
#: Each grantee (PUBLIC, or a role the login role is a member of) whose EXECUTE on one of
#: ``OUTSIDE_FUNCTIONS`` reaches the login role, with those functions: one REVOKE each.
_REVOKES = f"""
SELECT grantee, string_agg(function, ', ' ORDER BY function) FROM (
    SELECT DISTINCT
        CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(a.grantee)) END
            AS grantee,
        format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid))
            AS function
    FROM ({OUTSIDE_FUNCTIONS}) f JOIN pg_proc p ON p.oid = f.oid
    JOIN pg_namespace n ON n.oid = p.pronamespace,
    aclexplode(COALESCE(p.proacl, acldefault('f', p.proowner))) a
    WHERE a.privilege_type = 'EXECUTE'
      AND (a.grantee = 0 OR a.grantee IN ({_MEMBER_OF}))) granted
GROUP BY grantee ORDER BY grantee"""
_PRIVILEGED = (
    "the postgres module's role is a superuser, may create roles, or may act as"
    " pg_execute_server_program, pg_read_server_files or pg_write_server_files, so a read-only"
    " query could run programs and read or write the server's files"
)
_PRIVILEGED_START = (
    _PRIVILEGED + ": give the module a role that may only read (GRANT pg_read_all_data), or"
    " start the node with --allow-privileged-role to serve it anyway"
)
_FUNCTIONS_START = (
    "the postgres module's role may execute functions that act outside its read-only"
    " transaction (end other sessions, administer the server, read its files): as a superuser,"
    " in each database the module reads and in template1, run {revokes} (or take the module's"
    " role out of a role named there), or start the node with --allow-privileged-role to serve"
    " it anyway"
)
PRIVILEGED_CALL = (
    "this machine's PostgreSQL module refuses to serve: its role is privileged, or may execute"
    " functions that act outside a read-only transaction in this database; the machine's"
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
            attributes = conn.execute(_PRIVILEGED_ATTRIBUTES).fetchone()
            revokes = [] if attributes and attributes[0] else conn.execute(_REVOKES).fetchall()
    except psycopg.Error as exc:
        logger.warning(
            "postgres assignment %s: its role cannot be checked now (%s); each call checks it",
            role,
            tool_error(exc, 0),
        )
        return False
    if not (attributes and attributes[0]) and not revokes:
        return False
    if not allow_privileged_role:
        if revokes:
            statements = "; ".join(
                f"REVOKE EXECUTE ON FUNCTION {functions} FROM {grantee}"
                for grantee, functions in revokes
            )
            raise ModuleSpecError(
                f"postgres assignment {role}: {_FUNCTIONS_START.format(revokes=statements)}"
            )
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
