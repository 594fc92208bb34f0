"""Issue 35 items 9 and 13: every caller of a ``postgres`` module shares the DSN's role, and
PostgreSQL lets a role signal its own role's backends, so one caller ended another's query with
``SELECT pg_terminate_backend(pid)`` inside the read-only transaction; and the privileged-role
check missed function-level grants (``EXECUTE`` on ``pg_read_file``, ``pg_ls_dir``, ``lo_import``
…). Now ``query`` refuses those functions as PostgreSQL's parser reads the statement, and the
module refuses a role that may execute the ones acting outside the transaction, at start (naming
the ``REVOKE``) and at each call (ADR 0047). On the session's real PostgreSQL."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import anyio
import psycopg
import pytest
from fastmcp import Client

from mesh.errors import ModuleSpecError
from mesh.modules.postgres import build_postgres_module
from tests.postgres_server import PostgresServer

pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("postgres")]

DATABASE = "fn_checks"
PRISTINE = "fn_pristine"  # made from template0: PUBLIC's default grants, until a test revokes
DEFAULTS = "fn_defaults"  # made from template0 and left so: PostgreSQL would run the calls
ROLES = ["fn_reader", "fn_granted", "fn_member", "fn_files"]
MARKER = "zq_marker_5521"


@pytest.fixture(scope="module")
def dsns(postgres_server: PostgresServer) -> Iterator[dict[str, str]]:
    """A DSN to ``fn_checks`` (made from template1, revoked as an operator does) for each
    role; ``fn_files`` is a group that ``fn_member`` belongs to."""
    postgres_server.create_database(DATABASE)
    for database in (PRISTINE, DEFAULTS):
        postgres_server.execute(f"CREATE DATABASE {database} TEMPLATE template0")
    for name in ROLES:
        postgres_server.execute(f"CREATE ROLE {name} LOGIN")
    postgres_server.execute("GRANT fn_files TO fn_member")
    try:
        yield {name: postgres_server.dsn(DATABASE, user=name) for name in ROLES}
    finally:
        for database in (DATABASE, PRISTINE, DEFAULTS):
            postgres_server.execute(f"DROP DATABASE {database} WITH (FORCE)")
        for name in ROLES:
            postgres_server.execute(f"DROP ROLE {name}")


async def query(client: Client[Any], sql: str, **args: Any) -> Any:
    return await client.call_tool("query", {"sql": sql, **args}, raise_on_error=False)


def serving_anyway(server: PostgresServer) -> Any:
    """A module on a role that PUBLIC's defaults let end its own role's sessions, served with
    ``--allow-privileged-role``: only ``query``'s own refusal stands between the calls."""
    dsn = server.dsn(DEFAULTS, user="fn_reader")
    return build_postgres_module(dsn, statement_timeout_s=5, allow_privileged_role=True)


def alive(conn: psycopg.Connection[Any]) -> bool:
    try:
        conn.execute("SELECT 1")
    except psycopg.OperationalError:
        return False
    return True


@pytest.mark.parametrize("served", ["revoked", "anyway"])
async def test_one_caller_cannot_end_anothers_query(
    postgres_server: PostgresServer, dsns: dict[str, str], served: str
) -> None:
    """Two callers of one module: the second finds the first's backend and tries to end it;
    it is refused, and the first's query runs to its end — on a role the operator made
    ready, and on one PostgreSQL itself would let do it."""
    if served == "revoked":
        module = build_postgres_module(dsns["fn_reader"], statement_timeout_s=5)
    else:
        module = serving_anyway(postgres_server)
    finished: list[Any] = []
    find = (
        "SELECT pid FROM pg_stat_activity WHERE usename = current_user"
        " AND pid <> pg_backend_pid() AND state = 'active'"
    )
    async with Client(module) as victim, Client(module) as attacker:

        async def victims_query() -> None:
            sql = "SELECT 'finished', pg_sleep(2)"
            finished.append(await query(victim, sql))

        async with anyio.create_task_group() as group:
            group.start_soon(victims_query)
            pids: list[Any] = []
            with anyio.fail_after(5):
                while not pids:
                    await anyio.sleep(0.1)
                    pids = (await query(attacker, find)).structured_content["rows"]
            refused = await query(attacker, f"SELECT pg_terminate_backend({pids[0][0]})")
    assert refused.is_error
    assert "may not call pg_terminate_backend" in str(refused.content)
    assert not finished[0].is_error, finished[0].content
    assert finished[0].structured_content["rows"][0][0] == "finished"


DISGUISES = [
    "SELECT pg_terminate_backend({pid})",
    "SELECT pg_catalog.pg_terminate_backend({pid})",
    'SELECT "pg_terminate_backend"({pid})',
    'SELECT pg_catalog."pg_terminate_backend"({pid})',
    "SELECT PG_TERMINATE_BACKEND({pid})",
    'SELECT U&"pg\\005Fterminate\\005Fbackend"({pid})',
    "SELECT pg_terminate_backend /* a comment */ ({pid})",
    "SELECT * FROM pg_terminate_backend({pid})",
    "SELECT * FROM ROWS FROM (pg_terminate_backend({pid}))",
    "SELECT x FROM (SELECT pg_terminate_backend({pid}) AS x) AS sub",
    "SELECT (SELECT pg_terminate_backend({pid}))",
    "WITH t AS (SELECT pg_terminate_backend({pid})) SELECT * FROM t",
    "SELECT * FROM (VALUES (1)) v, LATERAL (SELECT pg_terminate_backend({pid})) l",
    "SELECT 1 WHERE pg_terminate_backend({pid})",
    "SELECT 1 ORDER BY pg_terminate_backend({pid})",
    "VALUES (pg_terminate_backend({pid}))",
    "SELECT CAST(pg_terminate_backend({pid}) AS text)",
    "SELECT pg_terminate_backend({pid})::text",
    "SELECT ({pid}).pg_terminate_backend",
    "SELECT (t.pid).pg_terminate_backend FROM (SELECT {pid} AS pid) t",
    "SELECT query_to_xml('SELECT pg_terminate_backend({pid})', true, true, '')",
    "SELECT * FROM ts_stat('SELECT to_tsvector(pg_terminate_backend({pid})::text)')",
    "SELECT 1; SELECT pg_terminate_backend({pid})",
]


@pytest.mark.parametrize("disguise", DISGUISES)
async def test_each_disguise_of_the_call_is_refused(
    postgres_server: PostgresServer, dsns: dict[str, str], disguise: str
) -> None:
    """Each form PostgreSQL reads as a call (or runs as SQL given as text) is refused, the
    other session lives on, and the answer names what is not allowed, never the query."""
    with psycopg.connect(postgres_server.dsn(DEFAULTS, user="fn_reader"), autocommit=True) as other:
        pid = other.info.backend_pid
        async with Client(serving_anyway(postgres_server)) as client:
            answer = await query(client, disguise.format(pid=pid) + f" /* {MARKER} */")
        assert alive(other)
    text = str(answer.content)
    assert answer.is_error
    assert MARKER not in text and str(pid) not in text
    assert "may not call" in text or "one statement per call" in text


async def test_a_parameter_cannot_disguise_the_call(
    postgres_server: PostgresServer, dsns: dict[str, str]
) -> None:
    with psycopg.connect(postgres_server.dsn(DEFAULTS, user="fn_reader"), autocommit=True) as other:
        pid = other.info.backend_pid
        async with Client(serving_anyway(postgres_server)) as client:
            listed = await query(client, "SELECT pg_terminate_backend(%s)", params=[pid])
            named = await query(client, "SELECT pg_cancel_backend(%(p)s)", params={"p": pid})
            percent = await query(client, "SELECT 7 %% 4, %s", params=[MARKER])
        assert alive(other)
    assert "may not call pg_terminate_backend" in str(listed.content)
    assert "may not call pg_cancel_backend" in str(named.content)
    assert percent.structured_content["rows"] == [[3, MARKER]]


@pytest.mark.parametrize(
    ("sql", "name"),
    [
        ("SELECT pg_cancel_backend(1)", "pg_cancel_backend"),
        ("SELECT pg_reload_conf()", "pg_reload_conf"),
        ("SELECT pg_rotate_logfile()", "pg_rotate_logfile"),
        ("SELECT set_config('role', 'postgres', true)", "set_config"),
        ("SELECT pg_advisory_lock(1)", "pg_advisory_lock"),
        ("SELECT pg_try_advisory_xact_lock(1)", "pg_try_advisory_xact_lock"),
        ("SELECT lo_import('/etc/hostname')", "lo_import"),
        ("SELECT lo_get(1)", "lo_get"),
        ("SELECT dblink('dbname=postgres', 'SELECT 1')", "dblink"),
        ("SELECT pg_read_file('/etc/hostname')", "pg_read_file"),
        ("SELECT pg_read_binary_file('/etc/hostname')", "pg_read_binary_file"),
        ("SELECT * FROM pg_ls_dir('.')", "pg_ls_dir"),
        ("SELECT * FROM pg_stat_file('.')", "pg_stat_file"),
        ("SELECT pg_logical_emit_message(false, 'a', 'b')", "pg_logical_emit_message"),
    ],
)
async def test_each_family_is_refused_by_name(dsns: dict[str, str], sql: str, name: str) -> None:
    async with Client(build_postgres_module(dsns["fn_reader"])) as client:
        answer = await query(client, f"{sql} /* {MARKER} */")
    assert answer.is_error
    assert f"may not call {name}:" in str(answer.content)
    assert MARKER not in str(answer.content)


async def test_a_deeply_nested_statement_is_refused_and_the_node_lives_on(
    dsns: dict[str, str],
) -> None:
    """A review: pglast's tree of Python objects has no depth bound, and 1+1+… 30,000 deep
    crashed the process (SIGSEGV); the check reads libpg_query's JSON, which bounds its own."""
    async with Client(build_postgres_module(dsns["fn_reader"])) as client:
        deep = await query(client, "SELECT " + "+".join(["1"] * 2_000))
        deeper = await query(client, "SELECT " + "+".join(["1"] * 30_000))
        long = await query(client, "SELECT " + "1," * 50_000 + "1")
        after = await query(client, "SELECT 1")
    assert "nests too deeply" in str(deep.content)
    assert deeper.is_error  # libpg_query's own bound, or the decoder's
    assert any(s in str(deeper.content) for s in ("nests too deeply", "stack depth limit"))
    assert long.is_error, long.content  # past the schema's bound
    assert not after.is_error


async def test_pg_sleep_and_ordinary_functions_still_run(dsns: dict[str, str]) -> None:
    async with Client(build_postgres_module(dsns["fn_reader"])) as client:
        answer = await query(
            client, "SELECT pg_sleep(0.01), upper('a'), current_setting('TimeZone')"
        )
    assert not answer.is_error, answer.content


def revokes_in(message: str) -> list[str]:
    return re.findall(r"REVOKE EXECUTE ON FUNCTION .+? FROM \S+?(?=;|\s\()", message)


def test_publics_default_grants_are_refused_at_start_until_revoked(
    postgres_server: PostgresServer, dsns: dict[str, str]
) -> None:
    """By default PUBLIC may execute pg_terminate_backend: the module refuses to start,
    naming the REVOKE; run as the operator would, the module starts."""
    dsn = postgres_server.dsn(PRISTINE, user="fn_reader")
    with pytest.raises(ModuleSpecError) as refused:
        build_postgres_module(dsn)
    message = str(refused.value)
    assert "pg_catalog.pg_terminate_backend(" in message
    assert "pg_catalog.pg_cancel_backend(" in message
    assert "--allow-privileged-role" in message
    assert dsn not in message and str(postgres_server.port) not in message
    statements = revokes_in(message)
    assert statements and all(s.endswith("FROM PUBLIC") for s in statements)
    for statement in statements:
        postgres_server.execute(statement, database=PRISTINE)
    build_postgres_module(dsn)


@pytest.mark.parametrize(
    "function",
    [
        "pg_read_file(text)",
        "pg_read_binary_file(text)",
        "pg_ls_dir(text)",
        "pg_stat_file(text)",
        "lo_import(text)",
        "lo_export(oid, text)",
        "pg_reload_conf()",
    ],
)
@pytest.mark.parametrize("grantee", ["fn_granted", "fn_files"])
def test_a_role_granted_a_function_is_refused_at_start(
    postgres_server: PostgresServer, dsns: dict[str, str], function: str, grantee: str
) -> None:
    """Explicitly, or through a role it is a member of (``fn_member`` of ``fn_files``)."""
    login = "fn_granted" if grantee == "fn_granted" else "fn_member"
    grant = f"EXECUTE ON FUNCTION {function} TO {grantee}"
    postgres_server.execute(f"GRANT {grant}", database=DATABASE)
    try:
        with pytest.raises(ModuleSpecError) as refused:
            build_postgres_module(dsns[login])
    finally:
        postgres_server.execute(f"REVOKE {grant.replace(' TO ', ' FROM ')}", database=DATABASE)
    name = function.partition("(")[0]
    assert revokes_in(str(refused.value)) == [
        f"REVOKE EXECUTE ON FUNCTION pg_catalog.{name}({_identity(postgres_server, function)})"
        f" FROM {grantee}"
    ]
    build_postgres_module(dsns[login])  # revoked: served


def _identity(server: PostgresServer, function: str) -> str:
    with psycopg.connect(server.dsn(DATABASE)) as conn:
        row = conn.execute(
            "SELECT pg_get_function_identity_arguments(%s::regprocedure)", [function]
        ).fetchone()
    assert row is not None
    return str(row[0])


async def test_a_function_grant_after_start_or_in_another_database_refuses_the_call(
    postgres_server: PostgresServer, dsns: dict[str, str]
) -> None:
    """Function privileges change, and are each database's own: each call checks them."""
    async with Client(build_postgres_module(dsns["fn_granted"])) as client:
        postgres_server.execute("GRANT EXECUTE ON FUNCTION pg_ls_dir(text) TO fn_granted",
                                database=DATABASE)  # fmt: skip
        try:
            granted = await query(client, "SELECT 1")
        finally:
            postgres_server.execute("REVOKE EXECUTE ON FUNCTION pg_ls_dir(text) FROM fn_granted",
                                    database=DATABASE)  # fmt: skip
        served = await query(client, "SELECT 1")
        postgres_server.execute(
            "GRANT EXECUTE ON FUNCTION pg_terminate_backend(integer, bigint) TO PUBLIC",
            database=PRISTINE,
        )
        elsewhere = await query(client, "SELECT 1", database=PRISTINE)
    for answer in (granted, elsewhere):
        assert answer.is_error
        assert "refuses to serve" in str(answer.content)
    assert not served.is_error, served.content


def test_the_flag_serves_a_role_granted_a_function_with_a_warning(
    postgres_server: PostgresServer, dsns: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    grant = "EXECUTE ON FUNCTION pg_stat_file(text) TO fn_granted"
    postgres_server.execute(f"GRANT {grant}", database=DATABASE)
    try:
        with caplog.at_level(logging.WARNING, logger="meshnav.node"):
            build_postgres_module(dsns["fn_granted"], allow_privileged_role=True)
    finally:
        postgres_server.execute(f"REVOKE {grant.replace(' TO ', ' FROM ')}", database=DATABASE)
    assert any("DANGER" in r.getMessage() for r in caplog.records)
