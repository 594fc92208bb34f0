"""A node principal cannot grow the registry without bound (issue 26, item 6; ADR 0032).

Re-registrations under fresh role names left 102 retired assignments and ~5,000 retired tool
rows (4 → 58 MiB): each name left a retired row, and its tools, for good.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx

from navigator.access.tokens import hash_token, mint_token
from navigator.app import build_app
from navigator.settings import NavigatorSettings
from registry import AccessStore, CatalogStore

ADVERTISE = "http://10.0.0.1:7801"


def _tools(count: int) -> list[dict[str, Any]]:
    return [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(count)]


def _registration(*roles: str, tools: int = 2) -> dict[str, Any]:
    assignments = [{"role": r, "module": "stdio", "tools": _tools(tools)} for r in roles]
    return {"machine": "db1", "advertise": ADVERTISE, "heartbeatS": 5, "assignments": assignments}


@asynccontextmanager
async def node_api(tmp_path: Path, **settings: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Any]]:
    """An in-process navigator on ``tmp_path``'s registry, and a client speaking as a node."""
    app = build_app(NavigatorSettings(database_url=f"sqlite:///{tmp_path / 'r.db'}", **settings))
    async with app.router.lifespan_context(app):
        services = app.state.meshnav
        token = mint_token()

        def principal(session: Any) -> None:
            store = AccessStore(session)
            if not any(p.name == "node" for p in store.principals()):
                store.add_principal("node", scopes=["mesh:node"], token_hash=hash_token(token))
            else:
                store.rotate_principal("node", token_hash=hash_token(token))

        await services.transact(principal)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            client.headers["Authorization"] = f"Bearer {token}"
            yield client, services


async def _rows(services: Any) -> tuple[int, int]:
    """db1's assignments and tools in the registry, retired ones included."""
    held = await services.read(lambda session: CatalogStore(session).assignments("db1"))
    return len(held), sum(len(a.tools) for a in held)


async def test_re_registering_under_fresh_names_stays_within_the_bound(tmp_path: Path) -> None:
    async with node_api(tmp_path, node_max_assignments=4, node_max_tools=12) as (client, services):
        for round_ in range(12):
            answer = await client.post("/api/v1/nodes/register", json=_registration(f"r{round_}"))
            assert answer.status_code == 200, answer.text
        rows = await _rows(services)
        latest = await services.read(lambda session: CatalogStore(session).assignment("db1", "r11"))
    assert rows == (4, 8)  # the live one and the three retired last; not 12 and 24
    assert not latest.retired


async def test_a_node_past_its_bound_is_answered_conflict_and_nothing_changes(
    tmp_path: Path,
) -> None:
    async with node_api(tmp_path, node_max_assignments=4, node_max_tools=12) as (client, services):
        first = await client.post("/api/v1/nodes/register", json=_registration("a", "b"))
        too_many = await client.post(
            "/api/v1/nodes/register", json=_registration("a", "b", "c", "d", "e")
        )
        too_big = await client.post("/api/v1/nodes/register", json=_registration("a", tools=13))
        pushed = await client.put(
            "/api/v1/nodes/db1/assignments/c",
            json={
                "advertise": ADVERTISE,
                "assignment": _registration("c", tools=9)["assignments"][0],
            },
        )
        rows = await _rows(services)
    assert first.status_code == 200, first.text
    for answer in (too_many, too_big, pushed):
        assert answer.status_code == 409, answer.text
        body = answer.json()
        assert body["error"] == "conflict"
        assert "MESHNAV_NODE_MAX_ASSIGNMENTS" in body["message"]
        assert "MESHNAV_NODE_MAX_TOOLS" in body["message"]
    assert rows == (2, 4)


async def test_the_navigator_prunes_retired_assignments_past_their_retention(
    tmp_path: Path,
) -> None:
    async with node_api(tmp_path) as (client, services):
        for role in ("old", "new"):
            answer = await client.post("/api/v1/nodes/register", json=_registration(role))
            assert answer.status_code == 200, answer.text
        assert await _rows(services) == (2, 4)  # "old" retired, kept for its retention
    await anyio.sleep(0.2)
    # the next start of a navigator keeping retired rows a tenth of a second prunes "old"
    async with node_api(tmp_path, retired_retention_days=0.1 / 86400) as (_client, services):
        with anyio.fail_after(10):
            while await _rows(services) != (1, 2):
                await anyio.sleep(0.05)
        with anyio.fail_after(10):  # and its own view lets it go, from the change log
            while services.catalog.assignment("db1", "old") is not None:
                await anyio.sleep(0.05)
        assert services.catalog.assignment("db1", "new") is not None
