"""Quota changes leave an audit event (issue 35, item 16), and an audit filter reaching past what
a time can hold is a §9 400 naming the accepted range, not a 500 (item 19; ADR 0045)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registry import AccessStore, Quota, Registry
from registry.audit import AuditFilter, AuditStore
from tests.navigator.console.test_console import console_app

pytestmark = pytest.mark.xdist_group("postgres")


def _quota_events(registry: Registry) -> list[tuple[str, str, str]]:
    with registry.read_transaction() as session:
        found = AuditStore(session).events(AuditFilter(action="principal.quota"))
    return [(e.instance, e.entry.principal[:3], e.entry.target) for e in reversed(found)]


def test_a_quota_set_and_cleared_is_recorded(registry: Registry) -> None:
    with registry.transaction() as session:
        store = AccessStore(session)
        store.add_principal("alice", scopes=[], token_hash="h" * 64)
        store.set_quota("alice", Quota(5, 2))
        store.set_quota("alice", Quota())
    assert _quota_events(registry) == [
        ("cli", "os:", "alice: 5/min, 2 at once"),
        ("cli", "os:", "alice: -/min, - at once"),
    ]


async def test_a_quota_set_through_the_api_is_recorded_as_its_caller(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        root = {"Authorization": f"Bearer {console.tokens['root']}"}
        async with console.client() as client:
            answer = await client.put(
                "/api/v1/principals/alice/quota", json={"ratePerMinute": 60}, headers=root
            )
            assert answer.status_code == 200
        events = _quota_events(console.services.registry)
    assert [(e[1], e[2]) for e in events] == [("roo", "alice: 60/min, - at once")]


def test_a_quota_set_on_the_command_lines_direct_path_is_recorded(invoke: Any) -> None:
    invoke("principal", "add", "alice")
    invoke("principal", "quota", "alice", "--rate", "10/min")
    events = invoke("audit", "--action", "principal.quota", "--json")
    assert [(e["instance"], e["target"]) for e in events] == [("cli", "alice: 10/min, - at once")]


async def test_a_since_past_the_accepted_range_is_a_400_naming_it(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        root = {"Authorization": f"Bearer {console.tokens['root']}"}
        async with console.client() as client:
            for since in ("999999d", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"):
                answer = await client.get("/api/v1/audit", params={"since": since}, headers=root)
                assert answer.status_code == 400, since
                body = answer.json()
                assert body["error"] == "invalid_arguments" and body["pointer"] == "/since"
                assert "36500 days" in body["message"] and since not in body["message"]
            within = await client.get("/api/v1/audit", params={"since": "36500d"}, headers=root)
            assert within.status_code == 200


def test_the_command_line_names_the_range_too(invoke: Any) -> None:
    result = invoke("audit", "--since", "999999d", code=1)
    assert "36500 days" in result.output and "Traceback" not in result.output
