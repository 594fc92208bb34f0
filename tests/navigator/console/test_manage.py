"""The console manages the mesh (issue 38): each of an operator's changes from
``/console/manage``, made through the same operation as the admin API, audited as the viewer's own,
asked for a yes when destructive — and refused to a viewer without ``mesh:admin`` and to a
request from another site, which change nothing. Trying a tool calls through the walker."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from navigator.access.grants import Caller
from navigator.catalog.registrar import AssignmentSpec
from registry import AccessStore, CatalogStore
from registry.audit import AuditFilter, AuditStore
from registry.models import Assignment
from tests.navigator.console.test_console import Console, console_app

MANAGE = "/console/manage"
SAME_SITE = {"origin": "http://testserver", "sec-fetch-site": "same-origin"}
CROSS_SITE = {"origin": "https://evil.example", "sec-fetch-site": "cross-site"}
WRITE_TOOL = {
    "name": "execute",
    "description": "Runs a statement that changes things.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "sql": {"type": "string"},
            "mode": {"enum": ["fast", "safe"]},
            "dry": {"type": "boolean"},
            "params": {"type": "array"},
        },
        "required": ["sql"],
    },
    "annotations": {"destructiveHint": True},
}

#: Every change the page offers, with a form that makes it.
CHANGES: dict[str, dict[str, str]] = {
    "principal-add": {"name": "carol", "scopes": "ops", "expiresDays": "30"},
    "principal-rotate": {"name": "nobody", "expiresDays": "7"},
    "principal-quota": {"name": "nobody", "ratePerMinute": "60"},
    "principal-revoke": {"name": "nobody"},
    "grant-add": {"principal": "nobody", "target": "db1/*/*", "effect": "deny"},
    "grant-revoke": {"grant": "1"},
    "seat-place": {"seat": "cache", "machine": "db2", "role": "cache"},
    "seat-move": {"seat": "notes", "machine": "db2", "role": "notes"},
    "seat-remove": {"seat": "notes"},
    "tool-mark": {"address": "db1/sqlite/query", "confirmation": "required"},
    "assignment-refresh": {"machine": "db1", "role": "sqlite"},
    "assignment-retire": {"machine": "db1", "role": "sqlite"},
    "machine-retire": {"machine": "db2"},
}
DESTRUCTIVE = {
    "principal-rotate",
    "principal-revoke",
    "grant-revoke",
    "seat-move",
    "seat-remove",
    "assignment-retire",
    "machine-retire",
}


async def _state(console: Console) -> Any:
    def read(session: Any) -> Any:
        access = AccessStore(session)
        return (
            [p.as_json() for p in access.principals()],
            [g.as_json() for g in access.grants(None)],
            CatalogStore(session).seats(),
            sorted(
                (a.role, a.retired_at is None)
                for a in session.execute(select(Assignment)).scalars()
            ),
        )

    return await console.services.read(read)


async def _events(console: Console, action: str) -> list[Any]:
    return await console.services.read(
        lambda session: AuditStore(session).events(AuditFilter(action=action))
    )


async def _post(client: httpx.AsyncClient, action: str, headers: dict[str, str], **extra: str):
    return await client.post(
        MANAGE, data={"action": action, **CHANGES[action], **extra}, headers=headers
    )


async def test_an_operator_makes_each_change_audited_as_their_own(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        page = await client.get(MANAGE)
        assert page.status_code == 200
        for action in CHANGES.keys() - {"assignment-refresh"}:  # shown where there is an endpoint
            assert f'data-action="{action}"' in page.text, action
        for action in CHANGES:
            if action in DESTRUCTIVE:  # asked first; nothing changes until the yes
                before = await _state(console)
                asked = await _post(client, action, SAME_SITE)
                assert asked.status_code == 200 and 'role="alertdialog"' in asked.text, action
                assert 'name="confirmed" value="yes"' in asked.text
                assert await _state(console) == before, action
            done = await _post(client, action, SAME_SITE, confirmed="yes")
            expected = 400 if action == "assignment-refresh" else 200  # db1/sqlite: no endpoint
            assert done.status_code == expected, (action, done.text[-600:])
            assert 'id="outcome"' in done.text
        principals, grants, seats, assignments = await _state(console)
        names = {p["name"]: p for p in principals}
        assert "carol" in names and names["nobody"]["status"] != "active"
        assert grants and all(g["id"] != 1 for g in grants)
        assert seats == {"cache": ("db2", "cache")}  # notes moved, then removed
        assert ("sqlite", False) in assignments
        for action in ("principal.add", "seat.remove", "seat.place", "tool.mark", "retire"):
            events = await _events(console, action)
            assert any(e.entry.principal == "root" for e in events), action  # not the fixture's


async def test_the_new_token_is_shown_once_and_signs_in(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        added = await _post(client, "principal-add", SAME_SITE)
        token = re.search(r'id="new-token">([^<]+)<', added.text)
        assert token is not None
        assert token.group(1) not in (await client.get(MANAGE)).text
    async with console.client() as other:
        signed = await other.post("/console/sign-in", data={"token": token.group(1)})
        assert signed.status_code == 303


@pytest.mark.parametrize("action", sorted(CHANGES))
async def test_a_viewer_without_mesh_admin_changes_nothing(tmp_path: Path, action: str) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        before = await _state(console)
        assert (await client.get(MANAGE)).status_code == 403
        refused = await _post(client, action, SAME_SITE, confirmed="yes")
        assert refused.status_code == 403
        assert await _state(console) == before


@pytest.mark.parametrize("action", sorted(CHANGES))
async def test_a_cross_site_post_changes_nothing(tmp_path: Path, action: str) -> None:
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        before = await _state(console)
        for headers in (CROSS_SITE, {"origin": "null"}):
            refused = await _post(client, action, headers, confirmed="yes")
            assert refused.status_code == 403, action
        assert await _state(console) == before


async def test_why_names_the_deciding_row(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("root") as client:
        answer = await client.get(
            MANAGE, params={"principal": "alice", "address": "db1/sqlite/query"}
        )
        assert answer.status_code == 200
        verdict = re.search(r'id="verdict">(.*?)</pre>', answer.text, re.S)
        assert verdict is not None and "allow" in verdict.group(1) and "*/*/*" in verdict.group(1)


async def test_the_api_removes_a_seat_with_the_same_operation(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        headers = {"authorization": f"Bearer {console.tokens['root']}"}
        removed = await client.delete("/api/v1/seats/notes", headers=headers)
        assert removed.status_code == 200, removed.text
        assert removed.json() == {"removed": "mesh/notes"}
        assert (await client.delete("/api/v1/seats/notes", headers=headers)).status_code == 404
        listed = await client.get("/api/v1/seats", headers=headers)
        assert "notes" not in listed.json()
        alice = {"authorization": f"Bearer {console.tokens['alice']}"}
        assert (await client.delete("/api/v1/seats/cache", headers=alice)).status_code == 403
        [event] = await _events(console, "seat.remove")
        assert event.entry.principal == "root" and event.entry.target == "mesh/notes"


async def test_trying_a_tool_calls_through_the_walker(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.signed_in("alice") as client:
        await console.register(
            "db1",
            AssignmentSpec(
                role="pg", module="postgres", tools=[WRITE_TOOL], endpoint="http://127.0.0.1:9/mcp"
            ),
        )
        form = await client.get("/console/try/db1/pg/execute")
        assert form.status_code == 200
        assert 'name="arg.sql"' in form.text and 'name="arg.mode"' in form.text
        assert 'name="arg.dry"' in form.text and 'name="arg.params"' not in form.text
        fields = {"arg.sql": "delete from t", "arg.mode": '"safe"', "json": '{"params": [1]}'}
        asked = await client.post("/console/try/db1/pg/execute", data=fields, headers=SAME_SITE)
        assert (
            'role="alertdialog"' in asked.text and "alice asks to run db1/pg/execute" in asked.text
        )
        # the yes: the walker goes on to the node, which this in-process mesh does not run
        answered = await client.post(
            "/console/try/db1/pg/execute", data={**fields, "confirmed": "yes"}, headers=SAME_SITE
        )
        assert 'id="answer"' in answered.text and "node_unavailable" in answered.text
        bad = await client.post(
            "/console/try/db1/pg/execute", data={"json": "{not json"}, headers=SAME_SITE
        )
        assert "breaks at line 1, column 2" in bad.text
        cross = await client.post("/console/try/db1/pg/execute", data=fields, headers=CROSS_SITE)
        assert cross.status_code == 403
    async with console_app(tmp_path / "2") as console, console.signed_in("root") as client:
        denied = await client.get("/console/try/db2/node/uptime")  # root holds db1 only
        assert denied.status_code == 403
        refused = await client.post(
            "/console/try/db2/node/uptime", data={"json": "{}"}, headers=SAME_SITE
        )
        assert refused.status_code == 403


async def test_a_mark_is_required_and_the_api_keeps_always_as_its_alias(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console, console.client() as client:
        headers = {"authorization": f"Bearer {console.tokens['root']}"}
        route = "/api/v1/tools/db1/sqlite/query/confirmation"
        for mark in ("required", "always"):
            marked = await client.put(route, json={"confirmation": mark}, headers=headers)
            assert marked.status_code == 200 and marked.json()["confirmation"] == "required"
            root = await console.services.navigator.describe(
                Caller("root", frozenset({"mesh:admin"})), "db1/sqlite/query"
            )
            assert root["confirmation"] == "required"
        bad = await client.put(route, json={"confirmation": "sometimes"}, headers=headers)
        assert bad.status_code == 400
