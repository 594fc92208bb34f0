"""Every table command at 80 columns and piped (SPEC §13): at 80 columns every column is shown,
its values wrapped (``meshnav audit`` drew action, outcome, grant and duration zero-wide);
piped, each row is one line of tab-separated cells with every column, for scripts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.test_cli import _meshnav

#: Each table command run here, and the columns it shows.
TABLES = {
    ("principal", "list"): ["name", "scopes", "machine", "expires", "quota", "status"],
    ("grant", "list"): ["id", "principal", "effect", "target", "scopes", "revision"],
    ("seat", "list"): ["seat", "machine", "role"],
    ("audit",): ["at", "principal", "action", "target", "outcome", "grant", "ms", "instance"],
}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("columns")
    database = f"sqlite:///{folder / 'r.db'}"
    for command in (
        ("migrate",),
        ("principal", "add", "alice-the-long-named-operator", "--scopes", "mesh:admin",
         "mesh:node", "--machine", "db1", "--rate", "600/min", "--concurrency", "8"),
        ("grant", "allow", "alice-the-long-named-operator", "db1/postgres-primary/*"),
        ("seat", "place", "notes", "web1", "notes"),
    ):  # fmt: skip
        done = _meshnav(*command, "--database", database, cwd=folder)
        assert done.returncode == 0, done.stderr
    return folder, database


def _json_rows(command: tuple[str, ...], folder: Path, database: str) -> list[dict[str, object]]:
    done = _meshnav(*command, "--json", "--database", database, cwd=folder)
    found = json.loads(done.stdout)
    if isinstance(found, dict):  # seat list: seat -> where
        return [{"seat": f"mesh/{k}", **(v or {})} for k, v in found.items()]
    return list(found)


def _columns(text: str) -> list[str]:
    """A drawn table's columns, each as its lines' cells run together (no spaces): a value
    wrapped over lines reads whole again."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in text.splitlines()]
    body = [line for line in lines if "│" in line or "┃" in line]
    cells = [re.split("[│┃]", line) for line in body]
    width = max(len(row) for row in cells)
    return ["".join(row[i].replace(" ", "") for row in cells if i < len(row)) for i in range(width)]


@pytest.mark.parametrize("command", list(TABLES))
def test_every_table_shows_every_column_at_80_columns_and_piped(
    registry: tuple[Path, str], command: tuple[str, ...]
) -> None:
    folder, database = registry
    headers = TABLES[command]
    values = [
        str(value)
        for row in _json_rows(command, folder, database)
        for key, value in row.items()
        if key in ("name", "principal", "target", "machine", "role", "seat", "action", "id")
        and key in (*headers, "name")
        and value
    ]
    assert values
    drawn = _meshnav(*command, "--database", database, cwd=folder, COLUMNS="80", TTY_COMPATIBLE="1")
    assert drawn.returncode == 0, drawn.stderr
    assert all(len(line) <= 80 for line in re.sub(r"\x1b\[[0-9;]*m", "", drawn.stdout).splitlines())
    columns = _columns(drawn.stdout)
    for header in headers:  # each column as wide as its header at least: none vanished
        assert any(column.startswith(header) for column in columns), (header, drawn.stdout)
    joined = "".join(columns)
    for value in values:
        assert value.replace(" ", "") in joined, (value, drawn.stdout)
    piped = _meshnav(*command, "--database", database, cwd=folder)
    lines = piped.stdout.splitlines()
    assert lines[0].split("\t") == headers
    assert all(len(line.split("\t")) == len(headers) for line in lines[1:])
    for value in values:
        assert any(value in line.split("\t") or value in line for line in lines[1:]), value


def test_an_empty_audit_says_no_events(registry: tuple[Path, str]) -> None:
    folder, database = registry
    done = _meshnav("audit", "--action", "call", "--database", database, cwd=folder)
    assert done.stdout == "no events\n"


def test_audit_times_carry_their_zone(registry: tuple[Path, str]) -> None:
    folder, database = registry
    lines = _meshnav("audit", "--database", database, cwd=folder).stdout.splitlines()[1:]
    assert lines and all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\t", line) for line in lines)


def _commands() -> list[list[str]]:
    import click
    import typer.main

    from meshnav.cli import app

    found: list[list[str]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        found.append(path)
        if isinstance(command, click.Group):
            for name, inner in command.commands.items():
                walk(inner, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def test_help_at_80_columns_cuts_no_option_or_variable_name() -> None:
    """``--help`` cut option and variable names at 80 columns (``MESHNAV_CALL_DEADLINE_…``), and
    --listen, --database, --advertise, --heartbeat, --tls-* said nothing."""
    import typer.main
    from typer.testing import CliRunner

    from meshnav.cli import app

    runner = CliRunner()
    root = typer.main.get_command(app)
    described = {"--listen", "--database", "--advertise", "--heartbeat", "--tls-cert", "--tls-key"}
    for path in _commands():
        shown = runner.invoke(app, [*path, "--help"], terminal_width=80, env={"COLUMNS": "80"})
        assert shown.exit_code == 0, (path, shown.output)
        assert "…" not in shown.output, (path, shown.output)
        context = root.make_context("meshnav", [], resilient_parsing=True)
        command = root
        for name in path:
            command = command.get_command(context, name)  # type: ignore[attr-defined]
        for parameter in command.params:
            for name in getattr(parameter, "opts", []):
                if name.startswith("--"):
                    assert name in shown.output, (path, name)
            variable = getattr(parameter, "envvar", None)
            if isinstance(variable, str):
                assert variable in shown.output, (path, variable)
            if described & set(getattr(parameter, "opts", [])):
                assert getattr(parameter, "help", None), (path, parameter.opts)


def test_version() -> None:
    from typer.testing import CliRunner

    from meshnav.cli import app

    shown = CliRunner().invoke(app, ["--version"])
    assert shown.exit_code == 0 and re.fullmatch(r"meshnav \d+\.\d+\.\d+\S*\n", shown.stdout)
