"""The command line against a real navigator (SPEC §13): every command that talks to a navigator
takes ``--navigator`` and ``--token`` (here from the environment), prints JSON with ``--json``, and
exits non-zero with a one-line message on error. Each command is a ``python -m meshnav`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.harness import MeshHarness, free_port, page_server

ECHO_SERVER = Path(__file__).resolve().parents[1] / "mesh" / "fixtures" / "echo_server.py"

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("mesh")]


def meshnav(
    mesh: MeshHarness, token: str, *arguments: str, code: int = 0
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "MESHNAV_NAVIGATOR_URL": mesh.navigator_url,
        "MESHNAV_TOKEN": token,
        "MESHNAV_DATABASE_URL": "sqlite:////nonexistent/never-read.db",  # the API, not the registry
    }
    result = subprocess.run(
        [sys.executable, "-m", "meshnav", *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == code, result.stderr
    return result


def as_json(mesh: MeshHarness, token: str, *arguments: str) -> Any:
    return json.loads(meshnav(mesh, token, *arguments, "--json").stdout)


def register_tools_file(
    mesh: MeshHarness,
    token: str,
    folder: Path,
    machine: str,
    role: str,
    tools: list[dict[str, Any]],
) -> Any:
    """``meshnav register MACHINE ROLE --tools-file``, the file holding ``{"tools": tools}``."""
    tools_file = folder / "tools.json"
    tools_file.write_text(json.dumps({"tools": tools}))
    return as_json(mesh, token, "register", machine, role, "--tools-file", str(tools_file))


@pytest.fixture(scope="module")
def admin(mesh: MeshHarness) -> str:
    return mesh.principal("cli-admin", ["mesh:admin"])


def test_an_agents_view_from_the_terminal(mesh: MeshHarness) -> None:
    token: str = mesh.agent_token  # type: ignore[attr-defined]
    found = as_json(mesh, token, "search", "list tables", "--within", "db1/*/*")
    assert found["results"][0]["address"] == "db1/sqlite/list_tables"
    contract = as_json(mesh, token, "describe", "db1/sqlite/list_tables")
    assert contract["inputSchema"]["required"] == ["database"]
    called = as_json(mesh, token, "call", "db1/sqlite/list_databases")
    assert "inventory" in json.dumps(called)
    tree = as_json(mesh, token, "mesh", "db1")
    assert "db1/sqlite" in json.dumps(tree)


def test_principals_and_grants_through_the_admin_api(mesh: MeshHarness, admin: str) -> None:
    made = as_json(mesh, admin, "principal", "add", "cli-user", "--scopes", "mesh:node", "--json")
    assert made["principal"] == "cli-user"
    row = as_json(mesh, admin, "grant", "allow", "cli-user", "db2/*/*")
    check = ("grant", "check", "cli-user", "db2/sqlite/query")
    assert as_json(mesh, admin, *check)["allowed"] is True
    assert as_json(mesh, admin, "grant", "revoke", str(row["id"])) == {
        "grant": row["id"],
        "revoked": True,
    }
    assert as_json(mesh, admin, *check)["allowed"] is False
    assert as_json(mesh, admin, "principal", "revoke", "cli-user") == {
        "principal": "cli-user",
        "revoked": True,
    }
    names = {entry["name"]: entry for entry in as_json(mesh, admin, "principal", "list")}
    assert names["cli-user"]["revoked"] is True


def test_an_operator_registers_a_tools_file_then_retires_it(
    mesh: MeshHarness, admin: str, tmp_path: Path
) -> None:
    invoice = {
        "name": "lookup_invoice",
        "description": "Look up an invoice by its number.",
        "inputSchema": {"type": "object", "properties": {"number": {"type": "string"}}},
    }
    registered = register_tools_file(mesh, admin, tmp_path, "cli-ext", "billing", [invoice])
    assert "cli-ext" in json.dumps(registered)
    mesh.grant("cli-admin", "cli-ext/*/*")
    found = as_json(mesh, admin, "search", "invoice", "--within", "cli-ext/*/*")
    assert [hit["address"] for hit in found["results"]] == ["cli-ext/billing/lookup_invoice"]
    # no endpoint to call (SPEC §13, ADR 0057): not a node that is not answering
    assert found["results"][0]["status"] == "no endpoint"
    called = meshnav(mesh, admin, "call", "cli-ext/billing/lookup_invoice", "--json", code=1)
    refused = json.loads(called.stderr)
    assert refused["error"] == "node_unavailable"
    assert "tools file" in refused["message"] and "not answering" not in refused["message"]
    as_json(mesh, admin, "retire", "cli-ext")
    assert as_json(mesh, admin, "search", "invoice", "--within", "cli-ext/*/*")["results"] == []


def test_an_operator_marks_a_tool_and_lists_and_removes_a_seat(
    mesh: MeshHarness, admin: str, tmp_path: Path
) -> None:
    """``tool mark`` over the raw API route (``required`` the word, ``always`` kept for scripts),
    and a seat listed and removed: there was no way to remove one."""
    tool = {"name": "wipe", "inputSchema": {"type": "object"}}
    register_tools_file(mesh, admin, tmp_path, "cli-mark", "files", [tool])
    marked = as_json(mesh, admin, "tool", "mark", "cli-mark/files/wipe", "required")
    assert marked == {"tool": "cli-mark/files/wipe", "confirmation": "required"}
    said = meshnav(mesh, admin, "tool", "mark", "cli-mark/files/wipe", "auto").stdout
    assert said == "cli-mark/files/wipe: auto\n"
    old = httpx.put(
        f"{mesh.navigator_url}/api/v1/tools/cli-mark/files/wipe/confirmation",
        json={"confirmation": "always"},
        headers={"Authorization": f"Bearer {admin}"},
    )
    assert old.json()["confirmation"] == "required"
    meshnav(mesh, admin, "tool", "mark", "cli-mark/files/wipe", "sometimes", code=1)
    as_json(mesh, admin, "seat", "place", "cli-notes", "cli-mark", "files")
    assert as_json(mesh, admin, "seat", "list")["cli-notes"] == {
        "machine": "cli-mark",
        "role": "files",
    }
    assert "mesh/cli-notes" in meshnav(mesh, admin, "seat", "list").stdout
    assert as_json(mesh, admin, "seat", "remove", "cli-notes") == {"removed": "mesh/cli-notes"}
    assert "cli-notes" not in as_json(mesh, admin, "seat", "list")
    meshnav(mesh, admin, "seat", "remove", "cli-notes", code=1)
    as_json(mesh, admin, "retire", "cli-mark")


@pytest.mark.parametrize(
    "arguments",
    [
        ("call", "db1/sqlite/query", "--args", "{not json"),
        ("describe", "db9/nothing/here"),
        ("register", "cli-ext", "billing"),  # neither --endpoint nor --tools-file
    ],
)
def test_an_error_is_one_line_on_stderr_and_a_non_zero_exit(
    mesh: MeshHarness, admin: str, arguments: tuple[str, ...]
) -> None:
    for flags in ((), ("--json",)):
        result = meshnav(mesh, admin, *arguments, *flags, code=1)
        assert result.stdout == ""
        assert result.stderr.count("\n") == 1
        assert "{not json" not in result.stderr
        if flags and arguments[0] == "describe":  # the navigator answered: its body, as JSON
            # no allow of cli-admin's covers db9: not granted, there or not (ADR 0035)
            assert json.loads(result.stderr)["error"] == "tool_not_granted"
        else:  # refused before any request: a line
            assert result.stderr.startswith("meshnav: ")


def test_a_bad_token_is_refused_without_echoing_it(mesh: MeshHarness) -> None:
    result = meshnav(mesh, "mnv_not-a-real-token", "search", "tables", code=1)
    assert result.stderr.startswith("meshnav: unauthenticated: ")
    assert "mnv_not-a-real-token" not in result.stderr
    # with --json, the navigator's 401 body, as for any error it answered
    refused = meshnav(mesh, "mnv_not-a-real-token", "search", "tables", "--json", code=1)
    assert json.loads(refused.stderr)["error"] == "unauthenticated"
    assert "mnv_not-a-real-token" not in refused.stderr


def test_the_human_views_name_what_the_json_holds(mesh: MeshHarness, admin: str) -> None:
    """Without ``--json`` the same answers are drawn for a person: a table, a contract, a tree."""
    token: str = mesh.agent_token  # type: ignore[attr-defined]
    table = meshnav(mesh, token, "search", "list tables", "--within", "db1/*/*").stdout
    assert "db1/sqlite/list_tables" in table
    contract = meshnav(mesh, token, "describe", "db1/sqlite/list_tables").stdout
    assert "db1/sqlite/list_tables" in contract and "database" in contract
    tree = meshnav(mesh, token, "mesh", "db1").stdout
    assert "db1/sqlite" in tree and "answering" in tree
    grants = meshnav(mesh, admin, "grant", "list").stdout
    assert "*/*/*" in grants  # the agent's grant
    principals = meshnav(mesh, admin, "principal", "list").stdout  # was JSON without --json
    assert principals.startswith("name\tscopes\t")  # piped: tab-separated rows, header first
    assert "cli-admin" in principals and "mesh:admin" in principals
    assert not principals.lstrip().startswith("[")


def test_register_says_what_it_registered_and_what_it_refused(
    mesh: MeshHarness, admin: str, tmp_path: Path
) -> None:
    """Without ``--json``, register printed its JSON answer: a person reads a line, and a table
    of the tools refused with the reason of each."""
    tools = [
        {"name": "lookup", "inputSchema": {"type": "object"}},
        {"name": "bad name", "inputSchema": {"type": "object"}},
    ]
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps({"tools": tools}))
    said = meshnav(mesh, admin, "register", "cli-said", "docs", "--tools-file", str(tools_file))
    assert said.stdout.startswith("cli-said/docs: registered 1 tool\n")
    assert "refused" in said.stdout and "bad name" in said.stdout
    assert "name outside the address grammar" in said.stdout
    as_json(mesh, admin, "retire", "cli-said")


def test_text_from_the_mesh_is_drawn_as_text_not_markup(
    mesh: MeshHarness, admin: str, tmp_path: Path
) -> None:
    """A registered server's title is any string: "[/]" in it is drawn, not read as a tag."""
    zebrafy = {
        "name": "zebrafy",
        "title": "Zebrafy [/]",
        "description": "Stripes [bold]anything.",
        "inputSchema": {"type": "object"},
    }
    register_tools_file(mesh, admin, tmp_path, "cli-markup", "stripes", [zebrafy])
    mesh.grant("cli-admin", "cli-markup/*/*")
    table = meshnav(mesh, admin, "search", "zebrafy", "--within", "cli-markup/*/*").stdout
    contract = meshnav(mesh, admin, "describe", "cli-markup/stripes/zebrafy").stdout
    assert "Zebrafy [/]" in table and "[bold]" in table  # the summary wraps at 80 columns
    assert "Zebrafy [/]" in contract
    # a tools file registers no endpoint, and says so wherever it is shown (ADR 0057)
    view = as_json(mesh, admin, "mesh", "cli-markup")
    assert {entry["status"] for entry in view["entries"]} == {"no endpoint"}
    mesh_view = httpx.get(
        f"{mesh.navigator_url}/api/v1/mesh", headers={"Authorization": f"Bearer {admin}"}
    ).json()
    (machine,) = [m for m in mesh_view["machines"] if m["name"] == "cli-markup"]
    assert [a["status"] for a in machine["assignments"]] == ["no endpoint"]
    as_json(mesh, admin, "retire", "cli-markup")


def test_names_and_addresses_reach_the_api_as_they_were_typed(
    mesh: MeshHarness, admin: str
) -> None:
    """A name is one path segment and an address one query value: "q/../victim" names no
    principal (it must not reach "victim"), and "#" or "&principal=" cannot change the check."""
    as_json(mesh, admin, "principal", "add", "cli-victim")
    result = meshnav(mesh, admin, "principal", "revoke", "q/../cli-victim", code=1)
    assert result.stderr == "meshnav: not_found: No such principal.\n"
    meshnav(mesh, admin, "principal", "rotate", "..", code=1)
    names = {entry["name"]: entry for entry in as_json(mesh, admin, "principal", "list")}
    assert names["cli-victim"]["revoked"] is False
    for address in ("db1/sqlite/query#x", "db1/sqlite/query&principal=cli-admin"):
        refused = meshnav(mesh, admin, "grant", "check", "cli-victim", address, code=1)
        assert refused.stderr.startswith("meshnav: invalid_address: ")


def test_invalid_arguments_say_where(mesh: MeshHarness) -> None:
    token: str = mesh.agent_token  # type: ignore[attr-defined]
    arguments = '{"database": "nope", "sql": "select 1"}'
    result = meshnav(mesh, token, "call", "db1/sqlite/query", "--args", arguments, code=1)
    assert "(pointer '/database', keyword 'enum')" in result.stderr
    assert "nope" not in result.stderr


def test_with_json_a_confirmation_is_a_body_to_read(mesh: MeshHarness) -> None:
    """The confirm token was at the end of a line of prose on stderr, stdout empty."""
    token: str = mesh.agent_token  # type: ignore[attr-defined]
    arguments = json.dumps(
        {"database": "inventory", "sql": "UPDATE products SET name = name WHERE 0"}
    )
    asked = meshnav(
        mesh, token, "call", "db1/sqlite/execute", "--args", arguments, "--json", code=1
    )
    body = json.loads(asked.stderr)
    assert body["error"] == "confirmation_required"
    done = meshnav(
        mesh, token, "call", "db1/sqlite/execute", "--args", arguments, "--confirm",
        body["confirm"], "--json",
    )  # fmt: skip
    assert json.loads(done.stdout)


def test_a_nodes_own_error_is_one_line_and_with_json_its_answer(mesh: MeshHarness) -> None:
    """A node's own error (``isError`` passed through, no §9 body) was printed as its text: a
    server's message over several lines was several lines on stderr, and with ``--json`` it was
    prose where a script reads JSON, as it does for every other error."""
    token: str = mesh.agent_token  # type: ignore[attr-defined]
    if "clierr" not in mesh.nodes:
        # a role of its own: the session's mesh is shared, and an ``echoer`` here would collapse
        # with another test's into one ``*/echoer/echo`` result
        mesh.start_node("clierr", [f"stdio:failer={sys.executable} {ECHO_SERVER}"])
    arguments = json.dumps({"message": "first line\nsecond line"})

    def failed(*flags: str) -> subprocess.CompletedProcess[str]:
        call = ("call", "clierr/failer/fail", "--args", arguments)
        asked = meshnav(mesh, token, *call, "--json", code=1)
        confirm = json.loads(asked.stderr)["confirm"]
        return meshnav(mesh, token, *call, "--confirm", confirm, *flags, code=1)

    plain = failed()
    assert plain.stdout == ""
    assert plain.stderr.count("\n") == 1
    assert plain.stderr.startswith("meshnav: the tool answered with an error: ")
    assert "first line second line" in plain.stderr
    answered = json.loads(failed("--json").stderr)
    assert answered["isError"] is True
    assert "first line\nsecond line" in answered["content"][0]["text"]
    node = meshnav(mesh, token, "call", "db1/sqlite/query", "--args",
                   '{"database": "inventory", "sql": "SELECT nothing FROM nowhere"}',
                   "--json", code=1)  # fmt: skip
    assert json.loads(node.stderr)["isError"] is True


def test_the_admin_api_answers_unknown_paths_and_methods_with_the_error_body(
    mesh: MeshHarness, admin: str
) -> None:
    headers = {"Authorization": f"Bearer {admin}"}
    missing = httpx.get(f"{mesh.navigator_url}/api/v1/nope", headers=headers)
    wrong = httpx.delete(f"{mesh.navigator_url}/api/v1/machines", headers=headers)
    assert (missing.status_code, missing.json()["error"]) == (404, "not_found")
    assert (wrong.status_code, wrong.json()["error"]) == (405, "method_not_allowed")
    assert httpx.get(f"{mesh.navigator_url}/nope", headers=headers).status_code == 404


def test_a_node_served_assignment_is_not_pulled_it_is_pushed(mesh: MeshHarness, admin: str) -> None:
    """A node lists its tools to no client: a pull read none and removed every tool."""
    headers = {"Authorization": f"Bearer {admin}"}
    refreshed = httpx.post(
        f"{mesh.navigator_url}/api/v1/assignments/db1/sqlite/refresh", headers=headers
    )
    assert (refreshed.status_code, refreshed.json()["error"]) == (409, "conflict")
    token: str = mesh.agent_token  # type: ignore[attr-defined]
    assert as_json(mesh, token, "describe", "db1/sqlite/query")["address"] == "db1/sqlite/query"


@pytest.mark.parametrize(
    ("where", "cause", "said"),
    [
        ("refused", "connection_refused", "(connection refused): is the server running there?"),
        ("tls", "tls", "The TLS handshake with the endpoint failed"),
        ("404", "http_status", "answered HTTP 404: check the URL's path"),
        ("401", "http_status", "answered HTTP 401: the server wants credentials"),
        ("200", "not_mcp", "answered, but not as an MCP server"),
    ],
)
def test_a_registration_that_cannot_pull_names_the_cause(
    mesh: MeshHarness, admin: str, where: str, cause: str, said: str
) -> None:
    """Every failure to pull the endpoint's tools was "The server at that endpoint could not be
    read": the operator typed the URL and could not tell a stopped server from a wrong path or
    a certificate. The kind of failure is named; the page it answered is not (ADR 0036)."""
    with page_server(b"<html>PAGE-CANARY</html>") as page:
        endpoint = {
            "refused": f"http://127.0.0.1:{free_port()}/mcp",
            "tls": page(200).replace("http://", "https://") + "/mcp",
        }.get(where) or page(int(where)) + "/mcp"
        arguments = ("register", "cli-pull", "echo", "--endpoint", endpoint)
        line = meshnav(mesh, admin, *arguments, code=1).stderr
        body = json.loads(meshnav(mesh, admin, *arguments, "--json", code=1).stderr)
    assert line.startswith("meshnav: node_unavailable: ") and line.count("\n") == 1
    assert said in line
    assert "CANARY" not in line and "CANARY" not in json.dumps(body)
    assert (body["error"], body["cause"]) == ("node_unavailable", cause)


@pytest.mark.parametrize(
    ("machine", "role", "kind"),
    [("Ext 1", "search", "machine"), ("mesh", "search", "machine"), ("ext1", "Search", "role")],
)
def test_a_refused_name_quotes_the_grammar(
    mesh: MeshHarness, admin: str, machine: str, role: str, kind: str
) -> None:
    """``register 'Ext 1' …`` answered "The name is not valid." with nothing to say what is."""
    tools = ("--endpoint", f"http://127.0.0.1:{free_port()}/mcp")  # never pulled: refused first
    line = meshnav(mesh, admin, "register", machine, role, *tools, code=1).stderr
    assert line.startswith(f"meshnav: invalid_address: The {kind} name is not valid: lower-case")
    assert "[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?" in line
    assert ("mesh is no machine's name" in line) == (kind == "machine")
    assert "Ext 1" not in line


def test_a_grant_for_an_unknown_principal_is_refused_through_the_api(
    mesh: MeshHarness, admin: str
) -> None:
    line = meshnav(mesh, admin, "grant", "allow", "cli-nobody", "db1/*/*", code=1).stderr
    assert line.startswith("meshnav: not_found: Unknown principal")
    forced = as_json(mesh, admin, "grant", "allow", "cli-nobody", "db1/*/*", "--force")
    assert forced["principal"] == "cli-nobody"
    meshnav(mesh, admin, "grant", "revoke", str(forced["id"]))
