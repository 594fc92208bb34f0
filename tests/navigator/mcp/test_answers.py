"""Answers an agent can act on (issue 29, acceptance 1 and 2): the bad inputs an agent produces,
each answered with SPEC §9's code, the pointer to what is wrong, and the next step — and none
repeating what was rejected. Then the existence rule (ADR 0035), for random grants."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from hypothesis import HealthCheck, given, settings

from mesh.modules.sqlite import build_sqlite_module
from navigator.access.grants import Caller, compile_permissions
from navigator.catalog.registrar import AssignmentSpec
from navigator.catalog.view import Catalog
from navigator.errors import NavigatorError, NodeUnavailable, ToolNotGranted, UnknownTool
from navigator.mcp.tools import WALKER_TOOLS
from navigator.nodes.connections import NodeConnections
from navigator.walker.calling import WALKER_ARGUMENTS
from navigator.walker.operations import Navigator
from registry import AccessStore, CatalogStore, GrantRecord, GrantSnapshot
from tests.navigator.inprocess import navigator_at, walker_client
from tests.navigator.meshes import tools
from tests.navigator.walker.test_walk import _ROWS as GRANT_ROWS
from tests.navigator.walker.test_walk import HOLDERS as WALK_HOLDERS
from tests.navigator.walker.test_walk import ROLES as WALK_ROLES
from tests.navigator.walker.test_walk import TOOL_NAMES as WALK_TOOLS
from tests.navigator.walker.test_walk import small_mesh_view

CANARY = "CANARY_5f1c9a"
ALICE = Caller("alice", frozenset())
#: Where no node answers (the discard port): a call gets as far as forwarding, and stops there.
NOBODY = "http://127.0.0.1:9/mcp"
QUERY = "db1/sqlite/query"
FINE = {"database": "inventory", "sql": "SELECT 1"}


@dataclass(frozen=True)
class Bad:
    """One bad input: the walker tool and its arguments, the code, the pointer (``None``: the
    answer has none), words the message must hold (its next step), and the answer's extra
    fields that must be as given (``suggestions``, ``holders``). ``rejected`` is the text that
    must not come back; every row carries ``CANARY`` somewhere in its arguments too."""

    why: str
    tool: str
    arguments: dict[str, Any]
    code: str
    pointer: str | None
    says: tuple[str, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    rejected: str = CANARY


def _args(**args: Any) -> dict[str, Any]:
    return {"address": QUERY, "args": args}


TABLE = [
    # -- the tool's own arguments (call's args): missing, extra, wrong-typed, out of range --
    Bad("missing sql", "call", _args(database="inventory", params=[CANARY]), "invalid_arguments", "/sql", ("required", "describe")),
    Bad("missing database", "call", _args(sql=CANARY), "invalid_arguments", "/database", ("required", "describe")),
    Bad("limit where max_rows is", "call", _args(**FINE, limit=CANARY), "invalid_arguments", "/limit", ("additionalProperties", "leave it out")),
    Bad("confirm put inside args", "call", _args(**FINE, confirm=CANARY), "invalid_arguments", "/confirm", ("leave it out",)),
    Bad("a member made up", "call", _args(**FINE, **{CANARY: 1}), "invalid_arguments", "", ("additionalProperties", "leave it out", "describe")),
    Bad("sql a number", "call", _args(database="inventory", sql=5, params=[CANARY]), "invalid_arguments", "/sql", ("type", "describe")),
    Bad("sql empty", "call", _args(database="inventory", sql="", params=[CANARY]), "invalid_arguments", "/sql", ("minLength",)),
    Bad("max_rows as text", "call", _args(**FINE, max_rows=CANARY), "invalid_arguments", "/max_rows", ("type",)),
    Bad("max_rows zero", "call", _args(**FINE, max_rows=0, params=[CANARY]), "invalid_arguments", "/max_rows", ("minimum",)),
    Bad("max_rows past its maximum", "call", _args(**FINE, max_rows=5000, params=[CANARY]), "invalid_arguments", "/max_rows", ("maximum",)),
    Bad("max_rows a fraction", "call", _args(**FINE, max_rows=1.5, params=[CANARY]), "invalid_arguments", "/max_rows", ("type",)),
    Bad("database not one of the enum", "call", _args(database=CANARY, sql="SELECT 1"), "invalid_arguments", "/database", ("enum", "2 values", "describe")),
    Bad("params neither list nor object", "call", _args(**FINE, params=CANARY), "invalid_arguments", "/params", ("anyOf",)),
    Bad("a params value an object", "call", _args(**FINE, params=[{"x": CANARY}]), "invalid_arguments", "/params", ("anyOf",)),
    Bad("the one value of a const", "call", {"address": "db1/tools/wipe", "args": {"really": CANARY}}, "invalid_arguments", "/really", ("the one value", "describe")),
    # -- the walker tools' own arguments --
    Bad("args not an object", "call", {"address": QUERY, "args": CANARY}, "invalid_arguments", "/args", ("type", "call's inputSchema in tools/list")),
    Bad("args a list", "call", {"address": QUERY, "args": [CANARY]}, "invalid_arguments", "/args", ("type", "tools/list")),
    Bad("call without an address", "call", {"args": {"sql": CANARY}}, "invalid_arguments", "/address", ("required", "tools/list")),
    Bad("call with an empty confirm", "call", {"address": QUERY, "args": {"sql": CANARY}, "confirm": ""}, "invalid_arguments", "/confirm", ("minLength",)),
    Bad("call with arguments for args", "call", {"address": QUERY, "arguments": {"sql": CANARY}}, "invalid_arguments", "", ("additionalProperties", "leave it out", "tools/list")),
    Bad("describe given a query, not an address", "describe", {"query": CANARY}, "invalid_arguments", "/address", ("required", "tools/list")),
    Bad("describe with nothing", "describe", {}, "invalid_arguments", "/address", ("required", "describe's inputSchema in tools/list"), rejected="describe's inputSchema is"),
    Bad("describe an address not text", "describe", {"address": [CANARY]}, "invalid_arguments", "/address", ("type", "tools/list")),
    Bad("describe with a limit", "describe", {"address": QUERY, "limit": CANARY}, "invalid_arguments", "/limit", ("additionalProperties", "leave it out")),
    Bad("describe with a made-up member", "describe", {"address": QUERY, CANARY: 1}, "invalid_arguments", "", ("additionalProperties",)),
    Bad("search without a query", "search", {"within": CANARY}, "invalid_arguments", "/query", ("required", "search's inputSchema in tools/list")),
    Bad("search an empty query", "search", {"query": "", "within": CANARY}, "invalid_arguments", "/query", ("minLength",)),
    Bad("search a control character", "search", {"query": f"{CANARY}\u0001"}, "invalid_arguments", "/query", ("pattern",)),
    Bad("search a query past 500", "search", {"query": CANARY * 40}, "invalid_arguments", "/query", ("maxLength",)),
    Bad("search limit zero", "search", {"query": CANARY, "limit": 0}, "invalid_arguments", "/limit", ("minimum",)),
    Bad("search limit past 16", "search", {"query": CANARY, "limit": 17}, "invalid_arguments", "/limit", ("maximum",)),
    Bad("search limit as text", "search", {"query": CANARY, "limit": "8"}, "invalid_arguments", "/limit", ("type",)),
    Bad("search schemas as text", "search", {"query": CANARY, "schemas": "yes"}, "invalid_arguments", "/schemas", ("type",)),
    Bad("search an empty cursor", "search", {"query": CANARY, "cursor": ""}, "invalid_arguments", "/cursor", ("minLength",)),
    Bad("search given an address", "search", {"query": CANARY, "address": "db1"}, "invalid_arguments", "/address", ("leave it out",)),
    Bad("seats an address not text", "seats", {"address": [CANARY]}, "invalid_arguments", "/address", ("type", "seats's inputSchema")),
    Bad("seats given a query", "seats", {"query": CANARY}, "invalid_arguments", "/query", ("leave it out",)),
    # -- addresses: a typo in each segment, none near, collapsed, upper case, malformed --
    Bad("typo in the tool", "describe", {"address": "db1/sqlite/querry"}, "unknown_tool", None, ("db1/sqlite/query", "describe"), {"suggestions": [QUERY]}, rejected="querry"),
    Bad("typo in the role", "describe", {"address": "db1/sqlte/query"}, "unknown_tool", None, ("db1/sqlite/query",), {"suggestions": [QUERY]}, rejected="sqlte"),
    # outside its grants (no allow covers db3 or mesh/notez) a tool is not granted, there or not,
    # and the near address it may call is named all the same
    Bad("typo in the holder", "describe", {"address": "db3/sqlite/query"}, "tool_not_granted", None, ("db1/sqlite/query",), {"suggestions": [QUERY]}, rejected="db3"),
    Bad("typo in a mesh seat", "describe", {"address": "mesh/notez/read"}, "tool_not_granted", None, ("mesh/notes/read",), {"suggestions": ["mesh/notes/read"]}, rejected="notez"),
    Bad("typo in a call's tool", "call", {"address": "db1/sqlite/querry", "args": {"sql": CANARY}}, "unknown_tool", None, ("db1/sqlite/query",), {"suggestions": [QUERY]}),
    Bad("nothing near", "describe", {"address": "db1/sqlite/frobnicate"}, "unknown_tool", None, ("search",), rejected="frobnicate"),
    Bad("collapsed, to describe", "describe", {"address": "*/node/uptime"}, "invalid_address", None, ("holders", "db1/node/uptime", "seats '*/node'"), {"holders": ["db1", "db2", "web1"]}, rejected="*/node/uptime"),
    Bad("collapsed, to call", "call", {"address": "*/node/uptime", "args": {"x": CANARY}}, "invalid_address", None, ("holders", "seats '*/node'"), {"holders": ["db1", "db2", "web1"]}),
    Bad("collapsed, of no holder it may call", "describe", {"address": "*/keys/read_key"}, "invalid_address", None, ("search",), rejected="read_key"),
    Bad("upper-case holder", "describe", {"address": "DB1/sqlite/query"}, "invalid_address", None, ("lower case", QUERY), {"suggestions": [QUERY]}, rejected="DB1"),
    Bad("upper-case role", "call", {"address": "db1/SQLite/query", "args": {"sql": CANARY}}, "invalid_address", None, ("lower case", QUERY), {"suggestions": [QUERY]}),
    Bad("upper-case, of nothing it may call", "describe", {"address": "VAULT/keys/read_key"}, "invalid_address", None, ("lower case",), rejected="VAULT"),
    Bad("upper case to seats", "seats", {"address": "DB1"}, "invalid_address", None, ("lower case",), rejected="DB1"),
    Bad("upper case in within", "search", {"query": CANARY, "within": "DB1/*/*"}, "invalid_address", None, ("lower case",), rejected="DB1"),
    Bad("a prefix to describe", "describe", {"address": "db1/sqlite"}, "invalid_address", None, ("HOLDER/ROLE/TOOL",), rejected="db1/sqlite"),
    Bad("four segments", "call", {"address": "db1/sqlite/query/x", "args": {"sql": CANARY}}, "invalid_address", None, ("HOLDER/ROLE/TOOL", "seats and search")),
    Bad("a pattern that does not parse", "search", {"query": CANARY, "within": "db1/**"}, "invalid_address", None, ("'*' for a whole segment",), rejected="**"),
    # -- grants: outside the caller's reach nothing is told; inside it, a deny says so --
    Bad("a tool outside its grants", "describe", {"address": "vault/keys/read_key"}, "tool_not_granted", None, ("No grant",), rejected="vault"),
    Bad("no tool, outside its grants", "describe", {"address": "vault/keys/read_kez"}, "tool_not_granted", None, ("No grant",), rejected="vault"),
    Bad("a call outside its grants", "call", {"address": "db2/sqlite/query", "args": {"sql": CANARY}}, "tool_not_granted", None, ("No grant", QUERY), {"suggestions": [QUERY]}),
    Bad("denied inside its reach", "call", {"address": "db1/sqlite/describe_table", "args": {"table": CANARY}}, "tool_not_granted", None, ("No grant",)),
    # -- confirmation: why a yes is needed, and how to give it --
    Bad("a tool that says it writes", "call", {"address": "db1/sqlite/execute", "args": {"database": "inventory", "sql": CANARY}}, "confirmation_required", None, ("declares it may change things", "confirm token")),
    Bad("a tool with no annotations", "call", {"address": "db1/tools/wipe", "args": {"really": True, "note": CANARY}}, "confirmation_required", None, ("declares no read-only hint", "confirm token")),
]  # fmt: skip


WIPE = {
    "name": "wipe",
    "description": "Wipe the scratch folder.",
    "inputSchema": {
        "type": "object",
        "properties": {"really": {"const": True}, "note": {"type": "string"}},
        "required": ["really"],
    },
}
UPTIME = {
    "name": "uptime",
    "inputSchema": {"type": "object"},
    "annotations": {"readOnlyHint": True},
}
READ = {"name": "read", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}}
READ_KEY = {**READ, "name": "read_key"}


async def _sqlite_tools(folder: Path) -> list[dict[str, Any]]:
    """The sqlite module's own tool definitions, for two databases."""
    for name in ("inventory", "logs"):
        sqlite3.connect(folder / f"{name}.db").close()
    async with Client(build_sqlite_module([folder])) as client:
        listed = await client.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in listed]


@asynccontextmanager
async def _navigator(tmp_path: Path) -> AsyncIterator[Client[Any]]:
    """A navigator over db1, db2 (sqlite and the node seat), web1 (the node seat and the notes
    seat) and vault, for alice: db1 but its describe_table, the node seat everywhere, the notes
    seat, db2's list_tables — and nothing of vault."""
    folder = tmp_path / "dbs"
    folder.mkdir()
    sqlite_tools = await _sqlite_tools(folder)
    async with navigator_at(tmp_path) as services:
        put = services.registrar.put_assignment
        for machine in ("db1", "db2"):
            await put(machine, AssignmentSpec("sqlite", "sqlite", sqlite_tools, endpoint=NOBODY))
        for machine in ("db1", "db2", "web1"):
            spec = AssignmentSpec("node", "node", [UPTIME], endpoint=NOBODY, kind="node_seat")
            await put(machine, spec)
        await put("db1", AssignmentSpec("tools", "x", [WIPE], endpoint=NOBODY))
        await put("web1", AssignmentSpec("notes", "x", [READ], endpoint=NOBODY, seat="notes"))
        await put("vault", AssignmentSpec("keys", "x", [READ_KEY], endpoint=NOBODY))
        with services.registry.transaction() as session:
            access = AccessStore(session)
            for target in ("db1", "*/node/*", "mesh/notes", "db2/sqlite/list_tables"):
                access.grant("alice", target, effect="allow")
            access.grant("alice", "db1/sqlite/describe_table", effect="deny")
        async with walker_client(services, ALICE) as client:
            yield client


def _mismatches(bad: Bad, answer: dict[str, Any], wire: str) -> list[str]:
    found = []
    if answer.get("error") != bad.code:
        found.append(f"code {answer.get('error')!r}")
    if answer.get("pointer") != bad.pointer:
        found.append(f"pointer {answer.get('pointer')!r}")
    message = str(answer.get("message", ""))
    found += [f"message lacks {words!r}: {message}" for words in bad.says if words not in message]
    found += [f"{k} {answer.get(k)!r}" for k, v in bad.extra.items() if answer.get(k) != v]
    if bad.rejected in wire:
        found.append(f"the answer repeats {bad.rejected!r}")
    if bad.rejected != CANARY and CANARY in wire:
        found.append("the answer repeats the canary")
    if (
        set(answer)
        - {"error", "status", "message", "pointer", "keyword", "confirm"}
        - set(bad.extra)
    ):
        found.append(f"fields {sorted(answer)}")
    return found


def test_the_table_is_an_agents_worth_of_mistakes() -> None:
    assert len(TABLE) >= 40
    assert all(CANARY in json.dumps(bad.arguments) or bad.rejected != CANARY for bad in TABLE)
    assert {bad.tool for bad in TABLE} == set(WALKER_TOOLS)


async def test_every_bad_input_is_answered_with_where_why_and_what_next(tmp_path: Path) -> None:
    """Each row's answer: SPEC §9's body with the code, the pointer, the words naming the next
    step, the extra fields, and neither the rejected text nor the canary anywhere in it."""
    failures = []
    async with _navigator(tmp_path) as client:
        for bad in TABLE:
            result = await client.call_tool_mcp(bad.tool, bad.arguments)
            assert result.is_error, bad.why
            answer = result.structured_content or {}
            wire = json.dumps(answer) + "".join(getattr(b, "text", "") for b in result.content)
            assert (result.meta or {}).get("meshnav/error") == answer.get("error"), bad.why
            failures += [f"{bad.why}: {m}" for m in _mismatches(bad, answer, wire)]
    assert failures == [], "\n".join(failures)


def test_the_names_pointed_at_as_given_are_the_walker_tools_arguments() -> None:
    declared = {
        name for _, spec in WALKER_TOOLS.values() for name in spec["parameters"]["properties"]
    }
    assert declared == WALKER_ARGUMENTS


# -- the existence rule (ADR 0035), for random grants ----------------------------------------

#: The addresses asked: ``small_mesh``'s segments (``test_walk``'s grants name them), and a
#: holder, a role and a tool no grant names.
HOLDERS = [*WALK_HOLDERS, "vault"]
ROLES = [*WALK_ROLES, "keys"]
TOOL_NAMES = [*WALK_TOOLS, "nope"]


#: Tools the second catalogue holds beyond ``small_mesh``: at addresses of the grid above.
EXTRA = ["vault/keys/query", "vault/keys/drop", "db1/pg/run"]


def _extra(store: CatalogStore) -> None:
    store.put_assignment("vault", "keys", module="x", tools=tools("query", "drop"))
    store.put_assignment("db1", "pg", module="postgres", tools=tools("query", "drop", "run"))


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Catalog, Catalog]]:
    with (
        small_mesh_view(tmp_path_factory.mktemp("less")) as less,
        small_mesh_view(tmp_path_factory.mktemp("more"), _extra) as more,
    ):
        yield less, more


async def _outcome(navigator: Navigator, caller: Caller, op: str, address: str) -> Any:
    """What ``op`` answers for ``address``: the error (its code, message and extra fields), or
    ``"ran"`` when the tool was reached (a described contract, a call as far as its node)."""
    try:
        if op == "describe":
            await navigator.describe(caller, address)
        else:
            await navigator.call(caller, address, {}, confirm=None, elicitor=None, progress=None)
    except NodeUnavailable:
        return "ran"
    except NavigatorError as error:
        return (type(error), error.message, json.dumps(error.extra, sort_keys=True))
    return "ran"


def _outcomes(catalog: Catalog, caller: Caller) -> dict[tuple[str, str], Any]:
    navigator = Navigator(catalog.registry, catalog, NodeConnections(), deadline_s=1)

    async def every() -> dict[tuple[str, str], Any]:
        return {
            (op, address): await _outcome(navigator, caller, op, address)
            for op in ("describe", "call")
            for address in (f"{h}/{r}/{t}" for h in HOLDERS for r in ROLES for t in TOOL_NAMES)
        }

    return asyncio.run(every())


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=GRANT_ROWS)
def test_outside_its_grants_a_caller_learns_nothing_of_what_exists(
    catalogs: tuple[Catalog, Catalog], rows: list[tuple[str, str, str, tuple[str, ...]]]
) -> None:
    """Where no allow row of the caller matches an address, describe and call answer
    tool_not_granted, and the same whether a tool is there or not: tools added where the caller
    may call none of them change no answer. Where one does, a missing tool is unknown_tool, an
    existing one reached or refused as the grants decide; every suggestion is an address the
    caller may call."""
    records = tuple(
        GrantRecord(n, principal, target, scopes, effect, n)
        for n, (principal, target, effect, scopes) in enumerate(rows, start=1)
    )
    caller = Caller("alice", frozenset({"ops"}), grants=GrantSnapshot(len(records), records))
    less, more = catalogs
    permissions = compile_permissions(caller, caller.grants)
    seen_less, seen_more = _outcomes(less, caller), _outcomes(more, caller)
    none_extra_callable = not any(permissions.permits(address) for address in EXTRA)
    for (op, address), outcome in seen_less.items():
        holder, role, tool = address.split("/")
        exists = less.find_tool(address) is not None
        if outcome != "ran":
            suggested = json.loads(outcome[2]).get("suggestions", [])
            assert all(permissions.permits(s) for s in suggested), (address, suggested)
        if not any(
            rule.allow and rule.pattern.matches(holder, role, tool) for rule in permissions._rules
        ):
            assert outcome[0] is ToolNotGranted, (op, address, exists)
            if none_extra_callable:
                assert seen_more[(op, address)] == outcome, (op, address)
        elif not exists:
            assert outcome[0] is UnknownTool, (op, address)
        elif permissions.permits(address):
            assert outcome == "ran", (op, address)
        else:
            assert outcome[0] is ToolNotGranted, (op, address)


# ---- the database's own error, passed on: the caller's own query on the caller's own machine ----


@dataclass(frozen=True)
class SqlMistake:
    """A mistake in an agent's SQL: the message must name the next step and carry the database's
    own words, and must repeat neither the parameter nor a file path of the node."""

    why: str
    sql: str
    says: tuple[str, ...]


SQL_MISTAKES = [
    SqlMistake(
        "a table that is not there",
        "SELECT * FROM nosuchtable WHERE name = ?",
        ("no such table: nosuchtable", "check"),
    ),
    SqlMistake(
        "a keyword misspelt",
        "SELEC name FROM products WHERE name = ?",
        ('near "SELEC": syntax error', "check"),
    ),
    SqlMistake(
        "a column that is not there",
        "SELECT nosuchcolumn FROM products WHERE name = ?",
        ("no such column: nosuchcolumn",),
    ),
]
PG_MISTAKES = [
    SqlMistake(
        "a table that is not there",
        "SELECT * FROM nosuchtable WHERE name = %s",
        ('relation "nosuchtable" does not exist',),
    ),
    SqlMistake(
        "a keyword misspelt",
        "SELEC name FROM products WHERE name = %s",
        ('syntax error at or near "SELEC"',),
    ),
    SqlMistake(
        "a column that is not there",
        "SELECT nosuchcolumn FROM products WHERE name = %s",
        ('column "nosuchcolumn" does not exist',),
    ),
]


def _database_error(text: str, mistake: SqlMistake, folder: str) -> list[str]:
    found = [f"missing {words!r}" for words in mistake.says if words not in text]
    if CANARY in text:
        found.append("repeats the parameter")
    if folder in text:
        found.append("names the node's files")
    if len(text) > 600:
        found.append(f"{len(text)} characters")
    return found


async def test_a_sqlite_error_is_the_databases_own_bounded_and_names_the_next_step(
    tmp_path: Path,
) -> None:
    with sqlite3.connect(tmp_path / "inventory.db") as conn:
        conn.execute("CREATE TABLE products (name TEXT)")
    wrong: dict[str, list[str]] = {}
    async with Client(build_sqlite_module([tmp_path])) as client:
        for mistake in SQL_MISTAKES:
            args = {"database": "inventory", "sql": mistake.sql, "params": [CANARY]}
            result = await client.call_tool("query", args, raise_on_error=False)
            assert result.is_error, mistake.why
            text = str(result.content[0].text)  # type: ignore[union-attr]
            if found := _database_error(text, mistake, str(tmp_path)):
                wrong[mistake.why] = found
    assert not wrong, wrong


@pytest.mark.postgres
@pytest.mark.xdist_group("postgres")
async def test_a_postgres_error_is_the_databases_own_bounded_and_names_the_next_step(
    postgres_server: Any,
) -> None:
    from mesh.modules.postgres import build_postgres_module

    dsn = postgres_server.create_database("answers_shop", "CREATE TABLE products (name text)")
    wrong: dict[str, list[str]] = {}
    try:
        module = build_postgres_module(dsn, statement_timeout_s=5, allow_privileged_role=True)
        async with Client(module) as client:
            for mistake in PG_MISTAKES:
                args = {"sql": mistake.sql, "params": [CANARY]}
                result = await client.call_tool("query", args, raise_on_error=False)
                assert result.is_error, mistake.why
                text = str(result.content[0].text)  # type: ignore[union-attr]
                if found := _database_error(text, mistake, str(postgres_server.data_dir)):
                    wrong[mistake.why] = found
    finally:
        postgres_server.execute("DROP DATABASE answers_shop WITH (FORCE)")
    assert not wrong, wrong
