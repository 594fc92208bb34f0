"""The audit trail end to end (issue 28, acceptance 1), on SQLite and PostgreSQL: real navigator
and node processes, the command line as a process, the admin API over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from tests.conftest import seed_sqlite
from tests.harness import MeshHarness, free_port, mcp_client, tool_result
from tests.registry.conftest import database_url

__all__ = ["database_url"]  # the registry tests' fixture: SQLite, and the session's PostgreSQL

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("postgres")]

CANARY = "CANARY-7f3a9c"
TOOLS = [{"name": "rotate_logs", "description": "Rotate logs.", "inputSchema": {"type": "object"}}]


def meshnav(database_url: str, *arguments: str, code: int = 0) -> str:
    """``meshnav …`` on the registry directly, as an operator on its host runs it."""
    env = {**os.environ, "MESHNAV_DATABASE_URL": database_url}
    env.pop("MESHNAV_NAVIGATOR_URL", None)
    result = subprocess.run(
        [sys.executable, "-m", "meshnav", *arguments],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == code, result.stdout + result.stderr
    return result.stdout


def audit_json(database_url: str, *filters: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(
        meshnav(database_url, "audit", "--json", "--limit", "1000", *filters)
    )
    return events


def api_audit(url: str, token: str, **params: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{url}/api/v1/audit",
        params={"limit": "1000", **params},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    events: list[dict[str, Any]] = response.json()["events"]
    return events


def _one(events: list[dict[str, Any]], action: str, target: str, outcome: str) -> dict[str, Any]:
    found = [
        e for e in events if (e["action"], e["target"], e["outcome"]) == (action, target, outcome)
    ]
    assert len(found) == 1, (action, target, outcome, [e["target"] for e in events])
    return found[0]


def _grant(event: dict[str, Any]) -> tuple[int, int] | None:
    grant = event["grant"]
    return None if grant is None else (grant["id"], grant["revision"])


async def test_decisions_and_changes_are_recorded_once_with_the_deciding_grant(
    database_url: str, tmp_path: Path
) -> None:
    seed_sqlite(
        tmp_path / "db1" / "inventory.db",
        ["CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT)"],
    )
    mesh = MeshHarness(tmp_path / "run", database_url=database_url)
    export = tmp_path / "audit.jsonl"
    mesh.env["MESHNAV_AUDIT_JSONL"] = str(export)
    # no batch is written while the navigator runs: what it recorded is written when it stops
    mesh.env["MESHNAV_AUDIT_FLUSH_S"] = "3600"
    others: list[MeshHarness] = []
    try:
        admin = mesh.principal("ops", ["mesh:admin"])
        agent = mesh.principal("agent")
        with mesh.registry.transaction() as session:
            from registry import AccessStore

            store = AccessStore(session)
            allow = store.grant("agent", "db1/*/*", effect="allow")
            deny = store.grant("agent", "db1/sqlite/list_tables", effect="deny")
        port = free_port()
        mesh.start_navigator(port)
        mesh.start_node("db1", ["node", f"sqlite:{tmp_path / 'db1'}"])
        headers = {"Authorization": f"Bearer {admin}"}

        async with mcp_client(mesh.navigator_url, agent) as client:
            query = {
                "database": "inventory",
                "sql": f"SELECT '{CANARY}' AS canary",
            }
            done = await client.call_tool_mcp(
                "call", {"address": "db1/sqlite/query", "args": query}
            )
            assert not done.is_error, done
            await client.call_tool_mcp("search", {"query": f"{CANARY} tables"})
            denied = tool_result(
                await client.call_tool_mcp(
                    "call",
                    {"address": "db1/sqlite/list_tables", "args": {"database": "inventory"}},
                )
            )
            assert denied["error"] == "tool_not_granted"
            insert = {
                "address": "db1/sqlite/execute",
                "args": {
                    "database": "inventory",
                    "sql": "INSERT INTO products (name) VALUES (?)",
                    "params": [CANARY],
                },
            }
            asked = tool_result(await client.call_tool_mcp("call", insert))
            assert asked["error"] == "confirmation_required"
            confirmed = await client.call_tool_mcp("call", {**insert, "confirm": asked["confirm"]})
            assert not confirmed.is_error, confirmed
        httpx.post(
            f"{mesh.navigator_url}/api/v1/grants",
            headers=headers,
            json={"principal": "agent", "target": "web9/*/*", "effect": "allow"},
        ).raise_for_status()
        httpx.post(
            f"{mesh.navigator_url}/api/v1/assignments",
            headers=headers,
            json={"machine": "web9", "role": "logs", "tools": TOOLS},
        ).raise_for_status()
        httpx.post(
            f"{mesh.navigator_url}/api/v1/assignments/web9/logs/retire", headers=headers
        ).raise_for_status()

        assert not [e for e in audit_json(database_url) if e["action"] == "call"]
        mesh.stop_navigator()  # SIGTERM: what was recorded is written before it stops
        stopped = audit_json(database_url)
        mesh.start_navigator(port)  # and the events survive its restart
        if database_url.startswith("postgresql"):  # two navigators on one registry both record
            other = MeshHarness(tmp_path / "b", database_url=database_url)
            others.append(other)
            other.start_navigator()
            async with mcp_client(other.navigator_url, agent) as client:
                again = await client.call_tool_mcp(
                    "call", {"address": "db1/sqlite/list_databases", "args": {}}
                )
                assert not again.is_error, again
            other.stop_navigator()

        for events in (audit_json(database_url), api_audit(mesh.navigator_url, admin)):
            assert {e["id"] for e in stopped} <= {e["id"] for e in events}
            ok = _one(events, "call", "db1/sqlite/query", "ok")
            assert ok["principal"] == "agent" and _grant(ok) == (allow.id, allow.revision)
            assert ok["durationMs"] > 0 and len(ok["argsDigest"]) == 64
            refused = _one(events, "call", "db1/sqlite/list_tables", "tool_not_granted")
            assert _grant(refused) == (deny.id, deny.revision)
            for outcome in ("asked", "answered"):
                confirm = _one(events, "confirm", "db1/sqlite/execute", outcome)
                assert _grant(confirm) == (allow.id, allow.revision)
            _one(events, "call", "db1/sqlite/execute", "confirmation_required")
            _one(events, "call", "db1/sqlite/execute", "ok")
            change = _one(events, "grant.add", "allow web9/*/* for agent", "ok")
            assert change["principal"] == "ops" and change["grant"]["id"] > deny.id
            assert _one(events, "register", "web9/logs", "ok")["principal"] == "ops"
            _one(events, "retire", "web9/logs", "ok")
            direct = _one(events, "grant.add", "deny db1/sqlite/list_tables for agent", "ok")
            assert direct["instance"] == "cli" and direct["principal"].startswith("os:")
            if database_url.startswith("postgresql"):
                second = _one(events, "call", "db1/sqlite/list_databases", "ok")
                assert second["instance"] != ok["instance"]

        filtered = audit_json(database_url, "--principal", "agent", "--action", "call")
        assert {e["principal"] for e in filtered} == {"agent"}
        assert {e["action"] for e in filtered} == {"call"}
        assert audit_json(database_url, "--outcome", "tool_not_granted", "--since", "1h")
        table = meshnav(database_url, "audit", "--address", "db1/*")
        assert "db1/sqlite/query" in table and "web9" not in table

        mesh.stop_navigator()
        exported = export.read_text()
        assert '"action":"call"' in exported and '"target":"web9/logs"' in exported
        with mesh.registry.engine.connect() as connection:
            dump = repr(connection.execute(text("SELECT * FROM audit_events")).all())
        for where in (dump, exported, json.dumps(audit_json(database_url))):
            assert CANARY not in where

        verified = json.loads(meshnav(database_url, "audit", "verify", "--json"))
        assert verified["ok"] and verified["problems"] == []
        assert len(verified["instances"]) == (3 if database_url.startswith("postgresql") else 2)
        with mesh.registry.engine.begin() as connection:
            connection.execute(
                text("UPDATE audit_events SET outcome = 'ok' WHERE outcome = 'tool_not_granted'")
            )
        broken = meshnav(database_url, "audit", "verify", "--json", code=1)
        assert json.loads(broken)["problems"]
    finally:
        for other in others:
            other.close()
        mesh.close()
