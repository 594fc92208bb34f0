"""A real, throwaway PostgreSQL server for tests: ``initdb`` + ``pg_ctl`` on a free loopback port.

PostgreSQL refuses to run as root, so under root (CI containers) the cluster belongs to a system
user, ``meshnav-test``, created on first use, and every server command runs through ``runuser``.
That user cannot enter root's 0700 pytest directories, so under root the cluster lives in a fresh
directory under the system temp dir instead of ``tmp_dir`` (the server log is copied into
``tmp_dir`` when it stops, for a failing test to show). Trust authentication on loopback and the
socket only: the server is reachable from this machine alone and lives as long as the test needs.

When no PostgreSQL server binaries are installed this raises rather than skips: the tests that use
it are part of the suite (``make test`` installs ``postgresql``).

Once it answers, the server is made ready for the ``postgres`` module as an operator makes theirs
(docs/operating.md, ADR 0047): ``PUBLIC`` may no longer execute the functions that end other
sessions or write WAL outside a transaction, in ``postgres`` and in ``template1`` (so in every
database a test makes).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

__all__ = [
    "MODULE_REVOKE",
    "PostgresServer",
    "PostgresUnavailable",
    "find_bindir",
    "start_postgres",
]

TEST_USER = "meshnav-test"
START_TIMEOUT_S = 60
#: What an operator runs, as a superuser in each database a ``postgres`` module reads, before the
#: module serves a role (the refusal names it; here written for any server version).
MODULE_REVOKE = """
DO $$
DECLARE f regprocedure;
BEGIN
    FOR f IN SELECT p.oid FROM pg_proc p WHERE p.pronamespace = 'pg_catalog'::regnamespace
             AND p.proname IN ('pg_cancel_backend', 'pg_terminate_backend',
                               'pg_logical_emit_message')
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END $$"""


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries, or the server would not start."""


@dataclass
class PostgresServer:
    """A running server; ``stop()``, or leaving its ``with`` block, stops and removes it."""

    port: int
    socket_dir: Path
    data_dir: Path
    base_dir: Path
    log_file: Path
    bindir: Path
    tmp_dir: Path
    owner: str | None
    superuser: str = "postgres"

    def dsn(self, database: str = "postgres", user: str | None = None) -> str:
        """A libpq URL for ``database`` over TCP on 127.0.0.1."""
        return f"postgresql://{user or self.superuser}@127.0.0.1:{self.port}/{database}"

    def execute(self, sql: str, params: Sequence[Any] = (), database: str = "postgres") -> None:
        """Run one statement as the superuser, in autocommit (so CREATE DATABASE works)."""
        with psycopg.connect(self.dsn(database), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql, params or None)

    def create_database(self, name: str, *setup: str) -> str:
        """Create database ``name``, run ``setup`` statements in it, and return its DSN."""
        self.execute(f'CREATE DATABASE "{name}"')
        for statement in setup:
            self.execute(statement, database=name)
        return self.dsn(name)

    def __enter__(self) -> PostgresServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def pause(self) -> None:
        """Stop the server but keep its data, as an outage would (``resume()`` brings it back)."""
        _run(self, ["pg_ctl", "-D", str(self.data_dir), "-m", "fast", "-w", "stop"])

    def resume(self) -> None:
        options = (
            f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        _run(self, ["pg_ctl", "-D", str(self.data_dir), "-l", str(self.log_file), "-w",
                    "-t", str(START_TIMEOUT_S), "-o", options, "start"])  # fmt: skip
        _wait_ready(self)

    def stop(self) -> None:
        if self.data_dir.exists():
            _run(self, ["pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"], False)
        with contextlib.suppress(OSError):
            shutil.copyfile(self.log_file, self.tmp_dir / "postgres.log")
        shutil.rmtree(self.base_dir, ignore_errors=True)


def start_postgres(tmp_dir: Path) -> PostgresServer:
    """Start a fresh server; ``stop()`` it, or use it as ``with start_postgres(d) as server``."""
    bindir = find_bindir()
    owner = _ensure_test_user() if os.geteuid() == 0 else None
    tmp_dir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="meshnav-pg-")) if owner else tmp_dir / "postgres"
    base.mkdir(parents=True, exist_ok=True)
    if owner:
        user = pwd.getpwnam(owner)
        os.chown(base, user.pw_uid, user.pw_gid)
    server = PostgresServer(
        port=0,
        socket_dir=base / "sock",
        data_dir=base / "data",
        base_dir=base,
        log_file=base / "postgres.log",
        bindir=bindir,
        tmp_dir=tmp_dir,
        owner=owner,
    )
    try:
        _run(server, ["mkdir", "-p", str(server.socket_dir)])
        _run(server, ["initdb", "-D", str(server.data_dir), "-U", server.superuser, "-A", "trust",
                      "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"])  # fmt: skip
        for attempt in range(3):  # a free port can be taken between choosing and binding
            server.port = _free_port()
            options = (
                f"-p {server.port} -k {server.socket_dir} -c listen_addresses=127.0.0.1"
                " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
            )
            start = ["pg_ctl", "-D", str(server.data_dir), "-l", str(server.log_file),
                     "-w", "-t", str(START_TIMEOUT_S), "-o", options, "start"]  # fmt: skip
            if _run(server, start, check=False) == 0:
                break
            if attempt == 2:
                log = server.tmp_dir / "postgres.log"  # where stop() keeps it
                raise PostgresUnavailable(f"PostgreSQL did not start; see {log}")
        _wait_ready(server)
        for database in ("template1", "postgres"):
            server.execute(MODULE_REVOKE, database=database)
    except BaseException:
        server.stop()
        raise
    return server


def find_bindir() -> Path:
    """Where ``initdb`` and ``pg_ctl`` are: ``pg_config --bindir``, Debian's versioned
    directories (newest first), then ``PATH``."""
    candidates: list[Path] = []
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, check=True, text=True)
        candidates.append(Path(out.stdout.strip()))
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted((Path(p) for p in versions), key=_version, reverse=True)
    if initdb := shutil.which("initdb"):
        candidates.append(Path(initdb).resolve().parent)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "pg_ctl").is_file():
            return bindir
    raise PostgresUnavailable(
        "no PostgreSQL server binaries (initdb, pg_ctl) found; install them with "
        "`apt-get install postgresql` (make test does this)"
    )


def _version(bindir: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in bindir.parent.name.split(".") if part.isdigit())


def _ensure_test_user() -> str:
    for _ in range(10):  # parallel test workers may race to create it
        try:
            pwd.getpwnam(TEST_USER)
            return TEST_USER
        except KeyError:
            subprocess.run(
                ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                 TEST_USER], capture_output=True, check=False,
            )  # fmt: skip
            time.sleep(0.2)
    raise PostgresUnavailable(f"could not create the system user {TEST_USER!r} (useradd)")


def _run(server: PostgresServer, argv: list[str], check: bool = True) -> int:
    program = server.bindir / argv[0]
    command = [str(program) if program.exists() else argv[0], *argv[1:]]
    if server.owner:
        command = ["runuser", "-u", server.owner, "--", *command]
    done = subprocess.run(command, cwd=server.base_dir, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise PostgresUnavailable(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()}")
    return done.returncode


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_ready(server: PostgresServer) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            with psycopg.connect(server.dsn(), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
