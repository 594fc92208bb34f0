"""Paging and cursors (SPEC §3 Cursors; issue 4, acceptance 4): every change to what a cursor is
bound to makes it ``invalid_cursor``; pages hold whole entries and whole schemas only."""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client

from navigator.access.grants import Caller
from navigator.catalog.registrar import AssignmentSpec
from navigator.catalog.view import Catalog
from navigator.errors import InvalidCursor
from navigator.services import Services
from navigator.walker.operations import Navigator
from navigator.walker.seats import authorised_contracts, walk
from registry import AccessStore
from tests.navigator.inprocess import navigator_at, walker_client

ALICE = Caller("alice", frozenset())


def _tools(count: int, padding: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "name": f"rotate_logs_{i}",
            "description": f"Rotate the access logs of site {i}.",
            "inputSchema": {
                "type": "object",
                "properties": {"site": {"type": "string", "description": "x" * padding}},
            },
        }
        for i in range(count)
    ]


class Mesh:
    def __init__(self, services: Services) -> None:
        self.services = services

    async def register(self, machine: str, role: str, tools: list[dict[str, Any]]) -> None:
        await self.services.registrar.put_assignment(
            machine, AssignmentSpec(role=role, module=role, tools=tools)
        )

    def grant(self, target: str, effect: str = "allow") -> int:
        with self.services.registry.transaction() as session:
            return AccessStore(session).grant("alice", target, effect=effect).id

    def client(self) -> Client[Any]:
        return walker_client(self.services, ALICE)


@asynccontextmanager
async def mesh_at(tmp_path: Path, **navigator: Any) -> AsyncIterator[Mesh]:
    """A navigator in this task (its task group must open and close in one task); ``navigator``
    are collaborators of its ``Navigator``."""
    maker = functools.partial(Navigator, **navigator)
    async with navigator_at(tmp_path, navigator=maker, cursor_ttl_s=2.0) as services:
        found = Mesh(services)
        found.grant("*/*/*")
        await found.register("web1", "logs", _tools(20))
        yield found


async def _call(client: Client[Any], tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool_mcp(tool, arguments)
    structured: dict[str, Any] = result.structured_content or {}
    return structured


async def test_pages_cover_everything_once_in_order(tmp_path: Path) -> None:
    async with mesh_at(tmp_path) as mesh:
        async with mesh.client() as client:
            seen: list[str] = []
            page = await _call(client, "search", {"query": "rotate logs", "limit": 6})
            while True:
                seen += [r["address"] for r in page["results"]]
                if "nextCursor" not in page:
                    break
                page = await _call(
                    client,
                    "search",
                    {"query": "rotate logs", "limit": 6, "cursor": page["nextCursor"]},
                )
            ranked = mesh.services.catalog.index.search(
                "rotate logs", permits=lambda _address: True, limit=20
            )
        assert seen == [hit.address for hit in ranked.hits]  # all 20, once, in rank order


@pytest.mark.parametrize(
    "change",
    [
        "tampered",
        "not ascii",
        "other query",
        "grant change",
        "contract change",
        "retired",
        "expired",
    ],
)
async def test_cursor_bindings(tmp_path: Path, change: str) -> None:
    async with mesh_at(tmp_path) as mesh:
        arguments = {"query": "rotate logs", "limit": 6}
        async with mesh.client() as client:
            first = await _call(client, "search", arguments)
            cursor = first["nextCursor"]
            if change == "tampered":  # another offset: valid, bound alike; only the signature
                body, _, signature = cursor.partition(".")
                payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
                payload["o"] += 1
                forged = json.dumps(payload, separators=(",", ":")).encode()
                body = base64.urlsafe_b64encode(forged).rstrip(b"=").decode("ascii")
                cursor = body + "." + signature
            elif change == "not ascii":  # compare_digest takes ASCII only
                cursor = cursor.partition(".")[0] + ".é"
            elif change == "other query":
                arguments = {**arguments, "query": "rotate"}
            elif change == "grant change":
                mesh.grant("web1/logs/rotate_logs_0", "deny")
            elif change == "contract change":
                await mesh.register("web1", "logs", _tools(20, padding=1))
            elif change == "retired":
                await mesh.services.registrar.retire("web1", "logs")
            elif change == "expired":
                await anyio.sleep(2.2)
            answer = await _call(client, "search", {**arguments, "cursor": cursor})
        assert answer["error"] == "invalid_cursor"


@pytest.mark.parametrize("change", ["registered", "contract change", "retired", "machine retired"])
async def test_a_cursor_outlives_changes_to_tools_the_caller_may_not_call(
    tmp_path: Path, change: str
) -> None:
    """A cursor binds the contracts of the tools its caller may call (SPEC §3): a change to
    others leaves it valid — an invalid_cursor would tell the caller that something it cannot
    see changed — and the pages still hold every tool once, in rank order."""
    async with mesh_at(tmp_path) as mesh:
        mesh.grant("web9/*/*", "deny")
        mesh.grant("web1/logs/rotate_logs_3", "deny")  # web1/logs is read tool by tool
        if change != "registered":
            await mesh.register("web9", "logs", _tools(20))
        arguments = {"query": "rotate logs", "limit": 6}
        async with mesh.client() as client:
            first = await _call(client, "search", arguments)
            if change == "registered":
                await mesh.register("web9", "logs", _tools(20))
            elif change == "contract change":
                await mesh.register("web9", "logs", _tools(20, padding=1))
            elif change == "retired":
                await mesh.services.registrar.retire("web9", "logs")
            elif change == "machine retired":
                await mesh.services.registrar.retire("web9", None)
            pages = [first]
            while "nextCursor" in pages[-1]:
                cursor = pages[-1]["nextCursor"]
                pages.append(await _call(client, "search", {**arguments, "cursor": cursor}))
            assert "error" not in pages[-1]
        seen = [result["address"] for page in pages for result in page["results"]]
        expected = [f"web1/logs/rotate_logs_{i}" for i in range(20) if i != 3]
        assert sorted(seen) == sorted(expected) and len(seen) == len(set(seen))


async def test_a_cursor_ends_when_a_tool_the_caller_may_call_arrives(tmp_path: Path) -> None:
    async with mesh_at(tmp_path) as mesh:
        async with mesh.client() as client:
            first = await _call(client, "search", {"query": "rotate logs", "limit": 6})
            await mesh.register("web2", "logs", _tools(1))
            answer = await _call(
                client,
                "search",
                {"query": "rotate logs", "limit": 6, "cursor": first["nextCursor"]},
            )
        assert answer["error"] == "invalid_cursor"


async def test_seats_pages_after_a_kind_change_hold_every_entry_once(tmp_path: Path) -> None:
    """An assignment registered again as a node seat, same tools and contracts, adds "*/r0" to
    the top of seats: a change the caller sees, so its cursor ends — else, once the listing is
    no longer kept, page 2 is walked again on the new view and repeats an entry (a review)."""
    async with mesh_at(tmp_path) as mesh:
        navigator, registrar = mesh.services.navigator, mesh.services.registrar
        await registrar.put_assignment("m00", AssignmentSpec("r0", "r0", _tools(1)))
        for role in ("r1", "r2", "r3", "r4", "r5", "r6"):
            await registrar.put_assignment(
                "m00", AssignmentSpec(role, role, _tools(1), kind="node_seat")
            )
        small = 2300  # four entries a page
        first = await navigator.seats(ALICE, None, None, answer_bytes=small)
        assert "nextCursor" in first
        await registrar.put_assignment(
            "m00", AssignmentSpec("r0", "r0", _tools(1), kind="node_seat")
        )
        for _ in range(16):  # sixteen listings paged since: the first is no longer kept
            await navigator.seats(ALICE, None, None, answer_bytes=small)
        with pytest.raises(InvalidCursor):
            await navigator.seats(ALICE, None, first["nextCursor"], answer_bytes=small)


async def test_a_page_without_a_cursor_reads_no_authorised_contracts(tmp_path: Path) -> None:
    """Only a page that opens or issues a cursor reads what a cursor binds (ADR 0028): a walk of
    the assignments for an administrator at 100,000 tools."""
    read: list[object] = []

    def counted(*args: Any) -> str:
        read.append(args)
        return authorised_contracts(*args)

    async with mesh_at(tmp_path, authorised_contracts=counted) as mesh:
        async with mesh.client() as client:
            one = {"query": "rotate logs", "within": "web1/logs/rotate_logs_3"}
            whole = await _call(client, "search", one)
            assert len(whole["results"]) == 1 and "nextCursor" not in whole
            assert not read
            first = await _call(client, "search", {"query": "rotate logs", "limit": 6})
            assert "nextCursor" in first and len(read) == 1
            await _call(
                client,
                "search",
                {"query": "rotate logs", "limit": 6, "cursor": first["nextCursor"]},
            )
        assert len(read) == 1  # read once per grant set and view, then kept


async def test_a_restart_invalidates_cursors(tmp_path: Path) -> None:
    cursors = []
    for _ in range(2):
        async with navigator_at(tmp_path) as services:
            mesh = Mesh(services)
            if not cursors:
                mesh.grant("*/*/*")
                await mesh.register("web1", "logs", _tools(20))
            async with mesh.client() as client:
                if cursors:
                    answer = await _call(
                        client, "search", {"query": "rotate logs", "limit": 6, "cursor": cursors[0]}
                    )
                    assert answer["error"] == "invalid_cursor"
                else:
                    cursors.append(
                        (await _call(client, "search", {"query": "rotate logs", "limit": 6}))[
                            "nextCursor"
                        ]
                    )


async def test_seats_pages_with_a_cursor(tmp_path: Path) -> None:
    """Later pages are slices of the listing the first page walked: the top of ``seats`` walks
    every machine, tens of milliseconds at 100,000 tools for each page."""
    walks: list[object] = []

    def counted(*args: Any) -> dict[str, Any]:
        walks.append(args)
        return walk(*args)

    async with mesh_at(tmp_path, walk=counted) as mesh:
        for i in range(120):
            await mesh.register(f"m{i:03d}", "logs", _tools(1))
        async with mesh.client() as client:
            first = await _call(client, "seats", {})
            second = await _call(client, "seats", {"cursor": first["nextCursor"]})
            again = await _call(client, "seats", {})
        addresses = [e["address"] for e in first["entries"] + second["entries"]]
        assert len(addresses) == len(set(addresses)) == 121
        assert "nextCursor" not in second
        assert len(walks) == 2  # the first page of each listing, and no other
        assert again["entries"] == first["entries"]


async def test_a_page_never_splits_a_schema_and_stays_under_64_kib(tmp_path: Path) -> None:
    async with mesh_at(tmp_path) as mesh:
        await mesh.register("big1", "docs", _tools(16, padding=9_000))
        async with mesh.client() as client:
            page = await client.call_tool_mcp(
                "search", {"query": "rotate logs", "limit": 16, "schemas": True, "within": "big1"}
            )
            wire = page.model_dump_json(by_alias=True, exclude_none=True)
            results = (page.structured_content or {})["results"]
            assert 0 < len(results) < 16 and "nextCursor" in (page.structured_content or {})
            assert len(wire.encode()) + 200 < 64 * 1024
            for result in results:
                assert len(result["inputSchema"]["properties"]["site"]["description"]) == 9_000


async def test_a_schema_that_cannot_fit_is_tool_schema_too_large(tmp_path: Path) -> None:
    async with mesh_at(tmp_path) as mesh:
        await mesh.register("huge1", "docs", _tools(1, padding=70_000))
        async with mesh.client() as client:
            searched = await _call(
                client, "search", {"query": "rotate logs", "schemas": True, "within": "huge1"}
            )
            described = await _call(client, "describe", {"address": "huge1/docs/rotate_logs_0"})
        assert searched["error"] == "tool_schema_too_large"
        assert described["error"] == "tool_schema_too_large"
        assert "x" * 100 not in json.dumps(searched)


async def test_a_cursor_ends_when_its_view_changes_before_a_catch_up_is_done(
    tmp_path: Path,
) -> None:
    """A catch-up applies its machines one by one, with awaits between, and moves the catalogue
    revision only at the end: a page taken in between was ranked on a half-changed view with a
    cursor still valid (duplicates or gaps, not ``invalid_cursor``)."""
    async with mesh_at(tmp_path) as mesh:
        services = mesh.services
        view = Catalog(services.registry)  # a view only this test moves
        await view.load()
        navigator = Navigator(services.registry, view, services.connections, deadline_s=5.0)

        async def search(cursor: str | None) -> dict[str, Any]:
            answer, _meta = await navigator.search(
                ALICE, "rotate logs", limit=6, within=None, schemas=False, cursor=cursor
            )
            return answer

        first = await search(None)
        await mesh.register("web2", "logs", _tools(20))
        revision = view.revision
        await view._reload_machine("web2")  # the first machine of a catch-up
        assert view.revision == revision
        with pytest.raises(InvalidCursor):
            await search(first["nextCursor"])


async def test_a_hit_whose_tool_left_the_view_is_passed_over_and_paged_past(
    tmp_path: Path,
) -> None:
    """The index may rank a tool the view no longer answers for (its machine's record read as
    retired before its tools were dropped, as heartbeats once were): that hit is left out, not
    an ``unknown_tool`` for the whole search, and the next page starts after it, so the pages
    still hold every other tool once, in rank order."""
    async with mesh_at(tmp_path) as mesh:
        services = mesh.services
        await mesh.register(
            "web0", "logs", [{**t, "name": f"rotate_{t['name']}"} for t in _tools(5)]
        )
        view = Catalog(services.registry)  # a view only this test moves
        await view.load()
        navigator = Navigator(services.registry, view, services.connections, deadline_s=5.0)
        ranked = [
            hit.address for hit in view.index.search("rotate logs", permits=bool, limit=25).hits
        ]
        machine = view._state.machines["web0"]  # retired in its record alone: the tools stay
        machine.record = replace(machine.record, retired_at=datetime.now(UTC))
        seen: list[str] = []
        cursor = None
        while True:
            answer, _meta = await navigator.search(
                ALICE, "rotate logs", limit=6, within=None, schemas=False, cursor=cursor
            )
            seen += [result["address"] for result in answer["results"]]
            cursor = answer.get("nextCursor")
            if cursor is None:
                break
    assert len(ranked) == 25 and any(a.startswith("web0/") for a in ranked[:6])
    assert seen == [address for address in ranked if not address.startswith("web0/")]


UPTIME = [{"name": "uptime", "description": "Host uptime.", "inputSchema": {"type": "object"}}]


async def _node_seat(mesh: Mesh, machine: str, *, answering: bool) -> None:
    endpoint = "http://127.0.0.1:9/mcp/node" if answering else None
    spec = AssignmentSpec(
        role="node", module="node", kind="node_seat", tools=UPTIME, endpoint=endpoint
    )
    await mesh.services.registrar.put_assignment(machine, spec)


async def test_search_and_seats_show_one_tool_on_many_holders_alike(tmp_path: Path) -> None:
    """A review: search listed a collapsed tool's holders in address order ("web-1/…" before
    "web/…") and seats in holder order, so the two showed different first sixteen; and its
    status was that of the sixteen shown, "not answering" while a seventeenth answered. Both now
    list holders in holder order, and a group answers when any holder the caller sees does."""
    async with mesh_at(tmp_path) as mesh:
        await _node_seat(mesh, "web", answering=False)
        for number in range(1, 17):
            await _node_seat(mesh, f"web-{number}", answering=False)
        await _node_seat(mesh, "zz", answering=True)  # the eighteenth holder, never shown
        async with mesh.client() as client:
            found = (await _call(client, "search", {"query": "uptime"}))["results"][0]
            walked = (await _call(client, "seats", {"address": "*/node"}))["entries"][0]
    assert found["holders"] == walked["holders"]
    assert found["holders"][:2] == ["web", "web-1"] and len(found["holders"]) == 16
    assert found["holderCount"] == walked["holderCount"] == 18
    assert found["status"] == walked["status"] == "answering"


@pytest.mark.parametrize("gone", [["a1"], ["a1", "a2"], ["a1", "a2", "a3"]])
async def test_a_group_whose_first_holder_left_the_view_is_the_others(
    tmp_path: Path, gone: list[str]
) -> None:
    """A review: the same window, for a tool on three machines whose first (its representative)
    left the view: the whole ``*/hostinfo/uptime`` result was passed over, though two holders
    remained. It is the holders left — one by its own address, none passed over."""
    uptime = {"name": "uptime", "description": "Uptime of the host.", "inputSchema": {}}
    async with mesh_at(tmp_path) as mesh:
        for machine in ("a1", "a2", "a3"):
            await mesh.register(machine, "hostinfo", [uptime])
        view = Catalog(mesh.services.registry)
        await view.load()
        navigator = Navigator(
            mesh.services.registry, view, mesh.services.connections, deadline_s=5.0
        )
        for machine in gone:
            state = view._state.machines[machine]
            state.record = replace(state.record, retired_at=datetime.now(UTC))
        answer, _meta = await navigator.search(
            ALICE, "uptime host", limit=8, within=None, schemas=False, cursor=None
        )
    left = [machine for machine in ("a1", "a2", "a3") if machine not in gone]
    shown = [(r["address"], r.get("holders"), r.get("holderCount")) for r in answer["results"]]
    if len(left) > 1:
        assert shown == [("*/hostinfo/uptime", left, len(left))]
    else:
        assert shown == [(f"{machine}/hostinfo/uptime", None, None) for machine in left]
