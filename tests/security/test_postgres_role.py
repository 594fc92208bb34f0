"""Issue 26 item 4: a ``postgres`` module on a privileged role is command execution with no
confirmation (``query``, annotated read-only, ran ``pg_read_file`` and ``COPY … TO PROGRAM`` as
a superuser), and its password had to be on the node's command line. Now the module refuses a
privileged role unless the operator allows it (a warning), warns of a password on the command
line without repeating it, and takes ``PGPASSWORD``/``PGPASSFILE`` from the node's environment
for itself alone. On the session's real PostgreSQL."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client

from mesh.errors import ModuleSpecError
from mesh.modules import ModuleOptions, build_module, parse_module_spec, take_libpq_secrets
from tests.harness import MeshHarness, free_port, mcp_client, tool_result
from tests.postgres_server import PostgresServer

pytestmark = [pytest.mark.postgres, pytest.mark.xdist_group("postgres")]

PASSWORD = "pw-7f3a-canary"
ECHO = Path(__file__).resolve().parents[1] / "mesh" / "fixtures" / "echo_server.py"


@pytest.fixture(scope="module")
def roles(postgres_server: PostgresServer) -> Iterator[dict[str, str]]:
    """A DSN for each kind of role: ordinary, granted a privileged role directly, by
    inheritance, able only to SET ROLE to a superuser, and one whose password is checked."""
    made = ["sec_plain", "sec_files", "sec_group", "sec_inherits", "sec_sets", "sec_pw"]
    for name in made:
        postgres_server.execute(f"CREATE ROLE {name} LOGIN")
    postgres_server.execute("GRANT pg_read_server_files TO sec_files")
    postgres_server.execute("GRANT pg_execute_server_program TO sec_group")
    postgres_server.execute("GRANT sec_group TO sec_inherits")
    postgres_server.execute("ALTER ROLE sec_sets NOINHERIT")
    postgres_server.execute("GRANT postgres TO sec_sets")
    postgres_server.execute(f"ALTER ROLE sec_pw PASSWORD '{PASSWORD}'")
    hba = postgres_server.data_dir / "pg_hba.conf"
    before = hba.read_text()
    hba.write_text(f"host all sec_pw 127.0.0.1/32 scram-sha-256\n{before}")
    postgres_server.execute("SELECT pg_reload_conf()")
    try:
        yield {name: postgres_server.dsn("postgres", user=name) for name in made}
    finally:
        hba.write_text(before)
        postgres_server.execute("SELECT pg_reload_conf()")
        for name in reversed(made):
            postgres_server.execute(f"DROP ROLE {name}")


def build(dsn: str, **options: Any) -> Any:
    return build_module(parse_module_spec(f"postgres:{dsn}"), ModuleOptions(**options))


async def list_databases(server: Any) -> Any:
    async with Client(server) as client:
        return await client.call_tool("list_databases", {}, raise_on_error=False)


@pytest.mark.parametrize("role", ["superuser", "sec_files", "sec_inherits", "sec_sets"])
def test_a_privileged_role_is_refused_at_start(
    role: str, roles: dict[str, str], postgres_server: PostgresServer
) -> None:
    dsn = postgres_server.dsn("postgres") if role == "superuser" else roles[role]
    with pytest.raises(ModuleSpecError) as refused:
        build(dsn)
    message = str(refused.value)
    assert "--allow-privileged-role" in message
    assert "pg_read_server_files" in message
    assert dsn not in message and str(postgres_server.port) not in message  # the DSN stays out


async def test_an_ordinary_role_is_served(roles: dict[str, str]) -> None:
    answer = await list_databases(build(roles["sec_plain"]))
    assert not answer.is_error
    assert "postgres" in {d["name"] for d in answer.structured_content["databases"]}


async def test_the_flag_lets_a_privileged_role_through_with_a_warning(
    postgres_server: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="meshnav.node"):
        server = build(postgres_server.dsn("postgres"), allow_privileged_role=True)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("DANGER" in r.getMessage() and "privileged" in r.getMessage() for r in warnings)
    assert not (await list_databases(server)).is_error


async def test_a_role_made_privileged_after_start_is_refused_at_its_next_call(
    roles: dict[str, str], postgres_server: PostgresServer
) -> None:
    server = build(roles["sec_plain"])
    postgres_server.execute("GRANT pg_write_server_files TO sec_plain")
    try:
        answer = await list_databases(server)
    finally:
        postgres_server.execute("REVOKE pg_write_server_files FROM sec_plain")
    assert answer.is_error
    assert "refuses to serve: its role is privileged" in str(answer.content)
    assert not (await list_databases(server)).is_error


def test_a_password_on_the_command_line_is_warned_of_without_repeating_it(
    roles: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    dsn = roles["sec_pw"].replace("sec_pw@", f"sec_pw:{PASSWORD}@")
    with caplog.at_level(logging.WARNING, logger="meshnav.node"):
        build(dsn)
    said = [r.getMessage() for r in caplog.records]
    assert any("holds a password" in m and "PGPASSWORD" in m for m in said)
    assert not any(PASSWORD in m for m in said)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="meshnav.node"):
        build(roles["sec_plain"])
    assert not any("holds a password" in r.getMessage() for r in caplog.records)


async def test_pgpassword_and_pgpassfile_from_the_nodes_environment_work(
    roles: dict[str, str], postgres_server: PostgresServer, tmp_path: Path
) -> None:
    without = await list_databases(build(roles["sec_pw"]))
    assert "refused the module's credentials" in str(without.content)
    assert "PGPASSWORD" in str(without.content)
    answer = await list_databases(build(roles["sec_pw"], libpq_secrets={"PGPASSWORD": PASSWORD}))
    assert not answer.is_error, answer.content
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{postgres_server.port}:*:sec_pw:{PASSWORD}\n")
    passfile.chmod(0o600)
    answer = await list_databases(
        build(roles["sec_pw"], libpq_secrets={"PGPASSFILE": str(passfile)})
    )
    assert not answer.is_error, answer.content


def test_the_node_takes_the_secrets_out_of_its_environment() -> None:
    environ = {"PGPASSWORD": PASSWORD, "PGPASSFILE": "/x/pgpass", "PGHOST": "db", "HOME": "/h"}
    assert take_libpq_secrets(environ) == {"PGPASSWORD": PASSWORD, "PGPASSFILE": "/x/pgpass"}
    assert environ == {"PGHOST": "db", "HOME": "/h"}


def test_the_node_refuses_a_superuser_dsn_naming_the_flag(postgres_server: PostgresServer) -> None:
    """``meshnav node serve`` with a superuser DSN ends at start, saying what to do."""
    done = subprocess.run(
        [sys.executable, "-m", "meshnav", "node", "serve", "--name", "pgx",
         "--navigator", "http://127.0.0.1:9", "--listen", f"127.0.0.1:{free_port()}",
         "--module", f"postgres:{postgres_server.dsn('postgres')}"],
        env={**os.environ, "MESHNAV_TOKEN": "t" * 40},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "--allow-privileged-role" in done.stderr


async def test_a_node_reads_pgpassword_for_its_postgres_module_alone(
    mesh: MeshHarness, roles: dict[str, str]
) -> None:
    """End to end: the node's postgres module logs in with PGPASSWORD from the node's
    environment, and the node's stdio module's subprocess does not see it."""
    mesh.env["PGPASSWORD"] = PASSWORD
    try:
        await anyio.to_thread.run_sync(
            lambda: mesh.start_node(
                "pgsec", [f"postgres:{roles['sec_pw']}", f"stdio:echo={sys.executable} {ECHO}"]
            )
        )
    finally:
        del mesh.env["PGPASSWORD"]
    async with mcp_client(mesh.navigator_url, mesh.agent_token) as client:  # type: ignore[attr-defined]
        listed = await client.call_tool_mcp("call", {"address": "pgsec/postgres/list_databases"})
        asked = {"address": "pgsec/echo/env", "args": {"name": "PGPASSWORD"}}
        first = await client.call_tool_mcp("call", asked)  # env declares no read-only hint
        env = await client.call_tool_mcp(
            "call", {**asked, "confirm": tool_result(first)["confirm"]}
        )
    assert not listed.is_error, listed.content
    assert tool_result(env) == {"value": None}
    log = (mesh.root / "node-pgsec.log").read_text()
    assert PASSWORD not in log
