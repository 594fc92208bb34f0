"""The official MCP Inspector CLI against the navigator, over streamable HTTP and over stdio.

The Inspector and the Node.js it needs (>= 22.19; machines have 20) come from the npm registry at
pinned versions, installed once under ``.npm-cache/`` and run from there without the registry.
A machine that cannot reach the registry for that first install fails these tests, it never
skips them. The commands are the ones docs/inspector.md gives an operator.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness import MeshHarness

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh"), pytest.mark.timeout(300)]

#: The npm package that brings Node 22: the Inspector's engines field asks for >= 22.19.0.
NODE_PACKAGE = "node@22.23.3"
INSPECTOR_PACKAGE = "@modelcontextprotocol/inspector@2.12.0"

REPO = Path(__file__).resolve().parents[2]
NPM_TOOLS = REPO / ".npm-cache"
INSTALL_TIMEOUT_S = 240
RUN_TIMEOUT_S = 120
#: A stdio navigator imports the whole server before it answers: seconds on a loaded machine.
STDIO_CONNECT_TIMEOUT_MS = "90000"

WALKER_TOOLS = {"seats", "search", "describe", "call"}
ERAS = ["legacy", "modern"]  # initialize handshake (2025-11-25) and server/discover (2026-07-28)
BAD_TOKEN_MESSAGE = "meshnav: MESHNAV_TOKEN is missing or not a valid principal's token"


# --- npm tools, installed once -----------------------------------------------------------------


@dataclass(frozen=True)
class NpmTool:
    """Packages from the npm registry in their own prefix, run with the Node that came with them."""

    prefix: Path

    def command(self, executable: str, *arguments: str) -> list[str]:
        bin_dir = self.prefix / "node_modules" / ".bin"
        return [str(bin_dir / "node"), str(bin_dir / executable), *arguments]


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def install_npm_tool(*specs: str) -> NpmTool:
    """Install ``specs`` (exact versions, ``node@X`` among them) into ``.npm-cache/``, once.

    Without npm, or without the registry on the first run, this fails the test with the reason.
    """
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not on PATH: these tests need Node.js 20+ and npm", pytrace=False)
    prefix = NPM_TOOLS / "+".join(spec.rsplit("/", 1)[-1] for spec in specs)
    wanted = "\n".join(specs)
    stamp = prefix / ".installed"
    NPM_TOOLS.mkdir(exist_ok=True)
    with (NPM_TOOLS / f"{prefix.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pytest run may be installing the same tools
        if stamp.is_file() and stamp.read_text() == wanted:
            return NpmTool(prefix)
        shutil.rmtree(prefix, ignore_errors=True)
        prefix.mkdir()
        command = [
            npm, "install", "--prefix", str(prefix), "--no-save", "--no-audit", "--no-fund",
            "--no-update-notifier", "--loglevel=error", "--fetch-retries=2",
            "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=10000", *specs,
        ]  # fmt: skip
        try:
            done = subprocess.run(
                command,
                check=False,
                cwd=prefix,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"npm did not install {' '.join(specs)} within {INSTALL_TIMEOUT_S} s: "
                "is the npm registry reachable?",
                pytrace=False,
            )
        if done.returncode != 0:
            pytest.fail(
                f"npm could not install {' '.join(specs)} (exit {done.returncode}): is the npm "
                f"registry reachable? The first run needs it; later runs use {prefix}.\n"
                f"{_tail(done.stderr)}",
                pytrace=False,
            )
        tool = NpmTool(prefix)
        node = tool.command("node")[0]
        version = subprocess.run(
            [node, "--version"], check=False, capture_output=True, text=True, timeout=30
        )
        expected = "v" + next(s for s in specs if s.startswith("node@")).split("@", 1)[1]
        if version.stdout.strip() != expected:
            pytest.fail(
                f"the npm package {expected} did not install its binary (its install script may "
                f"have been blocked): {node} --version gave {version.stdout.strip() or 'nothing'}",
                pytrace=False,
            )
        stamp.write_text(wanted)
        return tool


# --- the Inspector CLI -------------------------------------------------------------------------


@dataclass(frozen=True)
class Inspector:
    tool: NpmTool
    home: Path  # its catalog, client config and OAuth store stay out of the user's home

    def run(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.tool.command("mcp-inspector", "--cli", *arguments),
            check=False,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            stdin=subprocess.DEVNULL,  # no TTY: never an interactive OAuth prompt
            env={**os.environ, "HOME": str(self.home), "NO_COLOR": "1"},
        )


def _explain(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\nstdout: {_tail(done.stdout)}\nstderr: {_tail(done.stderr)}"


def _result(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON-RPC result the Inspector printed with ``--format json``."""
    assert done.returncode == 0, _explain(done)
    answer = json.loads(done.stdout)
    assert set(answer) == {"result"}, answer
    result: dict[str, Any] = answer["result"]
    return result


def _structured(result: dict[str, Any]) -> dict[str, Any]:
    assert result.get("isError") is False, result
    structured: dict[str, Any] = result["structuredContent"]
    # the text block carries the same JSON, for clients that read only text (SPEC §3)
    assert json.loads(result["content"][0]["text"]) == structured
    return structured


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    tool = install_npm_tool(NODE_PACKAGE, INSPECTOR_PACKAGE)
    inspector = Inspector(tool, tmp_path_factory.mktemp("inspector-home"))
    version = inspector.run("--version")
    assert version.stdout.strip() == INSPECTOR_PACKAGE.rsplit("@", 1)[1], _explain(version)
    return inspector


def _http(inspector: Inspector, mesh: MeshHarness, era: str, *flags: str) -> dict[str, Any]:
    token = mesh.agent_token  # type: ignore[attr-defined]
    url = f"{mesh.navigator_url}/mcp"
    auth = f"Authorization: Bearer {token}"
    common = ["--transport", "http", "--header", auth, "--protocol-era", era, "--format", "json"]
    return _result(inspector.run(url, *common, "-q", *flags))


def _tool_call(tool: str, **arguments: str) -> list[str]:
    flags = ["--method", "tools/call", "--tool-name", tool]
    for key, value in arguments.items():
        flags += ["--tool-arg", f"{key}={value}"]
    return flags


# --- over streamable HTTP ----------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_http_tools_list_shows_exactly_the_four_walker_tools(
    inspector: Inspector, mesh: MeshHarness, era: str
) -> None:
    tools = _http(inspector, mesh, era, "--method", "tools/list")["tools"]
    assert {tool["name"] for tool in tools} == WALKER_TOOLS
    assert len(tools) == len(WALKER_TOOLS)
    for tool in tools:
        assert tool["inputSchema"]["type"] == "object", tool["name"]
        assert tool["outputSchema"]["type"] == "object", tool["name"]
        assert tool["description"], tool["name"]


def test_http_walker_schemas_pass_the_inspector_strict_check(
    inspector: Inspector, mesh: MeshHarness
) -> None:
    """``--strict`` exits 6 on an error-severity schema portability problem, and reports every
    problem on stderr; the walker tools' schemas have none at all."""
    token = mesh.agent_token  # type: ignore[attr-defined]
    auth = f"Authorization: Bearer {token}"
    url = f"{mesh.navigator_url}/mcp"
    done = inspector.run(
        url, "--transport", "http", "--header", auth, "--method", "tools/list", "--strict"
    )
    assert done.returncode == 0, _explain(done)
    assert "error" not in done.stderr.lower(), _explain(done)
    assert "warning" not in done.stderr.lower(), _explain(done)


@pytest.mark.parametrize("era", ERAS)
def test_http_seats_walks_the_mesh(inspector: Inspector, mesh: MeshHarness, era: str) -> None:
    seats = _structured(_http(inspector, mesh, era, *_tool_call("seats")))
    addresses = {entry["address"] for entry in seats["entries"]}
    assert {"mesh/notes", "db1", "db2", "web1", "*/node"} <= addresses


@pytest.mark.parametrize("era", ERAS)
def test_http_search_finds_the_tables_tool(
    inspector: Inspector, mesh: MeshHarness, era: str
) -> None:
    flags = _tool_call("search", query="list tables", within="db1/*/*")
    found = _structured(_http(inspector, mesh, era, *flags))
    addresses = [result["address"] for result in found["results"]]
    assert addresses[0] == "db1/sqlite/list_tables", addresses
    assert all(address.startswith("db1/") for address in addresses)


@pytest.mark.parametrize("era", ERAS)
def test_http_describe_gives_the_tools_contract(
    inspector: Inspector, mesh: MeshHarness, era: str
) -> None:
    flags = _tool_call("describe", address="db1/sqlite/list_tables")
    contract = _structured(_http(inspector, mesh, era, *flags))
    assert contract["address"] == "db1/sqlite/list_tables"
    assert contract["inputSchema"]["properties"]["database"]["enum"] == ["inventory"]
    assert contract["annotations"]["readOnlyHint"] is True
    assert len(contract["contractDigest"]) == 64


@pytest.mark.parametrize("era", ERAS)
def test_http_call_list_databases_returns_db1s_data(
    inspector: Inspector, mesh: MeshHarness, era: str
) -> None:
    flags = _tool_call("call", address="db1/sqlite/list_databases")
    answer = _structured(_http(inspector, mesh, era, *flags))
    assert [database["name"] for database in answer["databases"]] == ["inventory"]


def test_http_call_passes_nested_arguments_through(inspector: Inspector, mesh: MeshHarness) -> None:
    arguments = {
        "address": "db1/sqlite/query",
        "args": {
            "database": "inventory",
            "sql": "SELECT name FROM products WHERE id <= 2 ORDER BY id",
        },
    }
    flags = ["--method", "tools/call", "--tool-name", "call", "--tool-args-json"]
    answer = _structured(_http(inspector, mesh, "legacy", *flags, json.dumps(arguments)))
    assert answer["rows"] == [["anvil"], ["rope"]]


def test_http_bad_token_is_refused_as_unauthenticated(
    inspector: Inspector, mesh: MeshHarness
) -> None:
    auth = "Authorization: Bearer mnv_not-a-token"
    url = f"{mesh.navigator_url}/mcp"
    done = inspector.run(
        url, "--transport", "http", "--header", auth, "--stored-auth-only", "--format", "json",
        "--method", "tools/list",
    )  # fmt: skip
    assert done.returncode != 0, _explain(done)
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "auth_required", error
    assert '"error": "unauthenticated", "status": 401' in error["message"], error


# --- over stdio --------------------------------------------------------------------------------


def _stdio(
    inspector: Inspector, token: str, database_url: str, *flags: str
) -> subprocess.CompletedProcess[str]:
    environment = ["-e", f"MESHNAV_TOKEN={token}", "-e", f"MESHNAV_DATABASE_URL={database_url}"]
    navigator = [sys.executable, "-m", "meshnav", "navigator", "serve", "--stdio"]
    timeout = ["--connect-timeout", STDIO_CONNECT_TIMEOUT_MS]
    return inspector.run(*timeout, *environment, "--format", "json", *navigator, *flags)


def test_stdio_tools_list_shows_exactly_the_four_walker_tools(
    inspector: Inspector, mesh: MeshHarness
) -> None:
    token = mesh.agent_token  # type: ignore[attr-defined]
    done = _stdio(inspector, token, mesh.database_url, "-q", "--method", "tools/list")
    assert {tool["name"] for tool in _result(done)["tools"]} == WALKER_TOOLS


def test_stdio_call_reaches_db1_as_the_tokens_principal(
    inspector: Inspector, mesh: MeshHarness
) -> None:
    token = mesh.agent_token  # type: ignore[attr-defined]
    flags = _tool_call("call", address="db1/sqlite/list_databases")
    done = _stdio(inspector, token, mesh.database_url, "-q", *flags)
    answer = _structured(_result(done))
    assert [database["name"] for database in answer["databases"]] == ["inventory"]


def test_stdio_bad_token_stops_the_navigator_with_one_line(
    inspector: Inspector, mesh: MeshHarness
) -> None:
    done = _stdio(inspector, "mnv_not-a-token", mesh.database_url, "--method", "tools/list")
    assert done.returncode != 0, _explain(done)
    ours = [line for line in done.stderr.splitlines() if line.startswith("meshnav:")]
    assert len(ours) == 1 and ours[0].startswith(BAD_TOKEN_MESSAGE), _explain(done)
    assert "Traceback" not in done.stderr, _explain(done)


def test_stdio_navigator_without_a_token_refuses_to_start(mesh: MeshHarness) -> None:
    """What an MCP client's log shows: exit 1, one line on stderr, nothing on stdout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MESHNAV_")}
    done = subprocess.run(
        [sys.executable, "-m", "meshnav", "navigator", "serve", "--stdio"],
        check=False,
        input="",
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env={**env, "MESHNAV_DATABASE_URL": mesh.database_url},
    )
    assert done.returncode == 1, _explain(done)
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(BAD_TOKEN_MESSAGE), _explain(done)
