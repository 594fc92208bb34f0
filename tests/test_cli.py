"""The command line on the registry directly (SPEC §7, §11, §13): what the first administrator
runs before any navigator exists. ``tests/e2e/test_cli.py`` runs the same commands through a
navigator."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from meshnav.cli import app, main, spread_values
from meshnav.client import navigator_base
from meshnav.serve import listening_socket, serve_navigator
from registry import HEAD_REVISION
from tests.harness import free_port, free_ports, page_server, stop


@pytest.fixture
def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``meshnav ARGS`` on a fresh SQLite registry, with no navigator in the environment."""
    for variable in ("MESHNAV_NAVIGATOR_URL", "MESHNAV_TOKEN", "MESHNAV_DATABASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    database = f"sqlite:///{tmp_path / 'registry.db'}"
    runner = CliRunner()

    def run(*arguments: str, code: int = 0) -> Any:
        result = runner.invoke(app, [*arguments, "--database", database])
        assert result.exit_code == code, result.output
        return json.loads(result.stdout) if "--json" in arguments and code == 0 else result

    made = run("migrate", "--json")
    assert (made["revision"], made["created"]) == (HEAD_REVISION, True)
    return run


def test_options_written_with_several_values_take_them(invoke: Any) -> None:
    """SPEC §13 writes ``--scopes S...``: ``--scopes a b`` was "unexpected extra argument"."""
    invoke("principal", "add", "bob", "--scopes", "mesh:admin", "mesh:node", "--json")
    invoke("principal", "add", "eve", "--scopes", "ops:a,ops:b", "--scopes", "ops:c")
    scopes = {p["name"]: p["scopes"] for p in invoke("principal", "list", "--json")}
    assert sorted(scopes["bob"]) == ["mesh:admin", "mesh:node"]
    assert sorted(scopes["eve"]) == ["ops:a", "ops:b", "ops:c"]
    row = invoke("grant", "deny", "bob", "db1/*/*", "--scopes", "ops:x", "ops:y", "--json")
    assert sorted(row["scopes"]) == ["ops:x", "ops:y"]
    first = invoke("grant", "allow", "--scopes", "ops:z", "bob", "db2/*/*", "--json")
    assert (first["principal"], first["target"], first["scopes"]) == ("bob", "db2/*/*", ["ops:z"])
    invoke("principal", "add", "--scopes", "mesh:node", "carl")


def test_further_values_get_their_own_option() -> None:
    several = frozenset({"--scopes"})
    assert spread_values(["bob", "--scopes", "a", "b", "--json"], several) == [
        *["bob", "--scopes", "a", "--scopes", "b", "--json"]
    ]
    assert spread_values(["--scopes=a", "b"], several) == ["--scopes=a", "b"]
    assert spread_values(["--scopes"], several) == ["--scopes"]  # Click says it lacks a value
    # an argument still to come is not a value: scripts that put options first keep working
    written = ["--scopes", "ops:x", "bob", "db1/*/*"]
    assert spread_values(written, several, positionals=2) == written
    assert spread_values(["bob", "t", "--scopes", "a", "b"], several, positionals=2) == [
        *["bob", "t", "--scopes", "a", "--scopes", "b"]
    ]
    machine = ["--machine", "db1", "bob", "--scopes", "a", "b"]
    assert spread_values(machine, several, valued=frozenset({"--machine"}), positionals=1) == [
        *["--machine", "db1", "bob", "--scopes", "a", "--scopes", "b"]
    ]


def test_principals_and_grants_on_the_registry_print_json(invoke: Any) -> None:
    made = invoke("principal", "add", "alice", "--scopes", "mesh:admin", "--json")
    assert made["principal"] == "alice"
    assert made["token"].startswith("mnv_")
    rotated = invoke("principal", "rotate", "alice", "--json")
    assert rotated["principal"] == "alice"
    assert rotated["token"] != made["token"]

    row = invoke("grant", "allow", "alice", "db1/*/*", "--json")
    assert (row["effect"], row["target"]) == ("allow", "db1/*/*")
    assert invoke("grant", "check", "alice", "db1/sqlite/query", "--json")["allowed"] is True
    assert [grant["id"] for grant in invoke("grant", "list", "--json")] == [row["id"]]

    assert invoke("grant", "revoke", str(row["id"]), "--json") == {
        "grant": row["id"],
        "revoked": True,
    }
    assert invoke("grant", "check", "alice", "db1/sqlite/query", "--json")["allowed"] is False
    assert invoke("principal", "revoke", "alice", "--json") == {
        "principal": "alice",
        "revoked": True,
    }
    listed = {entry["name"]: entry for entry in invoke("principal", "list", "--json")}
    assert "token" not in json.dumps(listed)  # only hashes are kept, and never printed
    assert listed["alice"]["revoked"] is True


def test_a_seat_is_placed_on_the_registry_directly_and_a_bad_name_refused(invoke: Any) -> None:
    """The operator's act a node's ``--seat`` needs first (ADR 0032), as bootstrap.sh runs it."""
    placed = invoke("seat", "place", "notes", "web1", "notes", "--json")
    assert placed == {"seat": "mesh/notes", "machine": "web1", "role": "notes"}
    again = invoke("seat", "place", "notes", "web1", "notes")
    assert again.stdout == "mesh/notes placed on web1/notes\n"
    refused = invoke("seat", "place", "notes", "mesh", "notes", code=1)
    assert refused.stderr.count("\n") == 1
    assert refused.stderr.startswith("meshnav: ")


def test_principal_list_is_a_table_and_json_with_json(invoke: Any) -> None:
    """Every listing prints a table by default and JSON with ``--json``; ``principal list``
    printed JSON either way."""
    invoke("principal", "add", "alice", "--scopes", "mesh:admin")
    invoke("principal", "add", "node-db1", "--scopes", "mesh:node", "--machine", "db1")
    invoke("principal", "revoke", "node-db1")
    table = invoke("principal", "list").stdout
    # piped (as here), a table is tab-separated rows, its header first
    assert table.splitlines()[0].split("\t") == ["name", "scopes", "machine", "expires", "status"]
    assert "alice" in table and "mesh:admin" in table and "revoked" in table
    with pytest.raises(ValueError):
        json.loads(table)
    assert [row["name"] for row in invoke("principal", "list", "--json")] == ["alice", "node-db1"]


def test_migrate_is_safe_to_repeat(invoke: Any, tmp_path: Path) -> None:
    shown = f"sqlite:///{tmp_path.resolve() / 'registry.db'}"
    again = {"revision": HEAD_REVISION, "database": shown, "created": False}
    assert invoke("migrate", "--json") == again
    assert f"the registry at {shown} is at the newest schema" in invoke("migrate").stdout


def test_migrate_names_a_relative_registry_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite:///tmp/x.db`` is ``./tmp/x.db``: migrate made it there and said only "registry
    is at the newest schema", and the operator went looking in /tmp (ADR 0036)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MESHNAV_DATABASE_URL", raising=False)
    made = CliRunner().invoke(app, ["migrate", "--database", "sqlite:///tmp/x.db"])
    assert made.exit_code == 0, made.output
    shown = f"sqlite:///{tmp_path.resolve() / 'tmp' / 'x.db'}"
    assert made.stdout.startswith(f"made a new registry at {shown},")
    assert "holds no principals: meshnav principal add" in made.stdout
    again = CliRunner().invoke(app, ["migrate", "--database", "sqlite:///tmp/x.db", "--json"])
    assert json.loads(again.stdout) == {
        "revision": HEAD_REVISION,
        "database": shown,
        "created": False,
    }


def test_a_postgresql_registry_is_named_without_its_password() -> None:
    from registry import shown_url

    shown = shown_url("postgresql://meshnav:s3cret-pw@db.example:5432/meshnav")
    assert "s3cret-pw" not in shown
    assert shown.startswith("postgresql://meshnav:") and shown.endswith("@db.example:5432/meshnav")


def test_an_unknown_grant_is_one_line_on_stderr_and_a_non_zero_exit(invoke: Any) -> None:
    result = invoke("grant", "revoke", "999", code=1)
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("meshnav: ")


def test_each_spec_setting_has_a_flag_on_the_navigator(monkeypatch: pytest.MonkeyPatch) -> None:
    """SPEC §11: each of its MESHNAV_* settings that the navigator reads has a flag, and the flag
    wins over the environment (settings beyond §11 — JWT, allowed hosts — are environment only)."""
    seen: dict[str, Any] = {}

    async def serve(overrides: dict[str, Any], *, stdio: bool = False) -> None:
        seen.update(overrides, stdio=stdio)

    monkeypatch.setenv("MESHNAV_CALL_DEADLINE_S", "30")
    arguments = [
        "navigator",
        "serve",
        "--listen",
        "127.0.0.1:7799",
        "--database",
        "sqlite:///x.db",
        "--token",
        "mnv_x",
        "--call-deadline",
        "2.5",
        "--heartbeat",
        "3",
        "--stdio",
    ]
    result = CliRunner().invoke(app, arguments, obj=serve)  # in place of the real server
    assert result.exit_code == 0, result.output
    assert seen == {
        "listen": "127.0.0.1:7799",
        "database_url": "sqlite:///x.db",
        "token": "mnv_x",
        "call_deadline_s": 2.5,
        "heartbeat_s": 3.0,
        "stdio": True,
    }


def test_an_unreachable_navigator_is_one_line_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.delenv("MESHNAV_NAVIGATOR_URL", raising=False)
    result = CliRunner().invoke(app, ["search", "tables", "--navigator", url, "--token", "mnv_x"])
    assert result.exit_code == 1
    assert result.stderr == f"meshnav: cannot reach the navigator at {url}\n"


def _one_line(result: Any) -> str:
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("meshnav: ") and result.stderr.count("\n") == 1
    return str(result.stderr)


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["principal", "add", "Bad Name!"], "invalid_arguments"),
        (["principal", "add", ".."], "invalid_arguments"),
        (["principal", "add", "hank", "--machine", "BAD_M"], "invalid_address"),
        (["principal", "add", "hank", "--scopes", "mesh\\admin"], "invalid_arguments"),
        (["principal", "add", "hank", "--scopes", "s" * 257], "invalid_arguments"),
        (["principal", "revoke", "nobody"], "not_found"),
        (["grant", "check", "nobody", "db1/sqlite/query"], "not_found"),
    ],
)
def test_the_registry_directly_keeps_the_admin_apis_rules(
    invoke: Any, arguments: list[str], said: str
) -> None:
    """With no navigator, the command line still refuses what the admin API refuses, in the
    API's words: the registry never holds a principal the API would not have made."""
    assert _one_line(invoke(*arguments, code=1)).startswith(f"meshnav: {said}: ")
    assert invoke("principal", "list", "--json") == []


@pytest.mark.parametrize("days", ["0", "-1"])
def test_an_expiry_out_of_range_is_refused_in_the_options_words(invoke: Any, days: str) -> None:
    """The option's own range, not the API's body (``/expiresDays``), and nothing is made."""
    result = invoke("principal", "add", "hank", "--expires", days, code=2)
    assert "'--expires'" in result.output and "expiresDays" not in result.output
    assert invoke("principal", "list", "--json") == []


def test_the_registry_directly_takes_no_scope_outside_the_grammar(invoke: Any) -> None:
    line = _one_line(invoke("grant", "deny", "*", "db9/*/*", "--scopes", "ops\x00", code=1))
    assert line.startswith("meshnav: invalid_arguments: ") and "ops" not in line
    assert invoke("grant", "list", "--json") == []


@pytest.mark.parametrize("grant_id", ["9223372036854775808", "99999999999999999999", "2147483648"])
def test_a_grant_id_past_the_column_is_not_found_on_the_registry_directly(
    invoke: Any, grant_id: str
) -> None:
    """The admin API answers ``not_found`` for a grant id past the registry's integer column
    (ADR 0013); with no navigator, SQLite's driver raised ``OverflowError``: a traceback."""
    assert _one_line(invoke("grant", "revoke", grant_id, code=1)) == (
        "meshnav: not_found: No such grant.\n"
    )
    body = json.loads(invoke("grant", "revoke", grant_id, "--json", code=1).stderr)
    assert (body["error"], body["status"]) == ("not_found", 404)


def test_a_bad_address_to_grant_check_is_one_line(invoke: Any) -> None:
    invoke("principal", "add", "alice")
    for address in ("BAD", "db1/sqlite", "db1/*/*"):
        assert "invalid_address" in _one_line(invoke("grant", "check", "alice", address, code=1))


def test_names_from_the_registry_are_drawn_as_text_not_markup(invoke: Any) -> None:
    """A grant's principal is any string; Rich must not read "[/]" as a closing tag."""
    assert "for [/]" in invoke("grant", "allow", "[/]", "ext4/*/*", "--force").stdout
    assert "for [red]x" in invoke("grant", "allow", "[red]x", "ext4/*/*", "--force").stdout
    listed = invoke("grant", "list").stdout
    assert "[/]" in listed and "[red]x" in listed


def test_an_error_stays_on_one_line_however_long(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich wraps at 80 columns when stderr is not a terminal; scripts read the first line."""
    monkeypatch.delenv("MESHNAV_NAVIGATOR_URL", raising=False)
    url = "http://127.0.0.1:9/" + "a-long-path/" * 12
    result = CliRunner().invoke(app, ["search", "tables", "--navigator", url, "--token", "mnv_x"])
    assert len(_one_line(result)) > 120


@pytest.mark.parametrize(
    ("arguments", "said", "hidden"),
    [
        (["mesh", "--token", ""], "(--token or MESHNAV_TOKEN) is missing", None),
        (["search", "x", "--token", ""], "(--token or MESHNAV_TOKEN) is missing", None),
        (["search", "x", "--token", "t", "--navigator", "notaurl"], "http:// or https://", None),
        (["search", "x", "--token", "t", "--navigator", "ftp://x"], "http:// or https://", None),
        (
            ["search", "x", "--token", "t", "--navigator", "http://[::1"],
            "http:// or https://",
            None,
        ),
        (
            ["search", "x", "--token", "t", "--navigator", "http://127.0.0.1:99999"],
            "port 1-65535",
            None,
        ),
        (
            ["grant", "list", "--token", "t", "--navigator", "http://127.0.0.1:99999"],
            "port 1-65535",
            None,
        ),
        (
            ["search", "x", "--token", "t", "--navigator", "http://u:secretpw@127.0.0.1:9"],
            "cannot reach the navigator at http://127.0.0.1:9",
            "secretpw",
        ),
        (
            ["principal", "list", "--token", "", "--navigator", "http://x"],
            "(--token or MESHNAV_TOKEN) is missing",
            None,
        ),
        (
            ["register", "m1", "r", "--endpoint", "http://x/mcp", "--tools-file", "t.json"],
            "--endpoint URL or --tools-file FILE, not both",
            None,
        ),
        (["register", "m1", "r", "--token", "t"], "--endpoint URL or --tools-file FILE\n", None),
        (
            ["register", "m1", "r", "--tools-file", "/bin/sh", "--token", "t"],
            "the tools file is not JSON",
            None,
        ),
        (
            ["principal", "list", "--database", "mysql://u:secretpw@x/db"],
            "The database URL is not one the registry can use",
            "secretpw",
        ),
        (["principal", "list", "--database", "notaurl"], "sqlite:///PATH or postgresql://", None),
        (
            ["principal", "list", "--database", "postgresql://u:secretpw@h:abc/db"],
            "sqlite:///PATH or postgresql://",
            "secretpw",
        ),
        (
            ["register", "m1", "r", "--tools-file", "/nonexistent/t.json", "--token", "t"],
            "cannot read the tools file: no such file or directory",
            None,
        ),
    ],
)
def test_what_reaches_the_navigator_is_checked_first(
    monkeypatch: pytest.MonkeyPatch, arguments: list[str], said: str, hidden: str | None
) -> None:
    for variable in ("MESHNAV_NAVIGATOR_URL", "MESHNAV_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    line = _one_line(CliRunner().invoke(app, arguments))
    assert said in line
    assert hidden is None or hidden not in line


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["navigator", "serve", "--listen", "notahostport"], "listen: expected HOST:PORT"),
        (["navigator", "serve", "--listen", "127.0.0.1:99999"], "listen: expected HOST:PORT"),
        (["navigator", "serve", "--listen", "::1:7700"], "IPv6 host in brackets"),
        (
            ["navigator", "serve", "--listen", "127.0.0.1:{port}", "--database", "bogus://x"],
            "registry",
        ),
        (
            [
                "node",
                "serve",
                "--name",
                "n1",
                "--module",
                "node",
                "--listen",
                "bad",
                "--token",
                "t",
            ],
            "listen",
        ),
        (
            [
                "node",
                "serve",
                "--name",
                "n1",
                "--module",
                "sqlite:/nonexistent/a.db",
                "--token",
                "t",
            ],
            "sqlite",
        ),
        (["demo", "--listen", "bad"], "--listen"),
        (["demo", "--listen", "127.0.0.1:65534"], "the nodes take the next three ports"),
        (
            ["navigator", "serve", "--listen", "127.0.0.1:{port}", "--node-ca", "/nonexistent"],
            "MESHNAV_NODE_CA",
        ),
    ],
)
def test_servers_refuse_bad_settings_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, arguments: list[str], said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    for variable in ("MESHNAV_DATABASE_URL", "MESHNAV_LISTEN", "MESHNAV_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    port = str(free_port())
    line = _one_line(CliRunner().invoke(app, [a.replace("{port}", port) for a in arguments]))
    assert said in line


def test_a_server_whose_port_is_taken_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        database = f"sqlite:///{tmp_path / 'r.db'}"
        for arguments in (
            ["navigator", "serve", "--listen", f"127.0.0.1:{port}", "--database", database],
            ["demo", "--listen", f"127.0.0.1:{port}", "--data", str(tmp_path / "demo")],
        ):
            line = _one_line(CliRunner().invoke(app, arguments))
            assert f"cannot listen on 127.0.0.1:{port}" in line
        # the demo is run with no flags: the line names the one that moves it
        assert "give the demo other ports with --listen HOST:PORT" in line
        nodes = CliRunner().invoke(app, [*arguments[:2], f"127.0.0.1:{port - 1}", *arguments[3:]])
        assert "give the demo other ports with --listen HOST:PORT" in _one_line(nodes)
    assert not (tmp_path / "demo" / "demo.token").exists()  # nothing made before the port


async def test_the_servers_socket_answers_without_waiting_for_delayed_acks() -> None:
    """asyncio sets TCP_NODELAY on the connections of a socket made with its protocol named;
    without it, every small answer of a served socket waited ~40 ms for the client's ACK."""
    nodelay: list[int] = []

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = writer.get_extra_info("socket")
        nodelay.append(connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    with listening_socket("127.0.0.1", 0) as bound:
        server = await asyncio.start_server(accepted, sock=bound)
        async with server:
            _, writer = await asyncio.open_connection(*bound.getsockname())
            while not nodelay:
                await asyncio.sleep(0.01)
            writer.close()
    assert nodelay == [1]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["grant", "revoke", "abc"], "Invalid value for 'grant_id'"),
        (["search", "x", "--limit", "0"], "Invalid value for '--limit'"),
        (["bogus"], "No such command 'bogus'."),
    ],
)
def test_a_usage_error_is_one_line_too(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    said: str,
) -> None:
    """Typer draws usage errors as a boxed usage text; SPEC §13 says one line."""
    monkeypatch.setattr("sys.argv", ["meshnav", *arguments])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"meshnav: {said}") and captured.err.count("\n") == 1
    assert "--help)" in captured.err


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:7700", "http://127.0.0.1:7700/mcp", "http://127.0.0.1:7700/mcp/"]
)
def test_the_mcp_url_the_demo_prints_is_taken_for_the_navigators(url: str) -> None:
    """It answered HTTP 404 (".../mcp/mcp") with nothing to say why."""
    assert navigator_base(url, "mnv_x")[0] == "http://127.0.0.1:7700"


def test_with_json_an_error_is_its_body_as_json(invoke: Any) -> None:
    """A script reads the code (and a confirm token) as a field, not from a line of prose."""
    result = invoke("principal", "revoke", "nobody", "--json", code=1)
    assert result.stdout == ""
    body = json.loads(result.stderr)
    assert (body["error"], body["status"]) == ("not_found", 404)
    plain = invoke("principal", "revoke", "nobody", code=1)
    assert plain.stderr.startswith("meshnav: not_found: ")


def test_commands_that_do_not_walk_load_no_mcp_client_or_server() -> None:
    """Principals, grants and the admin API's commands are the operator's everyday ones: loading
    FastMCP, the server and the search index for them tripled their start (about 5 s to 1.7 s
    measured on a loaded two-core machine). Only ``mesh``, ``search``, ``describe`` and ``call``
    need an MCP client; they import ``meshnav.walker`` when they run."""
    probe = (
        "import sys, meshnav.cli, meshnav.access, meshnav.client, meshnav.render\n"
        "heavy = ('fastmcp', 'mcp', 'numpy', 'navigator.access.authentication', 'navigator.search', "
        "'navigator.mcp.server')\n"
        "print(sorted(name for name in heavy if name in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert loaded.stdout.strip() == "[]"


def test_the_registry_directly_must_exist_a_mistyped_url_makes_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``principal list`` on a mistyped ``--database`` printed ``[]`` and made a registry there
    (``principal add`` an administrator in it); ``meshnav migrate`` makes registries. The line
    names the registry it looked for by its absolute path: a relative one is the usual slip."""
    monkeypatch.chdir(tmp_path)
    shown = f"sqlite:///{tmp_path.resolve() / 'typo' / 'meshnav.db'}"
    for command in (
        ["principal", "list"],
        ["principal", "add", "alice"],
        ["grant", "list"],
        ["grant", "allow", "*", "db1/*/*"],
    ):
        result = CliRunner().invoke(app, [*command, "--database", "sqlite:///typo/meshnav.db"])
        assert result.exit_code == 1, result.output
        assert f"There is no registry at {shown}, so no principal either" in result.stderr
        assert "migrate makes one" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "typo").exists()


def _meshnav(*arguments: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m meshnav ARGUMENTS`` in ``cwd``, with no MESHNAV_* setting but ``env``."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MESHNAV_")}
    return subprocess.run(
        [sys.executable, "-m", "meshnav", *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environment, **env},
        input="",
        timeout=60,
        check=False,
    )


def test_a_stdio_navigator_makes_no_registry_and_says_which_it_read(tmp_path: Path) -> None:
    """A stdio navigator on a missing (or mistyped) registry made an empty one and then said its
    token was not valid: the operator checked the token. It makes none, and names the registry
    by its absolute path; one that holds no principal says so (ADR 0036)."""
    shown = f"sqlite:///{tmp_path.resolve() / 'meshnav.db'}"
    missing = _meshnav("navigator", "serve", "--stdio", cwd=tmp_path, MESHNAV_TOKEN="mnv_x")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == (
        f"meshnav: There is no registry at {shown}, so no principal either; meshnav migrate "
        "makes one there (or give the registry's own URL).\n"
    )
    assert not (tmp_path / "meshnav.db").exists()

    assert _meshnav("migrate", cwd=tmp_path).returncode == 0
    empty = _meshnav("navigator", "serve", "--stdio", cwd=tmp_path, MESHNAV_TOKEN="mnv_x")
    assert empty.returncode == 1
    assert empty.stderr.startswith(f"meshnav: the registry at {shown} holds no principals,")
    assert empty.stderr.count("\n") == 1

    assert _meshnav("principal", "add", "alice", cwd=tmp_path).returncode == 0
    wrong = _meshnav("navigator", "serve", "--stdio", cwd=tmp_path, MESHNAV_TOKEN="mnv_x")
    assert wrong.returncode == 1
    assert wrong.stderr == (
        "meshnav: MESHNAV_TOKEN is missing or not a valid principal's token in the registry at "
        f"{shown}\n"
    )
    assert "mnv_x" not in wrong.stderr


def _navigator_says(cwd: Path, database: str) -> str:
    """What ``navigator serve`` writes on stderr up to the line saying it serves, then stops it."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MESHNAV_")}
    command = ["navigator", "serve", "--listen", f"127.0.0.1:{free_port()}", "--database"]
    process = subprocess.Popen(
        [sys.executable, "-m", "meshnav", *command, database],
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=environment,
    )
    try:
        assert process.stderr is not None
        said = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = process.stderr.readline()
            assert line, "".join(said)
            said.append(line)
            if "holds no principals" in line or "the registry is" in line:
                return "".join(said)
        raise AssertionError("".join(said))
    finally:
        stop(process)
        assert process.stderr is not None
        process.stderr.close()


def test_a_navigator_says_which_registry_it_opened_and_when_it_holds_no_principal(
    tmp_path: Path,
) -> None:
    """A navigator's first start makes its registry (README), which holds no principal: every
    token was then refused with nothing on the navigator's side to say why. It names the
    registry by its absolute path, says it made it, and that no token is accepted yet."""
    shown = f"sqlite:///{tmp_path.resolve() / 'state' / 'r.db'}"
    first = _navigator_says(tmp_path, "sqlite:///state/r.db")
    assert f"meshnav navigator: made a new registry at {shown}\n" in first
    assert (
        f"meshnav navigator: the registry at {shown} holds no principals, so no token is "
        f"accepted yet: meshnav principal add NAME --scopes mesh:admin --database {shown}"
    ) in first
    added = _meshnav("principal", "add", "alice", "--database", shown, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    again = _navigator_says(tmp_path, "sqlite:///state/r.db")
    assert f"meshnav navigator: the registry is {shown}\n" in again
    assert "holds no principals" not in again and "made a new" not in again


def test_a_grant_for_a_principal_the_registry_does_not_hold_is_refused(invoke: Any) -> None:
    """``grant allow alcie ...`` (a typo) was taken: a row granting nobody anything, and the
    operator told it was done. ``--force`` keeps a row for a name made later (ADR 0036)."""
    invoke("principal", "add", "alice")
    line = _one_line(invoke("grant", "allow", "alcie", "db1/*/*", code=1))
    assert line.startswith("meshnav: not_found: Unknown principal")
    assert "--force" in line and "alcie" not in line
    body = json.loads(invoke("grant", "deny", "alcie", "db1/*/*", "--json", code=1).stderr)
    assert (body["error"], body["pointer"]) == ("not_found", "/principal")
    assert invoke("grant", "list", "--json") == []
    forced = invoke("grant", "allow", "auth0|123", "db1/*/*", "--force", "--json")
    assert forced["principal"] == "auth0|123"
    assert invoke("grant", "allow", "alice", "db1/*/*", "--json")["principal"] == "alice"
    assert invoke("grant", "deny", "*", "db2/*/*", "--json")["principal"] == "*"


def test_describe_wraps_both_schemas_and_cuts_neither() -> None:
    """At 80 columns (a pipe, a narrow terminal) the output schema's long lines were cut."""
    from rich.console import Console

    from meshnav.render import contract_view

    long = "a description long enough to pass eighty columns " * 3
    schema = {"type": "object", "properties": {"x": {"type": "string", "description": long}}}
    contract = {
        "address": "db1/sqlite/query",
        "title": "Query",
        "status": "answering",
        "confirmation": "never",
        "contractDigest": "0" * 64,
        "inputSchema": schema,
        "outputSchema": schema,
    }
    console = Console(width=80, record=True, color_system=None)
    console.print(contract_view(contract))
    text = " ".join(console.export_text().split())
    for word in ("inputSchema", "outputSchema"):
        assert word in text
    assert text.count("columns") == 6, "a schema line was cut"


def test_a_navigator_whose_start_fails_says_so_in_one_line(tmp_path: Path) -> None:
    """A server whose lifespan fails stops before it serves: uvicorn logs why and raised
    SystemExit(3) out of a task group; the command ends with its one line and exit 1."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette

    @asynccontextmanager
    async def failing(app: Any) -> Any:
        raise RuntimeError("the catalogue could not be read")
        yield

    from navigator.mcp.stopping import Stopping

    failed = Starlette(lifespan=failing)
    failed.stopping = Stopping()  # type: ignore[attr-defined]  # what a navigator app has
    serve = functools.partial(serve_navigator, build=lambda *a, **k: failed)
    database = f"sqlite:///{tmp_path / 'r.db'}"
    listen = f"127.0.0.1:{free_port()}"
    result = CliRunner().invoke(
        app, ["navigator", "serve", "--listen", listen, "--database", database], obj=serve
    )
    assert result.exit_code == 1, result.output
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("meshnav: the navigator could not start on http://")
    )


@pytest.fixture
def not_the_navigator() -> Any:
    """A web server that is not the navigator — another service on the port, or a proxy that
    redirects http to https — answering every request with the status it is given and a page."""
    with page_server(b"<html><body>not the navigator</body></html>") as url:
        yield url


@pytest.mark.parametrize("status", [200, 301, 308])
@pytest.mark.parametrize(
    "arguments",
    [
        ["principal", "list"],
        ["grant", "list"],
        ["principal", "add", "zed"],
        ["retire", "db1"],
        ["register", "db1", "r", "--endpoint", "http://127.0.0.1:9/mcp"],
    ],
)
def test_an_answer_that_is_not_the_navigators_is_one_line(
    monkeypatch: pytest.MonkeyPatch, not_the_navigator: Any, status: int, arguments: list[str]
) -> None:
    """A page where the admin API's JSON was expected (a redirect to https, another service on
    the port) raised a traceback: a redirect was taken for the API's answer, its page for JSON."""
    for variable in ("MESHNAV_NAVIGATOR_URL", "MESHNAV_TOKEN"):
        monkeypatch.delenv(variable, raising=False)
    url = not_the_navigator(status)
    result = CliRunner().invoke(app, [*arguments, "--navigator", url, "--token", "mnv_x"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert _one_line(result).startswith("meshnav: the navigator answered ")


@pytest.mark.parametrize(("arguments", "status"), [(["search", "disk"], 200), (["mesh"], 308)])
def test_a_walker_command_answered_by_something_else_says_so_in_one_line(
    not_the_navigator: Any, arguments: list[str], status: int
) -> None:
    """The MCP client logged its own ERROR lines ("Unexpected content type: text/html") on
    stderr before the command's one line: a process of its own, where they reach stderr."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MESHNAV_")}
    url = not_the_navigator(status)
    result = subprocess.run(
        [sys.executable, "-m", "meshnav", *arguments, "--navigator", url, "--token", "mnv_x"],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith("meshnav: ") and result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        (["grant", "allow", "alice", "db1//x"], "invalid_address"),
        (["grant", "deny", "*", "DB1/*/*", "--navigator", "http://127.0.0.1:9"], "invalid_address"),
        (["principal", "revoke", "a/b", "--navigator", "http://127.0.0.1:9"], "not_found"),
        (["principal", "rotate", "..", "--navigator", "http://127.0.0.1:9"], "not_found"),
    ],
)
def test_with_json_an_error_found_before_any_request_is_a_body_too(
    invoke: Any, monkeypatch: pytest.MonkeyPatch, arguments: list[str], code: str
) -> None:
    """The command line refuses a bad target or a name no principal can have before it asks
    the registry or the navigator; with ``--json`` that was a line of prose, where every other
    refusal of the API's rules is the §9 body a script reads."""
    monkeypatch.setenv("MESHNAV_TOKEN", "mnv_x")
    result = invoke(*arguments, "--json", code=1)
    assert result.stdout == ""
    body = json.loads(result.stderr)
    assert (body["error"], body["status"]) == (code, 400 if code == "invalid_address" else 404)
    assert _one_line(invoke(*arguments, code=1)).startswith(f"meshnav: {code}: ")


@pytest.mark.parametrize("principal", ["demo", "node-db2"])
def test_a_demo_whose_principal_was_revoked_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, principal: str
) -> None:
    """A demo started again rotates its principals' tokens; one an operator revoked in its
    registry cannot be (revocation is final), and the demo ended in a traceback."""
    for variable in ("MESHNAV_NAVIGATOR_URL", "MESHNAV_TOKEN", "MESHNAV_DATABASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    data = tmp_path / "demo"
    data.mkdir(mode=0o700)
    database = f"sqlite:///{data / 'registry.db'}"
    runner = CliRunner()
    for arguments in (
        ["migrate"],
        ["principal", "add", principal],
        ["principal", "revoke", principal],
    ):
        assert runner.invoke(app, [*arguments, "--database", database]).exit_code == 0
    port = free_ports(4)
    line = _one_line(
        runner.invoke(app, ["demo", "--listen", f"127.0.0.1:{port}", "--data", str(data)])
    )
    assert f"principal {principal}" in line and "--data" in line
    assert not (data / "demo.token").exists()


def test_a_quota_changes_only_what_is_given_and_is_shown_by_principal_show(invoke: Any) -> None:
    """``principal quota NAME`` with no option removed the quota of an operator who meant to
    look at it, and ``--rate`` alone dropped ``--concurrency``."""
    invoke("principal", "add", "alice", "--rate", "600/min", "--concurrency", "8")
    asked = invoke("principal", "quota", "alice", code=1)
    assert "meshnav principal show alice" in asked.stderr
    shown = invoke("principal", "show", "alice", "--json")
    assert (shown["ratePerMinute"], shown["concurrency"]) == (600, 8)
    assert shown["lastSeen"] is None  # it has called nothing: no event of its own
    changed = invoke("principal", "quota", "alice", "--rate", "20/min", "--json")
    assert (changed["ratePerMinute"], changed["concurrency"]) == (20, 8)
    removed = invoke("principal", "quota", "alice", "--concurrency", "none", "--json")
    assert (removed["ratePerMinute"], removed["concurrency"]) == (20, None)
    text = invoke("principal", "show", "alice").stdout
    for said in ("principal", "alice", "scopes", "expires", "never", "20/min", "last seen"):
        assert said in text
    rotated = invoke("principal", "rotate", "alice")
    assert "shown once" in rotated.stdout


def test_expires_and_args_are_refused_in_their_own_words(invoke: Any) -> None:
    """``--expires 0`` answered about ``/expiresDays`` and a body never sent; ``--args 'not
    json'`` did not say where the JSON breaks (and must not echo the text)."""
    expired = invoke("principal", "add", "alice", "--expires", "0", code=2)
    assert "--expires" in expired.stderr and "expiresDays" not in expired.stderr
    broken = CliRunner().invoke(app, ["call", "db1/a/b", "--args", '{"a": secret-ish}'])
    assert broken.exit_code == 1
    assert "line 1, column 7" in broken.stderr and "secret-ish" not in broken.stderr


def test_rate_limited_says_when_to_try_again() -> None:
    from meshnav.client import error_line

    body = {"error": "rate_limited", "status": 429, "message": "Slow down.", "retryAfterS": 12}
    assert error_line(body) == "rate_limited: Slow down. (retry after 12 s)"
