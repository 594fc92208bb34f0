"""What a registration writes besides the catalogue: the ``*`` row of ``--grant-scope-holders``
(SPEC §4)."""

from __future__ import annotations

import itertools
from pathlib import Path

import anyio
import psycopg
import pytest
from sqlalchemy.orm import Session

from navigator.access.tokens import hash_token, mint_token
from navigator.catalog.registrar import MAX_DEFINITION_DEPTH, NOT_JSON, TOO_DEEP, AssignmentSpec
from navigator.mcp.server import running
from navigator.services import Services
from navigator.settings import NavigatorSettings
from registry import AccessStore, CatalogStore, RegistryUnavailable
from registry.catalog import CATALOG_WRITES_LOCK
from tests.navigator.inprocess import LosingRegistry, navigator_at
from tests.postgres_server import PostgresServer

TOOLS = [{"name": "lookup", "description": "Look a thing up.", "inputSchema": {"type": "object"}}]


async def test_the_scope_holders_row_follows_the_modules_scopes(tmp_path: Path) -> None:
    """Registered again with other scopes, the module's ``*`` row takes them: the holders of a
    scope it no longer declares lose the tools (the row used to be kept beside the new one)."""
    async with navigator_at(tmp_path) as services:

        async def register(scopes: list[str]) -> list[tuple[str, str, tuple[str, ...]]]:
            spec = AssignmentSpec(role="books", module="books", tools=TOOLS, scopes=scopes)
            await services.registrar.put_assignment("m1", spec, grant_scope_holders=True)
            rows = await services.transact(lambda session: AccessStore(session).grants("*"))
            return [(row.effect, row.target, row.scopes) for row in rows]

        await services.transact(
            lambda session: AccessStore(session).grant("*", "m1/books/*", effect="deny")
        )
        first = await register(["team:a"])
        again = await register(["team:a"])
        changed = await register(["team:b"])
    assert first == again == [("deny", "m1/books/*", ()), ("allow", "m1/books/*", ("team:a",))]
    assert changed == [("deny", "m1/books/*", ()), ("allow", "m1/books/*", ("team:b",))]


async def test_a_module_registered_again_declaring_no_scopes_keeps_no_scope_holders_row(
    tmp_path: Path,
) -> None:
    """Registered again with ``--grant-scope-holders`` and no scopes, the module keeps no ``*``
    row (an unscoped one would grant its tools to everyone), and the row an earlier
    registration wrote for ``team:a`` goes with the scope: it was kept, and the holders of a
    scope the module no longer declares kept its tools."""
    async with navigator_at(tmp_path) as services:

        async def register(scopes: list[str]) -> tuple[list[tuple[str, str, tuple[str, ...]]], int]:
            spec = AssignmentSpec(role="books", module="books", tools=TOOLS, scopes=scopes)
            await services.registrar.put_assignment("m1", spec, grant_scope_holders=True)

            def read(session: Session) -> tuple[list[tuple[str, str, tuple[str, ...]]], int]:
                rows = AccessStore(session).grants("*")
                revision = CatalogStore(session).revision("grants")
                return [(row.effect, row.target, row.scopes) for row in rows], revision

            return await services.transact(read)

        first, before = await register(["team:a"])
        none, after = await register([])
    assert first == [("allow", "m1/books/*", ("team:a",))]
    assert none == []
    assert after > before  # a grant change moves the grant revision (SPEC §4)


async def test_a_tool_json_cannot_carry_is_refused_and_the_rest_registered(tmp_path: Path) -> None:
    """A definition holding NaN (which Python's JSON reader takes from a body), a lone surrogate
    or an integer past 2^53 has no contract digest: the digest's error failed the whole
    registration with a plain-text 500. That one tool is refused, as a bad name is."""
    odd = {
        "nan": {"type": "object", "properties": {"n": {"type": "number", "maximum": float("nan")}}},
        "infinity": {"type": "object", "properties": {"n": {"maximum": float("inf")}}},
        "big": {"type": "object", "properties": {"n": {"maximum": 2**60}}},
    }
    tools = [
        *({"name": name, "inputSchema": schema} for name, schema in odd.items()),
        {"name": "surrogate", "description": "a\ud800b", "inputSchema": {"type": "object"}},
        {"name": "elsewhere", "inputSchema": {"type": "object"}, "x-note": float("nan")},
        *TOOLS,
    ]
    async with navigator_at(tmp_path) as services:
        spec = AssignmentSpec(role="books", module="books", tools=tools)
        result = await services.registrar.put_assignment("m1", spec)
        live = sorted(tool.address for tool in services.catalog.tools())
    assert result.registered == ["m1/books/lookup"]
    assert result.refused == [
        {"name": name, "reason": NOT_JSON}
        for name in ("nan", "infinity", "big", "surrogate", "elsewhere")
    ]
    assert live == ["m1/books/lookup"]


async def test_a_tool_whose_annotations_are_not_an_object_is_refused(tmp_path: Path) -> None:
    """MCP's annotations are an object; read as one, a list or a string broke the tool's title
    (and every search that met it). Refused as a non-object inputSchema is; absent or null is
    none."""
    odd = {"list": ["readOnlyHint"], "text": "read only", "empty": [], "no": False}
    tools = [
        *({"name": name, "annotations": value, "inputSchema": {}} for name, value in odd.items()),
        {"name": "none", "annotations": None, "inputSchema": {"type": "object"}},
        {"name": "hinted", "annotations": {"title": "Hinted"}, "inputSchema": {"type": "object"}},
    ]
    async with navigator_at(tmp_path) as services:
        spec = AssignmentSpec(role="books", module="books", tools=tools)
        result = await services.registrar.put_assignment("m1", spec)
        titles = {tool.name: tool.title for tool in services.catalog.tools()}
    assert result.refused == [
        {"name": name, "reason": "annotations is not an object"} for name in odd
    ]
    assert titles == {"none": "none", "hinted": "Hinted"}  # no title: the name


async def test_a_nodes_changed_tool_list_leaves_its_calls_in_flight_alone(tmp_path: Path) -> None:
    """A node pushing a changed tool list (a database file appeared, a wrapped server changed
    its tools) closed the navigator's client to that endpoint, and with it every call in flight
    there: a healthy node's long call answered node_unavailable. The node did not restart; its
    endpoint and the client's connections to it are as good as before."""
    from tests.navigator.nodes.test_nodes import _serving

    async with navigator_at(tmp_path) as services, _serving() as url:

        def spec(*names: str) -> AssignmentSpec:
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in names]
            return AssignmentSpec(role="work", module="stdio", tools=tools, endpoint=url)

        await services.registrar.put_assignment("m1", spec("sleep"), by_node=True)
        outcome: list[str] = []

        async def long_call() -> None:
            try:
                result = await services.connections.call(
                    url, "sleep", {"seconds": 1.5}, token=None, deadline_s=30
                )
                content = result.content[0]
                outcome.append(getattr(content, "text", ""))
            except Exception as error:  # the outcome is what is compared
                outcome.append(type(error).__name__)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(long_call)
            await anyio.sleep(0.5)
            await services.registrar.put_assignment("m1", spec("sleep", "echo"), by_node=True)
    assert outcome == ["slept"]


async def test_a_tool_nested_past_the_bound_is_refused_and_the_rest_registered(
    tmp_path: Path,
) -> None:
    """A review: a definition nested some 250 levels deep or more was registered, and then every
    answer carrying it — ``describe``, ``search`` with ``schemas`` — failed as internal_error
    (the answer's serialiser stops at 255 levels). A definition may nest 128 levels; one deeper
    is refused alone, its reason naming the bound."""
    deep: dict[str, object] = {"type": "object"}
    for _ in range(MAX_DEFINITION_DEPTH):
        deep = {"type": "object", "properties": {"x": deep}}
    fits: dict[str, object] = {"type": "object"}
    for _ in range((MAX_DEFINITION_DEPTH - 2) // 2 - 1):
        fits = {"type": "object", "properties": {"x": fits}}
    tools = [
        {"name": "deep", "inputSchema": deep},
        {"name": "fits", "inputSchema": fits},
        {"name": "listed", "inputSchema": {"type": "object"}, "x-list": _nested_list(128)},
        *TOOLS,
    ]
    async with navigator_at(tmp_path) as services:
        spec = AssignmentSpec(role="books", module="books", tools=tools)
        result = await services.registrar.put_assignment("m1", spec)
        live = sorted(tool.address for tool in services.catalog.tools())
    assert result.registered == ["m1/books/fits", "m1/books/lookup"]
    assert result.refused == [{"name": name, "reason": TOO_DEEP} for name in ("deep", "listed")]
    assert live == ["m1/books/fits", "m1/books/lookup"]


def _nested_list(levels: int) -> list[object]:
    nested: list[object] = []
    for _ in range(levels):
        nested = [nested]
    return nested


async def test_a_change_that_committed_is_answered_as_made_though_its_read_back_fails(
    tmp_path: Path,
) -> None:
    """The registry lost between the commit and this navigator's read of the change log: the
    registration answered ``registry_unavailable`` for a change it had made. It answers what it
    registered, and the follower applies the change from the log when the registry answers."""
    async with navigator_at(tmp_path, registry=LosingRegistry) as services:
        registry = services.registry
        assert isinstance(registry, LosingRegistry)
        registry.lost = 1
        spec = AssignmentSpec(role="books", module="books", tools=TOOLS)
        result = await services.registrar.put_assignment("m1", spec)
        assert registry.lost == 0  # the read back did fail
        with anyio.fail_after(10):  # the follower's turn comes within a second
            while not (live := sorted(tool.address for tool in services.catalog.tools())):
                await anyio.sleep(0.05)
    assert result.registered == live == ["m1/books/lookup"]


@pytest.mark.postgres
async def test_catalogue_writers_waiting_their_turn_leave_the_pool_to_the_reads(
    postgres_server: PostgresServer,
) -> None:
    """Catalogue writers commit one at a time (the advisory lock, ADR 0008). While another
    navigator held it, each registration of this one waited for it on a pooled connection: a
    burst of them held the whole pool, and every request's token and grant read found no
    connection and was answered ``registry_unavailable``, the registry healthy all along."""
    url = postgres_server.create_database("writers_turn")
    services = Services.create(NavigatorSettings(database_url=url))
    token = mint_token()
    spec = AssignmentSpec(role="books", module="books", tools=TOOLS)
    async with running(services):
        await services.transact(
            lambda session: AccessStore(session).add_principal(
                "alice", scopes=[], token_hash=hash_token(token)
            )
        )
        other = psycopg.connect(postgres_server.dsn("writers_turn"))  # another navigator's writer
        other.execute("SELECT pg_advisory_xact_lock(%s)", (CATALOG_WRITES_LOCK,))
        launched: list[str] = []
        failed: list[str] = []

        async def register(machine: str) -> None:
            launched.append(f"{machine}/books/lookup")
            try:
                await services.registrar.put_assignment(machine, spec)
            except RegistryUnavailable:
                failed.append(machine)

        read = ""

        async def storm() -> None:  # nodes registering, more as they come, while the read runs
            async with anyio.create_task_group() as tasks:
                for n in itertools.count():
                    if read:
                        return
                    tasks.start_soon(register, f"m{n}")
                    await anyio.sleep(0.05)

        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(storm)
                await anyio.sleep(3.0)  # more writers waiting their turn than the pool holds
                try:
                    read = (await services.authenticator.verify(token)).principal
                except RegistryUnavailable:
                    read = "registry_unavailable"
                other.rollback()  # the other navigator's change is done: this one's go in turn
        finally:
            other.close()
    assert read == "alice"
    assert failed == []
    assert sorted(tool.address for tool in services.catalog.tools()) == sorted(launched)
