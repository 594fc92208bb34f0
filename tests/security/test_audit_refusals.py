"""Refused requests write nothing of their choosing into the audit trail, and a flood of them
costs a bounded number of rows (issue 35, items 3 and 4; ADR 0045).

The refused request's decoded path was stored as the target (``/api/v1/x%1b[2J…``): escape
sequences and fake rows reached ``meshnav audit``. And each refusal was one row (~800 B): 370 a
second from one client is ~26 GB a day.
"""

from __future__ import annotations

from pathlib import Path

from navigator.access.refusals import ROUTE_NAMES, Refusals, route_name
from navigator.api.routes import ROUTES
from registry import Registry
from registry.audit import AuditFilter, AuditRecord, AuditStore
from tests.navigator.console.test_console import console_app


def _refusals(registry: Registry) -> list[AuditRecord]:
    with registry.read_transaction() as session:
        return AuditStore(session).events(AuditFilter(action="sign-in", limit=1000))


async def test_a_refused_request_records_its_routes_name_never_its_path(tmp_path: Path) -> None:
    async with console_app(tmp_path) as console:
        async with console.client() as client:
            await client.get("/api/v1/x%1b[2J%0a(token deadbeef0000)")
            await client.get("/api/v1/machines/%1b]0;pwned%07/retire")
            await client.post("/mcp/%1b[31mfake", json={})
            await client.get("/elsewhere%1b[2J", headers={"Authorization": "Bearer nope"})
        await console.services.audit.flush(refusals=True)
        targets = sorted(e.entry.target for e in _refusals(console.services.registry))
    assert targets == [
        "(other) from 127.0.0.1: token " + targets[0].rsplit(" ", 1)[-1],
        "/api/v1/(unknown) from 127.0.0.1: no token",
        "/api/v1/machines from 127.0.0.1: no token",
        "/mcp from 127.0.0.1: no token",
    ]
    assert all(t.isprintable() and "deadbeef" not in t and "pwned" not in t for t in targets)


def test_every_api_route_has_a_name_of_its_own() -> None:
    names = {route_name("/api/v1" + path.replace("{", "").replace("}", "")) for path, *_ in ROUTES}
    assert names <= ROUTE_NAMES and "/api/v1/(unknown)" not in names


async def test_refusals_of_one_route_reason_and_address_are_one_event_with_a_count(
    tmp_path: Path,
) -> None:
    async with console_app(tmp_path) as console:
        async with console.client() as client:
            for _ in range(40):
                await client.get("/api/v1/mesh")
            for _ in range(3):
                await client.get("/api/v1/mesh", headers={"Authorization": "Bearer nope"})
        await console.services.audit.flush()  # the window has not ended: nothing yet
        assert _refusals(console.services.registry) == []
        await console.services.audit.flush(refusals=True)
        found = {e.entry.target: e.entry.count for e in _refusals(console.services.registry)}
    shown = next(t for t in found if "token" in t).rsplit(" ", 1)[-1]
    assert found == {
        "/api/v1/mesh from 127.0.0.1: no token": 40,
        f"/api/v1/mesh from 127.0.0.1: token {shown}": 3,
    }


def test_refusal_events_are_bounded_a_minute_whatever_the_addresses() -> None:
    now = [0.0]
    refusals = Refusals(per_minute=5, window_s=10.0, clock=lambda: now[0])
    for n in range(1000):  # a thousand addresses in a second
        now[0] = n / 1000
        refusals.refuse("/mcp", f"10.0.{n // 256}.{n % 256}", None)
    assert refusals.due() == []  # their window has not ended
    now[0] = 10.5
    first = refusals.due()
    assert len(first) == 5 and sum(e.count or 0 for e in first) == 1000
    assert [e.target for e in first][-1] == "* from *: over the bound"
    assert first[-1].count == 996
    for n in range(1000):  # the same minute: only the event past the bound is counted on
        now[0] = 11 + n / 1000
        refusals.refuse("/mcp", f"10.1.{n // 256}.{n % 256}", None)
    now[0] = 30.0
    assert refusals.due() == []  # no room in this minute for the event past the bound
    now[0] = 70.0
    (late,) = refusals.due()
    assert late.target == "* from *: over the bound" and late.count == 1000


def test_refusals_other_than_sign_in_are_requests_with_what_is_known_of_the_caller() -> None:
    """A request refused for an outage or a stop was no sign-in (issue 37, item 6)."""
    now = [0.0]
    refusals = Refusals(per_minute=10, window_s=1.0, clock=lambda: now[0])
    refusals.refuse("/mcp", "127.0.0.1", "3fa2c0ffee12", "registry_unavailable")
    refusals.refuse("/mcp", "127.0.0.1", "3fa2c0ffee12", "registry_unavailable")
    refusals.refuse("/api/v1/nodes/x", "127.0.0.1", None)
    for principal in ("alice", "bob", "alice"):
        refusals.refuse(
            "/mcp",
            "127.0.0.1",
            None,
            "navigator_stopping",
            principal=principal,
            reason="tools/call",
        )
    now[0] = 2.0
    events = sorted((e.action, e.principal, e.target, e.outcome, e.count) for e in refusals.due())
    assert events == [
        ("request", "", "/mcp from 127.0.0.1: token 3fa2c0ffee12", "registry_unavailable", 2),
        ("request", "alice", "/mcp from 127.0.0.1: tools/call", "navigator_stopping", 2),
        ("request", "bob", "/mcp from 127.0.0.1: tools/call", "navigator_stopping", 1),
        ("sign-in", "", "/api/v1/nodes from 127.0.0.1: no token", "unauthenticated", 1),
    ]
