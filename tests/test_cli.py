"""The command line on the registry directly (SPEC §7, §11, §13): what the first administrator
runs before any navigator exists. ``tests/e2e/test_cli.py`` runs the same commands through a
navigator."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from meshnav.cli import app
from registry import HEAD_REVISION


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
        return json.loads(result.stdout) if "--json" in arguments else result

    assert run("migrate", "--json") == {"revision": HEAD_REVISION}
    return run


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


def test_migrate_is_safe_to_repeat(invoke: Any) -> None:
    assert invoke("migrate", "--json") == {"revision": HEAD_REVISION}
    assert "newest schema" in invoke("migrate").stdout


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

    monkeypatch.setattr("meshnav.serve.serve_navigator", serve)
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
    result = CliRunner().invoke(app, arguments)
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
